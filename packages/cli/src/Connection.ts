/**
 * The options every `jitbox` command that connects to NATS shares: where NATS is (`--server`,
 * `JITBOX_SERVER`), which namespace to serve (`--namespace`, `JITBOX_NAMESPACE`, default
 * `default`), and how to reach a secured server:
 *
 * - one way to authenticate: `--user` with `--password` (`JITBOX_USER`, `JITBOX_PASSWORD`; or in
 *   the URL, `nats://user:password@host:4222`), `--token` (`JITBOX_TOKEN`; or `nats://token@host`),
 *   `--nkey FILE` (a user's NKey seed, `JITBOX_NKEY`) or `--creds FILE` (a `.creds` file,
 *   `JITBOX_CREDS`);
 * - TLS: `--tls-ca` (the CA that signed the server's certificate), `--tls-cert` with `--tls-key`
 *   (this client's certificate, for a server that verifies clients) (`JITBOX_TLS_CA`, `_CERT`, `_KEY`);
 * - `--inbox-prefix` (`JITBOX_INBOX_PREFIX`): the prefix of the connection's reply subjects, for a
 *   server that lets this user subscribe only to its own (`_INBOX_worker.>`);
 * - `--principal` (`JITBOX_PRINCIPAL`): who the command asks the coordinator as, the principal
 *   token of `coordinator.<principal>.<op>` (default: the `--user`, else `default`). A server
 *   configured by `jitbox auth config` lets each user publish only its own principal's subjects.
 *
 * A flag wins over its environment variable. Options that do not go together (two ways to
 * authenticate, `--password` without `--user`, `--tls-cert` without `--tls-key`) fail
 * `ConfigError` naming the flags, before anything connects.
 *
 * A serving command (`serving`) connected without credentials to a server that is not on this
 * machine prints one warning on stderr: without NATS authorization every client of the server is
 * trusted with the namespace.
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"
import { HarnessError } from "@jitbox/core"
import { NatsConnection } from "@jitbox/nats"
import { Ids, Subject, type TransportError } from "@jitbox/runtime"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
/** @since 0.1.0 @category constants */
export const defaults = {
  server: "nats://127.0.0.1:4222",
  namespace: "default"
} as const

/** @since 0.1.0 @category options */
export const server = Options.text("server").pipe(
  Options.withDescription(
    `NATS server URL(s), comma-separated (nats://host:4222,nats://other:4222); environment variable JITBOX_SERVER; default ${defaults.server}`
  ),
  Options.withDefault(defaults.server),
  Options.withFallbackConfig(Config.string("JITBOX_SERVER"))
)

/** An optional flag whose environment variable `variable` stands in when it is not given. */
const withVariable = <A>(option: Options.Options<A>, variable: string, config: Config.Config<A>, description: string) =>
  option.pipe(Options.withDescription(`${description}; environment variable ${variable}`), Options.withFallbackConfig(config), Options.optional)

const fileOption = (name: string, variable: string, description: string) => withVariable(Options.file(name), variable, Config.string(variable), description)
const textOption = (name: string, variable: string, description: string) => withVariable(Options.text(name), variable, Config.string(variable), description)
const secretOption = (name: string, variable: string, description: string) =>
  withVariable(Options.redacted(name), variable, Config.redacted(variable), description)

/** @since 0.1.0 @category options */
export const creds = fileOption("creds", "JITBOX_CREDS", "A NATS credentials file (.creds: user JWT and NKey seed)")

/** @since 0.1.0 @category options */
export const user = textOption("user", "JITBOX_USER", "A user of the server's authorization block, with --password")

/** @since 0.1.0 @category options */
export const password = secretOption("password", "JITBOX_PASSWORD", "The password of --user (the variable is better than the flag, which other users of the machine can see)")

/** @since 0.1.0 @category options */
export const token = secretOption("token", "JITBOX_TOKEN", "A token of the server's authorization block")

