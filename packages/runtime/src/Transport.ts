/**
 * How runtime actors talk: publish, request/reply with a timeout and a signal, serving a subject
 * (optionally in a queue group) under a concurrency bound, and subscribing to a pattern as a
 * bounded `Stream`. Two layers implement it, with the same subjects, wildcards and errors: the
 * in-memory one (`MemoryTransport`, the embedded default) and NATS (`@jitbox/nats`).
 *
 * The shape mixes styles on purpose. `publish` and `request` run once per tool call, so they are a
 * plain function and a Promise (one `Effect.runPromise` costs more than a whole in-process
 * dispatch), and a `serve` handler is a Promise function for the same reason; the module's
 * `publish` / `request` give the same as Effects, where interrupting the fiber cancels the
 * request. `serve` and `subscribe` hold resources, so they are scoped Effects: the responder or
 * subscription lives until its scope closes, and when the Effect succeeds the server already
 * knows about it (a request sent next finds it).
 *
 * A layer only supplies a `Driver` (a few raw operations on its medium); `fromDriver` builds the service
 * from it, so the semantics above (bounds, checks, status replies, cancellation) are written once.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import { DeliveryBuffer } from "./internal/deliveryBuffer.js"
import { Responder } from "./internal/responder.js"
import * as Status from "./internal/status.js"
import * as Subject from "./Subject.js"
import { isTransportError, TransportError } from "./TransportError.js"

/** Bytes, or a string sent as UTF-8. @since 0.1.0 @category models */
export type Payload = string | Uint8Array

/** Message headers: one value per name. @since 0.1.0 @category models */
export type Headers = Readonly<Record<string, string>>

/**
 * The most headers one message may carry, and their most encoded bytes (names and values): more is
 * refused `InvalidArgument` before the wire, and a layer reading a message from elsewhere keeps
 * at most `count` of its headers.
 *
 * @since 0.1.0
 * @category constants
 */
export const headerLimits: { readonly count: number; readonly bytes: number } = Status.headerLimits

/** A message received: a reply, or one read from a subscription. @since 0.1.0 @category models */
export interface Message {
  readonly subject: string
  /** Treat as read-only: the in-memory layer hands the same bytes to every subscriber. */
  readonly data: Uint8Array
  readonly headers: Headers
  /** How many messages the subscription dropped just before this one because its reader fell behind; 0 for a reply. */
  readonly dropped: number
}

/** What a `serve` handler receives. @since 0.1.0 @category models */
export interface ServeRequest {
  readonly subject: string
  readonly data: Uint8Array
  readonly headers: Headers
  /** Aborts when the responder closes and its grace period has passed. */
  readonly signal: AbortSignal
}

/** A handler's answer: a payload, or a payload with headers. @since 0.1.0 @category models */
export type Reply = Payload | { readonly payload: Payload; readonly headers?: Headers | undefined }

/**
 * Answers one request. A thrown error or a rejection is answered `ResponderFailed`; protocol
 * errors belong in the reply itself.
 *
 * @since 0.1.0
 * @category models
 */
export type Handler = (request: ServeRequest) => Reply | PromiseLike<Reply>

/** @since 0.1.0 @category models */
export interface RequestOptions {
  /** How long to wait for the reply, in milliseconds (> 0); then the request fails `Timeout`. */
  readonly timeoutMs: number
  /** Aborting it fails the request `Cancelled` at once. */
  readonly signal?: AbortSignal | undefined
  readonly headers?: Headers | undefined
}

/** @since 0.1.0 @category models */
export interface ServeOptions {
  /** A queue group: each message goes to one member of the group (the others of the group do not see it). */
  readonly queue?: string | undefined
  /** How many handlers of this responder run at once (≥ 1). */
  readonly concurrency: number
  /** How many requests may wait for a free slot before new ones are answered `Busy` (default 1024). */
  readonly backlog?: number | undefined
  /** How long closing waits for requests taken before answering them `Closed` (default 10 000 ms). */
  readonly graceMs?: number | undefined
}

/** @since 0.1.0 @category models */
export interface SubscribeOptions {
  /** Messages kept for a reader that falls behind (default 1024); beyond that the oldest are dropped and counted. */
  readonly bufferSize?: number | undefined
}

