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
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import { attempt, orDie } from "./internal/driverCalls.js"
import * as Sending from "./internal/sending.js"
import * as Serving from "./internal/serving.js"
import * as Status from "./internal/status.js"
import * as Subscribing from "./internal/subscribing.js"
import * as Checks from "./internal/transportChecks.js"
import type * as Subject from "./Subject.js"
import type { TransportError } from "./TransportError.js"

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

/**
 * The defaults of `ServeOptions` and `SubscribeOptions`, and `flushTimeoutMs`: how long `serve` /
 * `subscribe` wait for the server to confirm the subscription before going on without it.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults: typeof Checks.defaults = Checks.defaults

const decoder = new TextDecoder()

/** The message's data as UTF-8 text. @since 0.1.0 @category accessors */
export const text = (message: { readonly data: Uint8Array }): string => decoder.decode(message.data)

/**
 * Builds the service over a driver: checks arguments, bounds payloads before the wire, turns
 * status replies and aborted signals into `TransportError`s, runs responders and buffers. The
 * parts are in `internal/`: `transportChecks`, `sending` (publish, request), `serving` and
 * `subscribing`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromDriver = (driver: Driver): TransportShape => ({
  maxPayload: driver.maxPayload,
  publish: (subject, payload, headers) => Sending.publish(driver, subject, payload, headers),
  request: (subject, payload, options) => Sending.request(driver, subject, payload, options),
  serve: (pattern, options, handler) => Serving.serve(driver, pattern, options, handler),
  subscribe: (pattern, options) => Subscribing.subscribe(driver, pattern, options)
})

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
