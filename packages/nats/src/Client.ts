/**
 * jitbox over NATS for async code: `connect` opens one connection to the servers and answers a
 * client whose `session(id)` is the runtime's `RemoteSession` of that session in the namespace,
 * every session on the same connection. Nothing of Effect shows: a rejection is the tagged error
 * itself (`ConfigError` for a bad namespace or option, `TransportError` for NATS, the session's
 * own errors such as `ToolNotFound` from its methods), with its `_tag` and fields.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@jitbox/core"
import { Ids, RemoteSession, Subject } from "@jitbox/runtime"
import * as Effect from "effect/Effect"
import { openScoped } from "./internal/promise.js"
import * as NatsConnection from "./NatsConnection.js"
import * as NatsTransport from "./NatsTransport.js"

/** @since 0.1.0 @category models */
export interface ConnectOptions extends NatsConnection.NatsConnectionOptions {
  /** The namespace the sessions live in (letters, digits, `_` and `-`), as its hosts serve it. */
  readonly namespace: string
  /** How long a session's request waits for its reply, in milliseconds (default 30 000); a call can set its own. */
  readonly timeoutMs?: number | undefined
}

/** @since 0.1.0 @category models */
export interface Client {
  readonly namespace: string
  /** The session `sessionId` of the namespace; a bad id throws `ConfigError`. */
  readonly session: (sessionId: string) => RemoteSession.RemoteSession
  /** Drains the connection and closes it; safe to call twice. */
  readonly close: () => Promise<void>
}

const open = (options: ConnectOptions) =>
  Effect.gen(function*() {
    if (typeof options !== "object" || options === null) {
      return yield* Effect.fail(new HarnessError.ConfigError({ option: "options", detail: "connect takes an object of options" }))
    }
    const namespace = yield* Ids.decode(Ids.Namespace, "namespace")(options.namespace)
    const timeoutMs = options.timeoutMs ?? RemoteSession.defaults.timeoutMs
    if (!(typeof timeoutMs === "number" && Number.isFinite(timeoutMs) && timeoutMs > 0)) {
      return yield* Effect.fail(new HarnessError.ConfigError({ option: "timeoutMs", detail: `a positive number of milliseconds, got ${String(timeoutMs)}` }))
    }
    yield* NatsConnection.checkOptions(options)
    const { namespace: _namespace, timeoutMs: _timeoutMs, ...connectionOptions } = options
    const connection = yield* NatsConnection.make({ name: `jitbox-client-${namespace}`, ...connectionOptions })
    return { namespace, prefix: Subject.prefix(namespace), timeoutMs, transport: NatsTransport.fromConnection(connection) }
  })

/**
 * Connects to NATS for the sessions of `options.namespace`. Rejects with `ConfigError` for a bad
 * namespace or option, with `TransportError` (reason `Connect`, or `PermissionDenied` for a
 * refused login) when no server can be reached.
 *
 * @since 0.1.0
 * @category constructors
 */
export const connect = async (options: ConnectOptions): Promise<Client> => {
  const { close, value } = await openScoped(open(options))
  const { namespace, prefix, timeoutMs, transport } = value
  return {
    namespace,
    session: (sessionId) => new RemoteSession.RemoteSession(transport, sessionId, { prefix, timeoutMs }),
    close
  }
}
