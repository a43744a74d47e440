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
import * as MemoryRequests from "./internal/memoryRequests.js"
import { closedError, copy, MemoryRoutes } from "./internal/memoryRoutes.js"
import * as Transport from "./Transport.js"

/** @since 0.1.0 @category models */
export interface MemoryTransportOptions {
  /** The largest message in bytes (data plus headers); default 1 048 576. */
  readonly maxPayload?: number | undefined
}

/** @since 0.1.0 @category constants */
export const defaultMaxPayload = 1_048_576

/**
 * The driver over a routing table (`internal/memoryRoutes`) and the requests waiting for a reply
 * (`internal/memoryRequests`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const driver = (options: MemoryTransportOptions = {}): Transport.Driver & { readonly close: () => void } => {
  const maxPayload = options.maxPayload ?? defaultMaxPayload
  const routes = new MemoryRoutes()
  const pendingRequests = new Set<() => void>()
  let closed = false

  const publish = (subject: string, data: Uint8Array, headers: Transport.Headers | undefined): void => {
    if (closed) throw closedError(subject)
    routes.route({ subject, data: data.slice(), headers: copy(headers), respond: undefined })
  }

  const request = (subject: string, data: Uint8Array, headers: Transport.Headers | undefined, timeoutMs: number) =>
    closed ? Promise.reject(closedError(subject)) : MemoryRequests.request(routes, pendingRequests, subject, data, headers, timeoutMs)

  const subscribe = (pattern: string, queue: string | undefined, sink: Transport.DriverSink): Transport.DriverSubscription => {
    if (closed) throw closedError(pattern)
    return { close: routes.add(pattern, queue, sink) }
  }

  const close = (): void => {
    if (closed) return
    closed = true
    routes.closeAll()
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
