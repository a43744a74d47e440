/**
 * The process's one NATS connection, as nats.js means it: the connection is made once and every
 * add-on takes it. The `Transport` (`NatsTransport.layer`) and the KV services (`KvLedger`,
 * `KvSnapshotStore`, `KvSessionOwnership`) read the `NatsConnection` service instead of connecting,
 * so a process that serves sessions, claims them and keeps their snapshots has one connection to
 * the server, one set of credentials and one reconnect loop.
 *
 * The connection is a scoped resource: made when `layer` is built, drained (subscriptions first,
 * then pending output) and closed when its scope closes, after everything built on it.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@jitbox/core"
import { TransportError } from "@jitbox/runtime"
import { connect, credsAuthenticator, errors, type NatsConnection as Client, nkeyAuthenticator, nkeys, type NodeConnectionOptions } from "@nats-io/transport-node"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"

/** @since 0.1.0 @category models */
export interface NatsConnectionOptions {
  /**
   * One server URL or several (`nats://host:4222`); the client picks among them and fails over.
   * A URL may carry a user and password (`nats://user:password@host:4222`) or a token
   * (`nats://token@host:4222`), used when no other credentials are given (`serverUrl`).
   */
  readonly servers: string | ReadonlyArray<string>
  /** A NATS credentials file (`.creds`: a user JWT and its NKey seed). */
  readonly credentialsFile?: string | undefined
  /** A file holding the NKey seed (`SU…`) of a user of the server's `authorization` block. */
  readonly nkeySeedFile?: string | undefined
  /** A user of the server's `authorization` block, with `password`. */
  readonly user?: string | undefined
  readonly password?: string | undefined
  /** A token of the server's `authorization` block. */
  readonly token?: string | undefined
  /**
   * TLS to the server: the CA that signed its certificate (`caFile`), and this client's
   * certificate and key (`certFile`, `keyFile`) when the server verifies clients. `{}` asks for
   * TLS with the system's CAs.
   */
  readonly tls?: {
    readonly caFile?: string | undefined
    readonly certFile?: string | undefined
    readonly keyFile?: string | undefined
  } | undefined
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

/** @since 0.1.0 @category models */
export interface NatsConnectionShape {
  /** The client's connection, for nats.js add-ons (`new Kvm(nc)`, `jetstreamManager(nc)`). */
  readonly nc: Client
  /**
   * True from a disconnect until the reconnect: the client empties its output buffer on each
   * attempt to reconnect, so what is published meanwhile would be lost without a word.
   */
  readonly isDown: () => boolean
}

/**
 * The process's NATS connection.
 *
 * @since 0.1.0
 * @category tags
 */
export class NatsConnection extends Context.Tag("@jitbox/nats/NatsConnection")<NatsConnection, NatsConnectionShape>() {}

const unknownDetail = (error: unknown): string => error instanceof Error ? `${error.name}: ${error.message}` : String(error)

/**
 * The service over a connection opened elsewhere (by nats.js `connect`); whoever opened it closes it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromClient = (nc: Client): NatsConnectionShape => {
  let down = false
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect") down = true
      else if (status.type === "reconnect") down = false
    }
  })().catch(() => {})
  return { nc, isDown: () => down }
}

const configError = (option: string, detail: string) => new HarnessError.ConfigError({ option, detail })

/**
 * The options checked before anything is sent: a list of servers that is empty or holds an empty
 * URL, or a duration or count that is not a number in its range, fails `ConfigError`. `make` leaves
 * this to its caller (its only failure is the `TransportError` of the transport's layer);
 * `connect` of the `Client` checks first.
 *
 * @since 0.1.0
 * @category constructors
 */
export const checkOptions = (options: NatsConnectionOptions): Effect.Effect<NatsConnectionOptions, HarnessError.ConfigError> =>
  Effect.suspend(() => {
    if (typeof options !== "object" || options === null) return Effect.fail(configError("options", "the connection options must be an object"))
    const servers: ReadonlyArray<unknown> = typeof options.servers === "string" ? [options.servers] : Array.isArray(options.servers) ? options.servers : []
    if (servers.length === 0 || servers.some((url) => typeof url !== "string" || url.trim() === "")) {
      return Effect.fail(configError("servers", `one or more server URLs (nats://host:4222), got ${JSON.stringify(options.servers)}`))
    }
    const durations = [["connectTimeoutMs", 1], ["reconnectTimeWaitMs", 0], ["drainTimeoutMs", 0]] as const
    for (const [option, least] of durations) {
      const value = options[option]
      if (value !== undefined && !(typeof value === "number" && Number.isFinite(value) && value >= least)) {
        return Effect.fail(configError(option, `a number of milliseconds of at least ${least}, got ${String(value)}`))
      }
    }
    const attempts = options.maxReconnectAttempts
    if (attempts !== undefined && !(Number.isSafeInteger(attempts) && attempts >= -1)) {
      return Effect.fail(configError("maxReconnectAttempts", `an integer of at least -1, got ${String(attempts)}`))
    }
    const ways = (["user", "token", "nkeySeedFile", "credentialsFile"] as const).filter((way) => options[way] !== undefined)
    if (ways.length > 1) return Effect.fail(configError(ways[0]!, `${ways.join(" and ")} are ways to authenticate: give one`))
    return Effect.succeed(options)
  })

/** A server URL without its credentials, and the credentials it carried. @since 0.1.0 @category models */
export interface ServerUrl {
  readonly url: string
  readonly user?: string | undefined
  readonly password?: string | undefined
  readonly token?: string | undefined
}

/**
 * `url` without the credentials it carries (`nats://user:password@host:4222`, or a token:
 * `nats://token@host:4222`), and those credentials, percent-decoded. nats.js reads only the host
 * and port of a URL and drops its credentials, so they are handed to it as options instead.
 *
 * @since 0.1.0
 * @category constructors
 */
export const serverUrl = (url: string): ServerUrl => {
  const found = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)?([^/]*)@([^@/]*)$/.exec(url.trim())
  if (found === null) return { url: url.trim() }
  const stripped = `${found[1] ?? ""}${found[3]!}`
  const colon = found[2]!.indexOf(":")
  const decode = (text: string) => {
    try {
      return decodeURIComponent(text)
    } catch {
      return text
    }
  }
  return colon === -1
    ? { url: stripped, token: decode(found[2]!) }
    : { url: stripped, user: decode(found[2]!.slice(0, colon)), password: decode(found[2]!.slice(colon + 1)) }
}