/** @since 0.1.0 @category models */
export interface TransportShape {
  /** The largest message (data plus headers, in bytes) the medium carries; larger ones fail `PayloadTooLarge`. */
  readonly maxPayload: () => number
  /** Sends one message to whoever listens; throws `TransportError` (`PayloadTooLarge`, `Closed`, `InvalidArgument`). */
  readonly publish: (subject: Subject.Subject, payload: Payload, headers?: Headers) => void
  /**
   * Sends one request and resolves with the first reply. Rejects with `TransportError`:
   * `NoResponders` at once when nobody serves the subject, `Timeout` after `timeoutMs`,
   * `Cancelled` when the signal aborts, or the reason a responder answered with (`Busy`,
   * `ResponderFailed`, `Closed`, `PayloadTooLarge`). It never waits longer than `timeoutMs`.
   */
  readonly request: (subject: Subject.Subject, payload: Payload, options: RequestOptions) => Promise<Message>
  /**
   * Serves `pattern` until the scope closes; closing drains (see `ServeOptions.graceMs`). Fails
   * with the server's refusal (`PermissionDenied`) when it refuses the subscription.
   */
  readonly serve: (pattern: Subject.Pattern, options: ServeOptions, handler: Handler) => Effect.Effect<void, TransportError, Scope.Scope>
  /**
   * Subscribes to `pattern` until the scope closes and gives its messages as a Stream, bounded by
   * `bufferSize` (sliding: a slow reader loses the oldest, counted in `Message.dropped`). The
   * stream ends when the scope closes and fails `Closed` when the transport closes under it.
   * Fails with the server's refusal (`PermissionDenied`) when it refuses the subscription.
   */
  readonly subscribe: (
    pattern: Subject.Pattern,
    options?: SubscribeOptions
  ) => Effect.Effect<Stream.Stream<Message, TransportError>, TransportError, Scope.Scope>
}

/** @since 0.1.0 @category tags */
export class Transport extends Context.Tag("@jitbox/runtime/Transport")<Transport, TransportShape>() {}

/** A message as a driver delivers it; `respond` is there when the sender waits for a reply. @since 0.1.0 @category drivers */
export interface DriverMessage {
  readonly subject: string
  readonly data: Uint8Array
  readonly headers: Headers
  readonly respond: ((data: Uint8Array, headers: Headers | undefined) => void) | undefined
}

/** @since 0.1.0 @category drivers */
export interface DriverSink {
  /** Called once per message, never concurrently; must not block. */
  readonly deliver: (message: DriverMessage) => void
  /** The subscription ended without being closed by its owner (`Closed`, `PermissionDenied`). */
  readonly end: (error: TransportError) => void
}

/** @since 0.1.0 @category drivers */
export interface DriverSubscription {
  /** Stops the subscription; messages already received are still delivered before it resolves. Never rejects. */
  readonly close: () => Promise<void>
}

/**
 * The raw operations a medium supplies. Arguments arrive checked (subjects, sizes, headers);
 * failures are `TransportError`s (thrown, or rejected for `request` and `flush`).
 *
 * @since 0.1.0
 * @category drivers
 */
export interface Driver {
  readonly maxPayload: () => number
  readonly publish: (subject: string, data: Uint8Array, headers: Headers | undefined) => void
  /** Resolves with the first reply; rejects `NoResponders`, `Timeout` (after `timeoutMs`) or `Closed`. */
  readonly request: (subject: string, data: Uint8Array, headers: Headers | undefined, timeoutMs: number) => Promise<Message>
  readonly subscribe: (pattern: string, queue: string | undefined, sink: DriverSink) => DriverSubscription
  /** Resolves once the server has seen every subscription made so far. */
  readonly flush: () => Promise<void>
}

/** @since 0.1.0 @category constants */
export const defaults = {
  backlog: 1024,
  graceMs: 10_000,
  bufferSize: 1024,
  /** How long `serve` / `subscribe` wait for the server to confirm the subscription before going on without it. */
  flushTimeoutMs: 5_000
} as const

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** The message's data as UTF-8 text. @since 0.1.0 @category accessors */
export const text = (message: { readonly data: Uint8Array }): string => decoder.decode(message.data)

const invalid = (subject: string, detail: string) => new TransportError({ reason: "InvalidArgument", subject, detail })