/** @since 0.1.0 @category options */
export const nkey = fileOption("nkey", "JITBOX_NKEY", "A file holding the NKey seed (SU…) of a user of the server's authorization block")

/** @since 0.1.0 @category options */
export const tlsCa = fileOption("tls-ca", "JITBOX_TLS_CA", "TLS: the CA certificate (PEM) that signed the server's certificate (default: the system's CAs when the server asks for TLS)")

/** @since 0.1.0 @category options */
export const tlsCert = fileOption("tls-cert", "JITBOX_TLS_CERT", "TLS: this client's certificate (PEM), with --tls-key, for a server that verifies clients")

/** @since 0.1.0 @category options */
export const tlsKey = fileOption("tls-key", "JITBOX_TLS_KEY", "TLS: the private key (PEM) of --tls-cert")

/** @since 0.1.0 @category options */
export const inboxPrefix = textOption(
  "inbox-prefix",
  "JITBOX_INBOX_PREFIX",
  "The prefix of this connection's reply subjects (default _INBOX), for a server that lets this user subscribe only to its own (_INBOX_worker.>)"
)

/** @since 0.1.0 @category options */
export const principal = textOption(
  "principal",
  "JITBOX_PRINCIPAL",
  `Who this command asks the coordinator as (coordinator.<principal>.<op>): the NATS user it connects as; default the --user, else ${Ids.defaultPrincipal}`
)

/** @since 0.1.0 @category options */
export const namespace = Options.text("namespace").pipe(
  Options.withDescription(`The namespace served (subject-safe: letters, digits, _ and -); environment variable JITBOX_NAMESPACE; default ${defaults.namespace}`),
  Options.withDefault(defaults.namespace),
  Options.withFallbackConfig(Config.string("JITBOX_NAMESPACE"))
)

/** How to reach a secured server, for a command with a `--server` of its own. @since 0.1.0 @category options */
export const security = { creds, user, password, token, nkey, tlsCa, tlsCert, tlsKey, inboxPrefix, principal } as const

/** The shared options, to spread into a command's options. @since 0.1.0 @category options */
export const options = { server, namespace, ...security } as const

/** What `security` parses to. @since 0.1.0 @category models */
export interface SecurityConfig {
  readonly creds: Option.Option<string>
  readonly user: Option.Option<string>
  readonly password: Option.Option<Redacted.Redacted>
  readonly token: Option.Option<Redacted.Redacted>
  readonly nkey: Option.Option<string>
  readonly tlsCa: Option.Option<string>
  readonly tlsCert: Option.Option<string>
  readonly tlsKey: Option.Option<string>
  readonly inboxPrefix: Option.Option<string>
  /** Absent (a config made in code): as if not given. */
  readonly principal?: Option.Option<string> | undefined
}

/** What the shared options parse to. @since 0.1.0 @category models */
export interface ConnectionConfig extends SecurityConfig {
  readonly server: string
  readonly namespace: string
}

const configError = (option: string, detail: string) => new HarnessError.ConfigError({ option, detail })

/** The ways to authenticate given, by their flags. */
const waysGiven = (config: SecurityConfig, inUrl: boolean): ReadonlyArray<string> => [
  ...(Option.isSome(config.user) ? ["--user"] : []),
  ...(Option.isSome(config.token) ? ["--token"] : []),
  ...(Option.isSome(config.nkey) ? ["--nkey"] : []),
  ...(Option.isSome(config.creds) ? ["--creds"] : []),
  ...(inUrl ? ["credentials in --server"] : [])
]

/** Each URL of a comma-separated `--server`, with the credentials it carries apart. */
const serverUrls = (server: string) => server.split(",").map((url) => url.trim()).filter((url) => url !== "").map(NatsConnection.serverUrl)

/** The server URLs without credentials, and the credentials they carry (all the same, or a `ConfigError`). */
const serversOf = (server: string) => {
  const urls = serverUrls(server)
  const carrying = urls.filter((url) => url.user !== undefined || url.token !== undefined)
  const first = carrying[0]
  if (carrying.some((url) => url.user !== first?.user || url.password !== first?.password || url.token !== first?.token)) {
    return Effect.fail(configError("--server", "the URLs carry different credentials: give them once"))
  }
  return Effect.succeed({ servers: urls.map((url) => url.url), carried: first })
}

