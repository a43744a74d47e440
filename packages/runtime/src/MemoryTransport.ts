/**
 * The in-memory layer of `Transport`: the embedded default, and the transport every actor test
 * runs on besides NATS. It follows NATS where the runtime can tell the difference: the same
 * subjects and `*` / `>` wildcards, delivery after the publisher returns (never inside its call),
 * request/reply, one member per queue group for each message (chosen at random, as the NATS
 * server does), `NoResponders` at once when nothing listens, and a `max_payload` bound (default
 * 1 MiB, the nats-server default) counted the same way (data plus encoded headers).
 *
 * Closing the layer's scope closes the transport: subscriptions end `Closed`, pending requests
 * fail `Closed`, and later calls fail `Closed`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Subject from "./Subject.js"
import * as Transport from "./Transport.js"
import { TransportError } from "./TransportError.js"

/** @since 0.1.0 @category models */
export interface MemoryTransportOptions {
  /** The largest message in bytes (data plus headers); default 1 048 576. */
  readonly maxPayload?: number | undefined
}

/** @since 0.1.0 @category constants */
export const defaultMaxPayload = 1_048_576

interface Member {
  readonly pattern: string
  readonly tokens: ReadonlyArray<string> | undefined
  readonly queue: string | undefined
  readonly sink: Transport.DriverSink
  active: boolean
}

const noHeaders: Transport.Headers = Object.freeze({})

/** Receivers get their own headers, as over a wire. */
const copy = (headers: Transport.Headers | undefined): Transport.Headers => headers === undefined ? noHeaders : { ...headers }

const closedError = (subject: string) => new TransportError({ reason: "Closed", subject, detail: "the in-memory transport is closed" })

const matchTokens = (pattern: ReadonlyArray<string>, subject: ReadonlyArray<string>): boolean => {
  for (let i = 0; i < pattern.length; i++) {
    const token = pattern[i]!
    if (token === ">") return subject.length > i
    if (i >= subject.length) return false
    if (token !== "*" && token !== subject[i]) return false
  }
  return pattern.length === subject.length
}

/**
 * The driver: literal subscriptions are found by a map lookup, wildcard ones by a scan.
 *
 * @since 0.1.0
 * @category constructors
 */
export const driver = (options: MemoryTransportOptions = {}): Transport.Driver & { readonly close: () => void } => {
  const maxPayload = options.maxPayload ?? defaultMaxPayload
  const literal = new Map<string, Set<Member>>()
  const wildcard = new Set<Member>()
  const pendingRequests = new Set<() => void>()
  let closed = false

  const membersOf = (subject: string): Array<Member> => {
    const found: Array<Member> = []
    const exact = literal.get(subject)
    if (exact !== undefined) for (const member of exact) found.push(member)
    if (wildcard.size > 0) {
      const tokens = subject.split(".")
      for (const member of wildcard) if (matchTokens(member.tokens!, tokens)) found.push(member)
    }
    return found
  }

  /** Picks the receivers of one message and delivers to them after the caller returns; answers how many. */
  const route = (message: Transport.DriverMessage): number => {
    const members = membersOf(message.subject)
    if (members.length === 0) return 0
    const receivers: Array<Member> = []
    let groups: Map<string, Array<Member>> | undefined
    for (const member of members) {
      if (member.queue === undefined) receivers.push(member)
      else {
        groups ??= new Map()
        const group = groups.get(member.queue)
        if (group === undefined) groups.set(member.queue, [member])
        else group.push(member)
      }
    }
    if (groups !== undefined) for (const group of groups.values()) receivers.push(group[Math.floor(Math.random() * group.length)]!)
    queueMicrotask(() => {
      for (const receiver of receivers) if (receiver.active) receiver.sink.deliver(message)
    })
    return receivers.length
  }

  const publish = (subject: string, data: Uint8Array, headers: Transport.Headers | undefined): void => {
    if (closed) throw closedError(subject)
    route({ subject, data: data.slice(), headers: copy(headers), respond: undefined })
  }

  const request = (subject: string, data: Uint8Array, headers: Transport.Headers | undefined, timeoutMs: number) => {
    if (closed) return Promise.reject(closedError(subject))
    return new Promise<Transport.Message>((resolve, reject) => {
      let settled = false
      const settle = () => {
        settled = true
        clearTimeout(timer)
        pendingRequests.delete(failClosed)
      }
      const fail = (error: TransportError) => {
        if (settled) return
        settle()
        reject(error)
      }
      const failClosed = () => fail(closedError(subject))
      const timer = setTimeout(
        () => fail(new TransportError({ reason: "Timeout", subject, detail: `no reply within ${timeoutMs} ms` })),
        timeoutMs
      )
      pendingRequests.add(failClosed)
      const respond = (reply: Uint8Array, replyHeaders: Transport.Headers | undefined) => {
        if (settled) return
        settle()
        resolve({ subject: `_INBOX.${subject}`, data: reply.slice(), headers: copy(replyHeaders), dropped: 0 })
      }
      if (route({ subject, data: data.slice(), headers: copy(headers), respond }) === 0) {
        fail(new TransportError({ reason: "NoResponders", subject, detail: "no subscription matches the subject" }))
      }
    })
  }

  const subscribe = (pattern: string, queue: string | undefined, sink: Transport.DriverSink): Transport.DriverSubscription => {
    if (closed) throw closedError(pattern)
    const isLiteral = Subject.isLiteral(pattern)
    const member: Member = { pattern, tokens: isLiteral ? undefined : pattern.split("."), queue, sink, active: true }
    if (isLiteral) {
      const members = literal.get(pattern)
      if (members === undefined) literal.set(pattern, new Set([member]))
      else members.add(member)
    } else {
      wildcard.add(member)
    }
    return {
      close: () => {
        const members = literal.get(pattern)
        members?.delete(member)
        if (members?.size === 0) literal.delete(pattern)
        wildcard.delete(member)
        // As a drain does: nothing new is routed here, what was routed before is still delivered
        // (its microtask was queued before this one).
        return new Promise<void>((resolve) =>
          queueMicrotask(() => {
            member.active = false
            resolve()
          })
        )
      }
    }
  }

  const close = (): void => {
    if (closed) return
    closed = true
    const members = [...wildcard, ...[...literal.values()].flatMap((set) => [...set])]
    literal.clear()
    wildcard.clear()
    for (const member of members) {
      member.active = false
      member.sink.end(closedError(member.pattern))
    }
    for (const failClosed of [...pendingRequests]) failClosed()
  }

  return { maxPayload: () => maxPayload, publish, request, subscribe, flush: () => Promise.resolve(), close }
}

/**
 * A transport in this process, closed when the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: MemoryTransportOptions = {}): Effect.Effect<Transport.TransportShape, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(Effect.sync(() => driver(options)), (memory) => Effect.sync(memory.close)),
    Transport.fromDriver
  )

/**
 * The in-memory `Transport`, fresh for each build of the layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: MemoryTransportOptions = {}): Layer.Layer<Transport.Transport> =>
  Layer.scoped(Transport.Transport, make(options))