const positiveInteger = (value: number | undefined, fallback: number): number | undefined =>
  value === undefined ? fallback : Number.isSafeInteger(value) && value >= 1 ? value : undefined

const flushBounded = (driver: Driver): Effect.Effect<void> =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      // Best effort: a subscription made while disconnected still reaches the server on reconnect.
      const timer = setTimeout(resolve, defaults.flushTimeoutMs)
      driver.flush().then(() => {
        clearTimeout(timer)
        resolve()
      }, () => {
        clearTimeout(timer)
        resolve()
      })
    })
  )

/**
 * Builds the service over a driver: checks arguments, bounds payloads before the wire, turns
 * status replies and aborted signals into `TransportError`s, runs responders and buffers.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromDriver = (driver: Driver): TransportShape => {
  const encode = (payload: Payload): Uint8Array => typeof payload === "string" ? encoder.encode(payload) : payload

  /** The encoded data of a message to send on the right, or on the left the error that refuses it. */
  const outgoing = (subject: string, payload: Payload, headers: Headers | undefined): Either.Either<Uint8Array, TransportError> => {
    if (!Subject.isLiteral(subject)) return Either.left(invalid(subject, "not a literal subject: non-empty tokens joined by \".\", no wildcards or whitespace"))
    if (typeof payload !== "string" && !(payload instanceof Uint8Array)) return Either.left(invalid(subject, "the payload is neither a string nor a Uint8Array"))
    if (headers !== undefined) {
      const bad = Status.checkHeaders(headers)
      if (bad !== undefined) return Either.left(invalid(subject, `the message has ${bad}`))
    }
    const data = encode(payload)
    const size = Status.payloadSize(data, headers)
    const max = driver.maxPayload()
    if (size > max) {
      return Either.left(
        new TransportError({
          reason: "PayloadTooLarge",
          subject,
          detail: `the message is ${size} bytes (data and headers); the server's max_payload is ${max}`
        })
      )
    }
    return Either.right(data)
  }

  const publish = (subject: Subject.Subject, payload: Payload, headers?: Headers): void => {
    const data = outgoing(subject, payload, headers)
    if (Either.isLeft(data)) throw data.left
    driver.publish(subject, data.right, headers)
  }

  const request = (subject: Subject.Subject, payload: Payload, options: RequestOptions): Promise<Message> => {
    const { headers, signal, timeoutMs } = options
    if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
      return Promise.reject(invalid(subject, `timeoutMs must be a positive number of milliseconds, got ${String(timeoutMs)}`))
    }
    const data = outgoing(subject, payload, headers)
    if (Either.isLeft(data)) return Promise.reject(data.left)
    if (signal?.aborted === true) return Promise.reject(cancelled(subject))
    let pending: Promise<Message>
    try {
      pending = driver.request(subject, data.right, headers, timeoutMs)
    } catch (error) {
      return Promise.reject(error)
    }
    const checked = pending.then((reply) => {
      const error = Status.errorOf(reply, subject)
      if (error !== undefined) throw error
      return reply
    })
    if (signal === undefined) return checked
    return new Promise<Message>((resolve, reject) => {
      const onAbort = () => reject(cancelled(subject))
      signal.addEventListener("abort", onAbort, { once: true })
      checked.then((reply) => {
        signal.removeEventListener("abort", onAbort)
        resolve(reply)
      }, (error: unknown) => {
        signal.removeEventListener("abort", onAbort)
        reject(error)
      })
    })
  }

  const serve = (pattern: Subject.Pattern, options: ServeOptions, handler: Handler): Effect.Effect<void, TransportError, Scope.Scope> =>
    Effect.gen(function*() {
      if (!Subject.isPattern(pattern)) return yield* invalid(pattern, "not a subject pattern")
      const concurrency = positiveInteger(options.concurrency, 1)
      if (concurrency === undefined) return yield* invalid(pattern, `concurrency must be an integer ≥ 1, got ${String(options.concurrency)}`)
      const backlog = options.backlog === 0 ? 0 : positiveInteger(options.backlog, defaults.backlog)
      if (backlog === undefined) return yield* invalid(pattern, `backlog must be an integer ≥ 0, got ${String(options.backlog)}`)
      const graceMs = options.graceMs ?? defaults.graceMs
      if (!(Number.isFinite(graceMs) && graceMs >= 0)) return yield* invalid(pattern, `graceMs must be ≥ 0, got ${String(graceMs)}`)
      if (options.queue !== undefined && !/^[^\s]+$/.test(options.queue)) {
        return yield* invalid(pattern, `the queue group ${JSON.stringify(options.queue)} is empty or holds whitespace`)
      }
      const responder = new Responder({ subject: pattern, concurrency, backlog, maxPayload: driver.maxPayload, handler })
      let refused: TransportError | undefined
      yield* Effect.acquireRelease(
        attempt(() => driver.subscribe(pattern, options.queue, { deliver: responder.deliver, end: (error) => refused ??= error })),
        (subscription) =>
          Effect.promise(async () => {
            await subscription.close()
            await responder.close(graceMs)
          })
      )
      yield* flushBounded(driver)
      if (refused !== undefined) return yield* refused
    })

  const subscribe = (
    pattern: Subject.Pattern,
    options?: SubscribeOptions
  ): Effect.Effect<Stream.Stream<Message, TransportError>, TransportError, Scope.Scope> =>
    Effect.gen(function*() {
      if (!Subject.isPattern(pattern)) return yield* invalid(pattern, "not a subject pattern")
      const bufferSize = positiveInteger(options?.bufferSize, defaults.bufferSize)
      if (bufferSize === undefined) return yield* invalid(pattern, `bufferSize must be an integer ≥ 1, got ${String(options?.bufferSize)}`)
      const buffer = new DeliveryBuffer(bufferSize)
      let refused: TransportError | undefined
      yield* Effect.acquireRelease(
        attempt(() =>
          driver.subscribe(pattern, undefined, {
            deliver: (message) => buffer.offer({ subject: message.subject, data: message.data, headers: message.headers, dropped: 0 }),
            end: (error) => {
              refused ??= error
              buffer.end(error)
            }
          })
        ),
        (subscription) =>
          Effect.promise(() => {
            buffer.end(undefined)
            return subscription.close()
          })
      )
      yield* flushBounded(driver)
      if (refused !== undefined) return yield* refused
      return buffer.stream
    })

  return { maxPayload: driver.maxPayload, publish, request, serve, subscribe }
}

