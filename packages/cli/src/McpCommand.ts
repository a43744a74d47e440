/**
 * `jitbox mcp`: a jitbox session as an MCP server (`@jitbox/mcp`), for an MCP host (Claude
 * Desktop, an IDE, an agent framework) to offer its tools to a model.
 *
 * - Where it listens: stdio by default (the host starts the command; nothing but MCP goes to
 *   stdout, logs go to stderr, and it stops when stdin ends), or Streamable HTTP with `--http
 *   PORT` (on `--host`, 127.0.0.1 by default), where each MCP session gets a session of its own.
 *   Over HTTP every request must carry `Authorization: Bearer <token>` of `--http-token`
 *   (`JITBOX_MCP_TOKEN`), or it is answered 401; only on a loopback `--host` may `--no-auth`
 *   serve without one.
 * - Which session: a fresh one, or one from `--snapshot FILE` (each new session a copy of it), run
 *   in this process with code tools sandboxed in subprocesses (`SandboxRunner`); or, with
 *   `--session SID`, the session SID of a namespace, hosted by `jitbox sessions` and reached over
 *   NATS (`--server`, `--namespace`, the credentials and TLS options, as every command). Over HTTP every MCP session
 *   then serves that one session. The session is reached before serving: one that has no stored
 *   snapshot and is not active is refused (`ConfigError` naming `--create`) unless `--create` is
 *   given, so a mistyped id starts no new session.
 *
 * With `--otlp URL` (or OTEL_EXPORTER_OTLP_ENDPOINT) it exports a span per tool call of a local
 * session and the call metrics as service `jitbox-mcp` (`Telemetry`).
 *
 * What serves is `McpServe`, loaded only when the command runs, so that `--help` and the other
 * commands load no MCP server.
 *
 * Exit codes: 0 when it stopped (stdin ended, SIGTERM, SIGINT); 1 when it could not start (a bad
 * argument, a snapshot that does not load or activate, NATS or the session unreachable, a port in
 * use).
 *
 * @since 0.1.0
 */
import { Command, HelpDoc, Options } from "@effect/cli"
import { HarnessError, type JitHarnessSnapshot } from "@jitbox/core"
import type { McpError } from "@jitbox/mcp"
import type { TransportError } from "@jitbox/runtime"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Connection from "./Connection.js"
import * as Health from "./Health.js"
import * as Serve from "./Serve.js"
import * as SessionsCommand from "./SessionsCommand.js"
import * as Telemetry from "./Telemetry.js"

/** The defaults of `--host` and `--max-sessions`: `HttpServer.defaults`' (a test checks), here so that `--help` loads no MCP server. @since 0.1.0 @category constants */
export const defaults = { host: "127.0.0.1", maxSessions: 32 } as const

/** @since 0.1.0 @category options */
export const http = Options.integer("http").pipe(
  Options.withDescription("Serve MCP Streamable HTTP on this port (0: a free one) at /mcp, instead of stdio"),
  Options.optional
)

/** @since 0.1.0 @category options */
export const host = Options.text("host").pipe(
  Options.withDescription(`The address --http listens on (default ${defaults.host}: this machine only)`),
  Options.withDefault(defaults.host)
)

/** @since 0.1.0 @category options */
export const httpToken = Options.redacted("http-token").pipe(
  Options.withDescription("With --http: the bearer token every request must carry (Authorization: Bearer TOKEN), others are answered 401; environment variable JITBOX_MCP_TOKEN (better than the flag, which other users of the machine can see)"),
  Options.withFallbackConfig(Config.redacted("JITBOX_MCP_TOKEN")),
  Options.optional
)

/** @since 0.1.0 @category options */
export const noAuth = Options.boolean("no-auth").pipe(
  Options.withDescription("With --http on a loopback --host (127.0.0.1, ::1, localhost): serve without a bearer token, to any process of this machine")
)

/** @since 0.1.0 @category options */
export const allowedHost = Options.text("allowed-host").pipe(
  Options.withDescription("With --http: a host name clients reach the server by (repeatable); requests naming another Host are answered 403. Default: localhost, 127.0.0.1 and [::1] on a loopback --host, any otherwise"),
  Options.repeated
)

/** @since 0.1.0 @category options */
export const snapshot = Options.file("snapshot", { exists: "yes" }).pipe(
  Options.withDescription("Start each session as a copy of this snapshot (a JSON file saved by a harness); default: an empty toolbox"),
  Options.optional
)

/** @since 0.1.0 @category options */
export const session = Options.text("session").pipe(
  Options.withDescription("Serve this session of the namespace, hosted by `jitbox sessions` and reached over NATS (--server, --creds, --namespace)"),
  Options.optional
)

/** @since 0.1.0 @category options */
export const create = Options.boolean("create").pipe(
  Options.withDescription("With --session: start the session if nobody has stored it (without it, a session id with no stored snapshot that is not active is refused, so a typo starts no new session)")
)

/** @since 0.1.0 @category options */
export const inspectionTools = Options.choice("inspection-tools", ["always", "deferred", "hidden"] as const).pipe(
  Options.withDescription("Which inspection tools a local session offers (hidden: none of read_tool_source, inspect_tool_calls, …); default deferred, which MCP lists like always"),
  Options.withDefault("deferred" as const)
)

/** @since 0.1.0 @category options */
export const maxSessions = Options.integer("max-sessions").pipe(
  Options.withDescription(`With --http: MCP sessions served at once (default ${defaults.maxSessions})`),
  Options.withDefault(defaults.maxSessions)
)

/** @since 0.1.0 @category options */
export const idleTimeout = Options.text("idle-timeout").pipe(
  Options.withDescription("With --http: an MCP session without a request for this long (and no call running) is closed: 500ms, 30s, 5m, 1h (default 5m)"),
  Options.withDefault("5m"),
  Options.mapTryCatch(SessionsCommand.parseDuration, (error) => HelpDoc.p(error instanceof Error ? error.message : String(error)))
)

