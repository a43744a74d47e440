/**
 * The NATS layer of the runtime's `Transport`, over `@nats-io/transport-node`, on the process's
 * `NatsConnection`, which it neither opens nor closes. Everything the runtime's `Transport`
 * promises holds here too: the in-memory layer and this one pass the same conformance suite.
 *
 * What NATS reports becomes a `TransportError`: no responders (status 503) is `NoResponders`, a
 * request timer `Timeout`, a closed or draining connection `Closed`, `max_payload` exceeded
 * `PayloadTooLarge` (checked before the wire from the server's `INFO`), a permissions violation
 * `PermissionDenied`, a failed connect `Connect`.
 *
 * Reconnection is the client's: by default it retries forever, every `reconnectTimeWaitMs`, and
 * re-establishes every subscription and responder. While the connection is down the client would
 * accept messages and silently drop them when it reconnects, so the transport refuses them
 * instead: a publish throws and a request rejects `Closed` at once, and the caller knows the
 * message was not sent. A request in flight when the connection drops ends with its reply if that
 * still arrives, else `Timeout`: never later than its `timeoutMs`.
 *
 * @since 0.1.0
 */
import { Transport, TransportError } from "@jitbox/runtime"
import { errors, headers as createHeaders, type Msg, type MsgHdrs } from "@nats-io/transport-node"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NatsConnection from "./NatsConnection.js"

const unknownDetail = (error: unknown): string => error instanceof Error ? `${error.name}: ${error.message}` : String(error)

/**
 * Maps what the NATS client threw or rejected with to a `TransportError`.
 *
 * @since 0.1.0
 * @category errors
 */
export const toTransportError = (error: unknown, subject: string): TransportError.TransportError => {
  if (TransportError.isTransportError(error)) return error
  const make = (reason: TransportError.TransportErrorReason, detail: string) => new TransportError.TransportError({ reason, subject, detail })
  if (error instanceof errors.RequestError) {
    if (error.isNoResponders()) return make("NoResponders", "no responders (NATS status 503)")
    if (error.cause !== undefined && error.cause !== error) return toTransportError(error.cause, subject)
  }
  if (error instanceof errors.NoRespondersError) return make("NoResponders", "no responders (NATS status 503)")
  if (error instanceof errors.TimeoutError) return make("Timeout", error.message)
  if (error instanceof errors.ClosedConnectionError) return make("Closed", "the NATS connection is closed")
  if (error instanceof errors.DrainingConnectionError) return make("Closed", "the NATS connection is draining")
  if (error instanceof errors.PermissionViolationError) return make("PermissionDenied", error.message)
  if (error instanceof errors.AuthorizationError || error instanceof errors.UserAuthenticationExpiredError) {
    return make("PermissionDenied", error.message)
  }
  if (error instanceof errors.InvalidSubjectError) return make("InvalidArgument", error.message)
  if (error instanceof errors.InvalidArgumentError) {
    return make(/max_payload/i.test(error.message) ? "PayloadTooLarge" : "InvalidArgument", error.message)
  }
  return make("Unknown", unknownDetail(error))
}

/** The client's headers, or undefined when there are none. */
const toNatsHeaders = (headers: Transport.Headers | undefined): MsgHdrs | undefined => {
  if (headers === undefined) return undefined
  let out: MsgHdrs | undefined
  for (const key in headers) {
    out ??= createHeaders()
    out.set(key, headers[key]!)
  }
  return out
}

/** Publish options for the client: a fresh object each time, since the client writes into it. */
const publishOptions = (headers: Transport.Headers | undefined): { headers: MsgHdrs } | undefined => {
  const natsHeaders = toNatsHeaders(headers)
  return natsHeaders === undefined ? undefined : { headers: natsHeaders }
}

const noHeaders: Transport.Headers = Object.freeze({})

const fromNatsHeaders = (headers: MsgHdrs | undefined): Transport.Headers => {
  if (headers === undefined) return noHeaders
  const out: Record<string, string> = {}
  let count = 0
  for (const key of headers.keys()) {
    // whoever published it may be anyone: keep a bounded number of headers
    if (++count > Transport.headerLimits.count) break
    out[key] = headers.get(key)
  }
  return out
}

const toMessage = (msg: Msg): Transport.Message => ({ subject: msg.subject, data: msg.data, headers: fromNatsHeaders(msg.headers), dropped: 0 })

/** Until the server's `INFO` says otherwise: the nats-server default. */
const defaultMaxPayload = 1_048_576

/**
 * The driver of `Transport.fromDriver` over an open connection.
 *
 * @since 0.1.0
 * @category constructors
 */
export const driver = (connection: NatsConnection.NatsConnectionShape): Transport.Driver => {
  const { isDown, nc } = connection
  const refused = (subject: string) =>
    new TransportError.TransportError({ reason: "Closed", subject, detail: "the NATS connection is down (reconnecting): the message was not sent" })
  return {
    maxPayload: () => nc.info?.max_payload ?? defaultMaxPayload,
    publish: (subject, data, headers) => {
      if (isDown()) throw refused(subject)
      try {
        nc.publish(subject, data, publishOptions(headers))
      } catch (error) {
        throw toTransportError(error, subject)
      }
    },
    request: (subject, data, headers, timeoutMs) => {
      if (isDown()) return Promise.reject(refused(subject))
      const natsHeaders = toNatsHeaders(headers)
      const natsOptions = natsHeaders === undefined ? { timeout: timeoutMs } : { timeout: timeoutMs, headers: natsHeaders }
      return nc.request(subject, data, natsOptions).then(toMessage, (error: unknown) => Promise.reject(toTransportError(error, subject)))
    },
    subscribe: (pattern, queue, sink) => {
      let closedByOwner = false
      let subscription
      try {
        subscription = nc.subscribe(pattern, {
          ...(queue === undefined ? {} : { queue }),
          callback: (error, msg) => {
            if (error !== null) return sink.end(toTransportError(error, pattern))
            const reply = msg.reply
            sink.deliver({
              subject: msg.subject,
              data: msg.data,
              headers: fromNatsHeaders(msg.headers),
              respond: reply === undefined || reply === ""
                ? undefined
                : (data, headers) => nc.publish(reply, data, publishOptions(headers))
            })
          }
        })
      } catch (error) {
        throw toTransportError(error, pattern)
      }
      const ended = (error: unknown) => {
        if (closedByOwner) return
        sink.end(
          error instanceof Error
            ? toTransportError(error, pattern)
            : new TransportError.TransportError({ reason: "Closed", subject: pattern, detail: "the NATS connection closed" })
        )
      }
      subscription.closed.then(ended, ended)
      return {
        close: () => {
          closedByOwner = true
          if (subscription.isClosed()) return Promise.resolve()
          return subscription.drain().then(() => undefined, () => undefined)
        }
      }
    },
    flush: () => nc.flush()
  }
}

/**
 * A `Transport` over `connection`; the connection's owner closes it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromConnection = (connection: NatsConnection.NatsConnectionShape): Transport.TransportShape => Transport.fromDriver(driver(connection))

/**
 * A `Transport` over the process's `NatsConnection`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Transport.TransportShape, never, NatsConnection.NatsConnection> = Effect.map(NatsConnection.NatsConnection, fromConnection)

/**
 * The NATS `Transport`, over the process's `NatsConnection` (`NatsConnection.layer`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Transport.Transport, never, NatsConnection.NatsConnection> = Layer.effect(Transport.Transport, make)
