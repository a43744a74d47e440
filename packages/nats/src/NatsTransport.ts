/**
 * The NATS layer of the runtime's `Transport`, over `@nats-io/transport-node`. The connection is a
 * scoped resource: made when the layer is built, drained (subscriptions first, then pending
 * output) and closed when its scope closes. Everything the runtime's `Transport` promises holds
 * here too: the in-memory layer and this one pass the same conformance suite.
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
import {
  connect,
  credsAuthenticator,
  errors,
  headers as createHeaders,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type NodeConnectionOptions
} from "@nats-io/transport-node"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"

/** @since 0.1.0 @category models */
export interface NatsTransportOptions {
  /** One server URL or several (`nats://host:4222`); the client picks among them and fails over. */
  readonly servers: string | ReadonlyArray<string>
  /** A NATS credentials file (`.creds`: a user JWT and its NKey seed). */
  readonly credentialsFile?: string | undefined
  /** A user of the server's `authorization` block, with `password`. */
  readonly user?: string | undefined
  readonly password?: string | undefined
  /**
   * The prefix of this connection's reply subjects (default `_INBOX`). Give each role its own
   * (`_INBOX_worker`) and allow it only that to subscribe: with `_INBOX.>` anyone could read
   * every reply on the server.
   */
  readonly inboxPrefix?: string | undefined
  /** The connection's name, as the server's monitoring shows it. */
  readonly name?: string | undefined
  /** How long the first connect may take (default 10 000 ms). */
  readonly connectTimeoutMs?: number | undefined
  /** The wait between reconnect attempts (default 1 000 ms). */
  readonly reconnectTimeWaitMs?: number | undefined
  /** Reconnect attempts before the connection closes for good; -1 (the default) retries forever. */
  readonly maxReconnectAttempts?: number | undefined
  /** How long closing waits for the connection to drain before closing it (default 5 000 ms). */
  readonly drainTimeoutMs?: number | undefined
}

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
export const driver = (nc: NatsConnection): Transport.Driver => {
  // From a disconnect to the reconnect: the client empties its output buffer on each attempt to
  // reconnect, so whatever is published meanwhile is lost without a word.
  let down = false
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect") down = true
      else if (status.type === "reconnect") down = false
    }
  })().catch(() => {})
  const refused = (subject: string) =>
    new TransportError.TransportError({ reason: "Closed", subject, detail: "the NATS connection is down (reconnecting): the message was not sent" })
  return {
    maxPayload: () => nc.info?.max_payload ?? defaultMaxPayload,
    publish: (subject, data, headers) => {
      if (down) throw refused(subject)
      try {
        nc.publish(subject, data, publishOptions(headers))
      } catch (error) {
        throw toTransportError(error, subject)
      }
    },
    request: (subject, data, headers, timeoutMs) => {
      if (down) return Promise.reject(refused(subject))
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

const connectionOptions = async (options: NatsTransportOptions): Promise<NodeConnectionOptions> => {
  const base: NodeConnectionOptions = {
    servers: typeof options.servers === "string" ? options.servers : [...options.servers],
    timeout: options.connectTimeoutMs ?? 10_000,
    reconnectTimeWait: options.reconnectTimeWaitMs ?? 1_000,
    maxReconnectAttempts: options.maxReconnectAttempts ?? -1,
    // Otherwise every request builds three Error objects for stack traces that toTransportError drops.
    noAsyncTraces: true,
    ...(options.name === undefined ? {} : { name: options.name }),
    ...(options.user === undefined ? {} : { user: options.user, pass: options.password ?? "" }),
    ...(options.inboxPrefix === undefined ? {} : { inboxPrefix: options.inboxPrefix })
  }
  if (options.credentialsFile === undefined) return base
  let credentials: Uint8Array
  try {
    credentials = await fs.promises.readFile(options.credentialsFile)
  } catch (error) {
    throw new TransportError.TransportError({
      reason: "Connect",
      subject: "",
      detail: `cannot read the credentials file ${options.credentialsFile}: ${unknownDetail(error)}`
    })
  }
  return { ...base, authenticator: credsAuthenticator(credentials) }
}

const closeConnection = (nc: NatsConnection, drainTimeoutMs: number): Promise<void> => {
  if (nc.isClosed()) return Promise.resolve()
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      nc.close().then(resolve, () => resolve())
    }, drainTimeoutMs)
    nc.drain().then(() => {
      clearTimeout(timer)
      resolve()
    }, () => {
      clearTimeout(timer)
      nc.close().then(resolve, () => resolve())
    })
  })
}

/**
 * An open connection for the life of the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const connection = (options: NatsTransportOptions): Effect.Effect<NatsConnection, TransportError.TransportError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => connect(await connectionOptions(options)),
      catch: (error) =>
        TransportError.isTransportError(error)
          ? error
          : new TransportError.TransportError({
            reason: error instanceof errors.AuthorizationError ? "PermissionDenied" : "Connect",
            subject: "",
            detail: `cannot connect to ${[options.servers].flat().join(", ")}: ${unknownDetail(error)}`
          })
    }),
    (nc) => Effect.promise(() => closeConnection(nc, options.drainTimeoutMs ?? 5_000))
  )

/**
 * A `Transport` over a new connection, drained and closed when the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: NatsTransportOptions): Effect.Effect<Transport.TransportShape, TransportError.TransportError, Scope.Scope> =>
  Effect.map(connection(options), (nc) => Transport.fromDriver(driver(nc)))

/**
 * The NATS `Transport`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: NatsTransportOptions): Layer.Layer<Transport.Transport, TransportError.TransportError> =>
  Layer.scoped(Transport.Transport, make(options))