const cancelled = (subject: string) => new TransportError({ reason: "Cancelled", subject, detail: "the caller's signal aborted the request" })

const orDie = <A>(effect: Effect.Effect<A, unknown>): Effect.Effect<A, TransportError> =>
  Effect.catchAll(effect, (error) => isTransportError(error) ? Effect.fail(error) : Effect.die(error))

/** Runs a driver call: its `TransportError` is a failure, anything else a defect. */
const attempt = <A>(f: () => A): Effect.Effect<A, TransportError> => orDie(Effect.try({ try: f, catch: (error) => error }))

/**
 * `publish` as an Effect.
 *
 * @since 0.1.0
 * @category accessors
 */
export const publish = (subject: Subject.Subject, payload: Payload, headers?: Headers): Effect.Effect<void, TransportError, Transport> =>
  Effect.flatMap(Transport, (transport) => attempt(() => transport.publish(subject, payload, headers)))

/**
 * `request` as an Effect; interrupting the fiber cancels the request.
 *
 * @since 0.1.0
 * @category accessors
 */
export const request = (
  subject: Subject.Subject,
  payload: Payload,
  options: Omit<RequestOptions, "signal">
): Effect.Effect<Message, TransportError, Transport> =>
  Effect.flatMap(Transport, (transport) =>
    orDie(Effect.tryPromise({ try: (signal) => transport.request(subject, payload, { ...options, signal }), catch: (error) => error })))

/** `serve` of the transport in the context. @since 0.1.0 @category accessors */
export const serve = (
  pattern: Subject.Pattern,
  options: ServeOptions,
  handler: Handler
): Effect.Effect<void, TransportError, Transport | Scope.Scope> => Effect.flatMap(Transport, (transport) => transport.serve(pattern, options, handler))

/** `subscribe` of the transport in the context. @since 0.1.0 @category accessors */
export const subscribe = (
  pattern: Subject.Pattern,
  options?: SubscribeOptions
): Effect.Effect<Stream.Stream<Message, TransportError>, TransportError, Transport | Scope.Scope> =>
  Effect.flatMap(Transport, (transport) => transport.subscribe(pattern, options))
