/**
 * The routing table of the in-memory transport: who listens to which subject, and who receives a
 * message. Literal subscriptions are found by a map lookup, wildcard ones (`*`, `>`) by a scan;
 * of each queue group one member receives the message, chosen at random (as the NATS server
 * does). Delivery happens after the sender returns (a microtask), never inside its call, and each
 * receiver gets its own copy of the headers, as over a wire.
 */
import * as Subject from "../Subject.js"
import type { DriverMessage, DriverSink, Headers } from "../Transport.js"
import { TransportError } from "../TransportError.js"

interface Member {
  readonly pattern: string
  readonly tokens: ReadonlyArray<string> | undefined
  readonly queue: string | undefined
  readonly sink: DriverSink
  active: boolean
}

const noHeaders: Headers = Object.freeze({})

/** Receivers get their own headers, as over a wire. */
export const copy = (headers: Headers | undefined): Headers => headers === undefined ? noHeaders : { ...headers }

export const closedError = (subject: string) => new TransportError({ reason: "Closed", subject, detail: "the in-memory transport is closed" })

/** One member of each queue group, and every member outside a group. */
const receiversOf = (members: ReadonlyArray<Member>): Array<Member> => {
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
  return receivers
}

export class MemoryRoutes {
  private readonly literal = new Map<string, Set<Member>>()
  private readonly wildcard = new Set<Member>()

  private membersOf(subject: string): Array<Member> {
    const found: Array<Member> = []
    const exact = this.literal.get(subject)
    if (exact !== undefined) for (const member of exact) found.push(member)
    if (this.wildcard.size > 0) {
      const tokens = subject.split(".")
      for (const member of this.wildcard) if (Subject.matchesTokens(member.tokens!, tokens)) found.push(member)
    }
    return found
  }

  /** Picks the receivers of one message and delivers to them after the caller returns; answers how many. */
  route(message: DriverMessage): number {
    const members = this.membersOf(message.subject)
    if (members.length === 0) return 0
    const receivers = receiversOf(members)
    queueMicrotask(() => {
      for (const receiver of receivers) if (receiver.active) receiver.sink.deliver(message)
    })
    return receivers.length
  }

  /** Adds a subscription; the function it answers removes it as a drain does. */
  add(pattern: string, queue: string | undefined, sink: DriverSink): () => Promise<void> {
    const isLiteral = Subject.isLiteral(pattern)
    const member: Member = { pattern, tokens: isLiteral ? undefined : pattern.split("."), queue, sink, active: true }
    if (isLiteral) {
      const members = this.literal.get(pattern)
      if (members === undefined) this.literal.set(pattern, new Set([member]))
      else members.add(member)
    } else {
      this.wildcard.add(member)
    }
    return () => {
      const members = this.literal.get(pattern)
      members?.delete(member)
      if (members?.size === 0) this.literal.delete(pattern)
      this.wildcard.delete(member)
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

  /** Removes every subscription at once, ending each `Closed`. */
  closeAll(): void {
    const members = [...this.wildcard, ...[...this.literal.values()].flatMap((set) => [...set])]
    this.literal.clear()
    this.wildcard.clear()
    for (const member of members) {
      member.active = false
      member.sink.end(closedError(member.pattern))
    }
  }
}