/** @since 0.1.0 @category options */
export const policy = Options.text("policy").pipe(
  Options.withDescription("A local session's request policy as JSON, e.g. {\"allowedLanguages\":[\"JavaScript\"]} (fields left out take the policy defaults); default: no budgets"),
  Options.mapTryCatch(SessionsCommand.parsePolicy, (error) => HelpDoc.p(error instanceof Error ? error.message : String(error))),
  Options.optional
)

/** What serving MCP can fail with. @since 0.1.0 @category errors */
export type McpCommandError =
  | HarnessError.ConfigError
  | TransportError.TransportError
  | JitHarnessSnapshot.SnapshotError
  | McpError.McpServeError
  | Health.HealthServerError

/**
 * The bearer token `--http` requires: `--http-token` (or `JITBOX_MCP_TOKEN`), or none with
 * `--no-auth` on a loopback `--host`; anything else fails `ConfigError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const httpAuth = (
  config: { readonly httpToken: Option.Option<Redacted.Redacted>; readonly noAuth: boolean; readonly host: string }
): Effect.Effect<string | undefined, HarnessError.ConfigError> => {
  const token = Option.map(config.httpToken, Redacted.value)
  if (config.noAuth) {
    if (Option.isSome(token)) return new HarnessError.ConfigError({ option: "--no-auth", detail: "and --http-token (or JITBOX_MCP_TOKEN) contradict each other: give one" })
    if (!Connection.isLoopback(config.host)) {
      return new HarnessError.ConfigError({
        option: "--no-auth",
        detail: `serves without a token only on a loopback --host (127.0.0.1, ::1, localhost), not on ${config.host}, where other machines reach it: give --http-token`
      })
    }
    return Effect.succeed(undefined)
  }
  if (Option.isNone(token)) {
    return new HarnessError.ConfigError({
      option: "--http-token",
      detail: "serving MCP over HTTP needs a bearer token: give --http-token TOKEN or JITBOX_MCP_TOKEN (or --no-auth, on a loopback --host only)"
    })
  }
  if (token.value.trim() === "") return new HarnessError.ConfigError({ option: "--http-token", detail: "is empty" })
  return Effect.succeed(token.value)
}

/** The serving half of the command, loaded when it runs. */
const serving = Effect.promise(() => import("./McpServe.js"))

/** @since 0.1.0 @category commands */
export const command = Command.make(
  "mcp",
  { ...Connection.options, http, host, httpToken, noAuth, allowedHost, snapshot, session, create, inspectionTools, policy, maxSessions, idleTimeout, otlp: Telemetry.otlp, ...Health.options },
  (config): Effect.Effect<void, McpCommandError> => {
    const opener = Effect.gen(function*() {
      // first in the scope, so shut down (flushing every span) after the sessions are closed
      const telemetry = yield* Telemetry.install(config.otlp, "jitbox-mcp")
      const { localSessions, remoteSession } = yield* serving
      return yield* Option.match(config.session, {
        onNone: () => localSessions(config.snapshot, config, telemetry),
        onSome: (sessionId) => remoteSession(config, sessionId, telemetry)
      })
    })
    const checked = Effect.gen(function*() {
      if (Option.isSome(config.session) && Option.isSome(config.snapshot)) {
        return yield* new HarnessError.ConfigError({ option: "--snapshot", detail: "serves a local session; --session serves a remote one: give one of them" })
      }
      if (config.create && Option.isNone(config.session)) {
        return yield* new HarnessError.ConfigError({ option: "--create", detail: "starts a remote session nobody has stored: it goes with --session" })
      }
      if (config.maxSessions < 1) return yield* new HarnessError.ConfigError({ option: "--max-sessions", detail: "must be at least 1" })
      if (Option.isNone(config.http) && Option.isSome(config.healthPort)) {
        return yield* new HarnessError.ConfigError({ option: "--health-port", detail: "serves the health of --http: stdio has its host to watch it" })
      }
      return yield* opener
    })
    return Option.match(config.http, {
      onNone: () =>
        Effect.scoped(Effect.flatMap(Effect.zip(checked, serving), ([made, { serveStdio }]) => serveStdio(made))).pipe(
          Effect.onInterrupt(() => Console.error("stopped mcp stdio"))
        ),
      onSome: (port) =>
        Serve.untilInterrupted(Effect.gen(function*() {
          if (port < 0 || port > 65_535) return yield* new HarnessError.ConfigError({ option: "--http", detail: `a port is 0 to 65535, got ${port}` })
          const bearerToken = yield* httpAuth(config)
          const health = yield* Health.start(config, {
            command: "mcp",
            ...(Option.isSome(config.session) ? { namespace: config.namespace, principal: yield* Connection.principalOf(config) } : {})
          })
          const made = yield* checked
          const server = yield* (yield* serving).serveHttp({
            open: made.open,
            port,
            host: config.host,
            bearerToken,
            allowedHosts: config.allowedHost.length === 0 ? undefined : config.allowedHost,
            maxSessions: config.maxSessions,
            idleTimeoutMs: Duration.toMillis(config.idleTimeout)
          })
          yield* health.serving({ connection: made.connection, serves: () => ({ url: server.url, session: made.label, mcpSessions: server.sessions() }) })
          return `mcp ${server.url} ${made.label}`
        }))
    })
  }
).pipe(
  Command.withDescription(
    "Serve a jitbox session as an MCP server: over stdio (default) or Streamable HTTP (--http PORT); a fresh session, a copy of --snapshot FILE per session, or the remote session --session SID. Exits 0 when stopped, 1 when it cannot start."
  )
)