/** `--inbox-prefix`: one or more subject tokens, no wildcards. */
const checkInboxPrefix = (prefix: Option.Option<string>) =>
  Option.isSome(prefix) && !/^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/.test(prefix.value)
    ? Effect.fail(configError("--inbox-prefix", `subject tokens of letters, digits, _, $ and - separated by dots, no wildcards, got '${prefix.value}'`))
    : Effect.void

/** The credentials and TLS of `config`; a `ConfigError` naming the flags that do not go together. */
const checkSecurity = (config: SecurityConfig, inUrl: boolean): Effect.Effect<void, HarnessError.ConfigError> => {
  const ways = waysGiven(config, inUrl)
  if (ways.length > 1) {
    return Effect.fail(configError(ways[0]!, `cannot be combined with ${ways.slice(1).join(", ")}: each is a way to authenticate, give one (a flag or its JITBOX_ environment variable)`))
  }
  if (Option.isSome(config.password) && Option.isNone(config.user)) return Effect.fail(configError("--password", "is the password of a --user: give --user too"))
  if (Option.isSome(config.user) && Option.isNone(config.password)) return Effect.fail(configError("--user", "needs --password (or JITBOX_PASSWORD)"))
  if (Option.isSome(config.tlsCert) && Option.isNone(config.tlsKey)) return Effect.fail(configError("--tls-cert", "needs --tls-key, the certificate's private key"))
  if (Option.isSome(config.tlsKey) && Option.isNone(config.tlsCert)) return Effect.fail(configError("--tls-key", "needs --tls-cert, the certificate it is the key of"))
  return checkInboxPrefix(config.inboxPrefix)
}

const tlsOf = (config: SecurityConfig): NatsConnection.NatsConnectionOptions["tls"] =>
  Option.isNone(config.tlsCa) && Option.isNone(config.tlsCert)
    ? undefined
    : { caFile: Option.getOrUndefined(config.tlsCa), certFile: Option.getOrUndefined(config.tlsCert), keyFile: Option.getOrUndefined(config.tlsKey) }

/**
 * The options of the process's NATS connection for `config`, named `name` in the server's
 * monitoring; options that do not go together fail `ConfigError` naming their flags.
 *
 * @since 0.1.0
 * @category constructors
 */
export const natsOptions = (
  config: SecurityConfig & { readonly server: string },
  name: string
): Effect.Effect<NatsConnection.NatsConnectionOptions, HarnessError.ConfigError> =>
  Effect.gen(function*() {
    const { carried, servers } = yield* serversOf(config.server)
    yield* checkSecurity(config, carried !== undefined)
    const secret = (value: Option.Option<Redacted.Redacted>) => Option.getOrUndefined(Option.map(value, Redacted.value))
    return {
      servers,
      name,
      credentialsFile: Option.getOrUndefined(config.creds),
      nkeySeedFile: Option.getOrUndefined(config.nkey),
      user: Option.getOrUndefined(config.user) ?? carried?.user,
      password: secret(config.password) ?? carried?.password,
      token: secret(config.token) ?? carried?.token,
      tls: tlsOf(config),
      inboxPrefix: Option.getOrUndefined(config.inboxPrefix)
    }
  })

/**
 * Whether `host` (a name or an address, IPv6 bracketed or not) is this machine: `localhost`,
 * 127.0.0.0/8 or ::1.
 *
 * @since 0.1.0
 * @category predicates
 */
export const isLoopback = (host: string): boolean => {
  const bare = host.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1")
  return bare === "localhost" || bare === "::1" || /^127(\.\d{1,3}){3}$/.test(bare) || /^::ffff:127(\.\d{1,3}){3}$/.test(bare)
}