const serverList = (servers: NatsConnectionOptions["servers"]): ReadonlyArray<string> => typeof servers === "string" ? [servers] : servers

/** The credentials the URLs carry, used only when the options give none. */
const urlCredentials = (options: NatsConnectionOptions): Pick<NatsConnectionOptions, "user" | "password" | "token"> => {
  if (options.user !== undefined || options.token !== undefined || options.nkeySeedFile !== undefined || options.credentialsFile !== undefined) return {}
  const carried = serverList(options.servers).map(serverUrl).find((url) => url.user !== undefined || url.token !== undefined)
  return carried === undefined ? {} : { user: carried.user, password: carried.password, token: carried.token }
}

const readFile = async (file: string, what: string): Promise<Uint8Array> => {
  try {
    return await fs.promises.readFile(file)
  } catch (error) {
    throw new TransportError.TransportError({ reason: "Connect", subject: "", detail: `cannot read the ${what} ${file}: ${unknownDetail(error)}` })
  }
}

/** The authenticator of an NKey seed file; a file that holds no user seed fails `Connect` now rather than at the handshake. */
const nkeyOf = async (file: string): Promise<ReturnType<typeof nkeyAuthenticator>> => {
  const seed = new TextDecoder().decode(await readFile(file, "NKey seed file")).trim()
  try {
    if (!seed.startsWith("SU")) throw new Error("a user seed starts with SU")
    nkeys.fromSeed(new TextEncoder().encode(seed))
  } catch (error) {
    throw new TransportError.TransportError({ reason: "Connect", subject: "", detail: `the NKey seed file ${file} holds no user seed: ${unknownDetail(error)}` })
  }
  return nkeyAuthenticator(new TextEncoder().encode(seed))
}

const clientOptions = async (given: NatsConnectionOptions): Promise<NodeConnectionOptions> => {
  const options = { ...given, ...urlCredentials(given) }
  const base: NodeConnectionOptions = {
    servers: serverList(options.servers).map((url) => serverUrl(url).url),
    timeout: options.connectTimeoutMs ?? 10_000,
    reconnectTimeWait: options.reconnectTimeWaitMs ?? 1_000,
    maxReconnectAttempts: options.maxReconnectAttempts ?? -1,
    // Otherwise every request builds three Error objects for stack traces that toTransportError drops.
    noAsyncTraces: true,
    ...(options.name === undefined ? {} : { name: options.name }),
    ...(options.user === undefined ? {} : { user: options.user, pass: options.password ?? "" }),
    ...(options.token === undefined ? {} : { token: options.token }),
    ...(options.tls === undefined ? {} : { tls: Object.fromEntries(Object.entries(options.tls).filter(([, value]) => value !== undefined)) }),
    ...(options.inboxPrefix === undefined ? {} : { inboxPrefix: options.inboxPrefix })
  }
  if (options.nkeySeedFile !== undefined) return { ...base, authenticator: await nkeyOf(options.nkeySeedFile) }
  if (options.credentialsFile === undefined) return base
  return { ...base, authenticator: credsAuthenticator(await readFile(options.credentialsFile, "credentials file")) }
}

const closeClient = (nc: Client, drainTimeoutMs: number): Promise<void> => {
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
 * A connection for the life of the scope: drained and closed when the scope closes. A refused
 * login fails `TransportError` `PermissionDenied`, any other failure to connect `Connect`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: NatsConnectionOptions): Effect.Effect<NatsConnectionShape, TransportError.TransportError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => connect(await clientOptions(options)),
      catch: (error) =>
        TransportError.isTransportError(error)
          ? error
          : new TransportError.TransportError({
            reason: error instanceof errors.AuthorizationError ? "PermissionDenied" : "Connect",
            subject: "",
            detail: `cannot connect to ${serverList(options.servers).map((url) => serverUrl(url).url).join(", ")}: ${unknownDetail(error)}`
          })
    }),
    (nc) => Effect.promise(() => closeClient(nc, options.drainTimeoutMs ?? 5_000))
  ).pipe(Effect.map(fromClient))

/**
 * The process's connection: build it once and provide it to the transport and every KV service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: NatsConnectionOptions): Layer.Layer<NatsConnection, TransportError.TransportError> =>
  Layer.scoped(NatsConnection, make(options))