/** The host of a server URL (`nats://host:4222`, `host:4222`, `[::1]:4222`). */
const hostOf = (url: string): string => {
  try {
    return new URL(/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(url) ? url : `nats://${url}`).hostname
  } catch {
    return url
  }
}

/** @since 0.1.0 @category constants */
export const openServerWarning =
  "without NATS authorization a namespace trusts every client of the server: any of them can call its sessions, run code on its workers and read its events (see the README, \"Deploying securely\")"

/**
 * The warning a serving command prints for `options`: none when the connection authenticates
 * (a user, token, NKey, credentials file or TLS client certificate) or every server is this
 * machine.
 *
 * @since 0.1.0
 * @category constructors
 */
export const unauthenticatedWarning = (options: NatsConnection.NatsConnectionOptions): Option.Option<string> => {
  const authenticated = options.user !== undefined || options.token !== undefined || options.nkeySeedFile !== undefined ||
    options.credentialsFile !== undefined || options.tls?.certFile !== undefined
  const servers = typeof options.servers === "string" ? [options.servers] : options.servers
  const remote = servers.filter((url) => !isLoopback(hostOf(url)))
  return authenticated || remote.length === 0
    ? Option.none()
    : Option.some(`jitbox: warning: connecting to ${remote.join(", ")} without credentials: ${openServerWarning}`)
}

/**
 * The process's one NATS connection for `config`, which its transport and KV services share.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  config: ConnectionConfig,
  name: string
): Layer.Layer<NatsConnection.NatsConnection, HarnessError.ConfigError | TransportError.TransportError> =>
  Layer.unwrapEffect(Effect.map(natsOptions(config, name), NatsConnection.layer))

/**
 * `layer` for a command that serves (`worker`, `coordinator`, `sessions`, `mcp --session`): when
 * it is built without credentials to a server elsewhere, `unauthenticatedWarning` goes to stderr.
 *
 * @since 0.1.0
 * @category layers
 */
export const serving = (
  config: ConnectionConfig,
  name: string
): Layer.Layer<NatsConnection.NatsConnection, HarnessError.ConfigError | TransportError.TransportError> =>
  Layer.unwrapEffect(
    Effect.tap(natsOptions(config, name), (options) =>
      Option.match(unauthenticatedWarning(options), { onNone: () => Effect.void, onSome: (line) => Console.error(line) })).pipe(
      Effect.map(NatsConnection.layer)
    )
  )

/**
 * The namespace and its subject prefix; a name that is not a subject-safe token fails `ConfigError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const prefixOf = (
  config: ConnectionConfig
): Effect.Effect<{ readonly namespace: Ids.Namespace; readonly prefix: Subject.Prefix }, HarnessError.ConfigError> =>
  Effect.map(Ids.decode(Ids.Namespace, "namespace")(config.namespace), (namespace) => ({ namespace, prefix: Subject.prefix(namespace) }))

/**
 * Who the command asks the coordinator as: `--principal`, else the `--user` (or the user in
 * `--server`), else `default`; a name that is not a subject token fails `ConfigError` naming
 * `--principal`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const principalOf = (config: SecurityConfig & { readonly server?: string | Option.Option<string> | undefined }): Effect.Effect<Ids.Principal, HarnessError.ConfigError> => {
  const given = Option.getOrUndefined(config.principal ?? Option.none())
  const server = typeof config.server === "string" ? config.server : Option.getOrUndefined(config.server ?? Option.none())
  const urlUser = (): string | undefined => {
    if (server === undefined) return undefined
    try {
      return serverUrls(server).find((url) => url.user !== undefined)?.user
    } catch {
      return undefined
    }
  }
  const name = given ?? Option.getOrUndefined(config.user) ?? urlUser()
  if (name === undefined) return Effect.succeed(Ids.defaultPrincipal)
  return Effect.mapError(
    Ids.decode(Ids.Principal, "--principal")(name),
    (error) => configError("--principal", given === undefined ? `the --user is the default principal: ${error.detail}; give --principal` : error.detail)
  )
}
