/**
 * What `jitbox mcp` serves, loaded only when it runs (the MCP SDK and the sandbox are not loaded
 * for the other commands, nor for `--help`): the sessions (`localSessions`, `remoteSession`) and
 * the two ways of serving them (`serveStdio`, `HttpServer.serve`).
 *
 * @since 0.1.0
 */
import { HarnessError, JitHarness, JitHarnessSnapshot, type JitPolicy } from "@jitbox/core"
import { HttpServer, McpError, ServedSession, StdioServer } from "@jitbox/mcp"
import { NatsConnection, NatsTransport } from "@jitbox/nats"
import { RemoteSession, TransportError } from "@jitbox/runtime"
import { SandboxRunner } from "@jitbox/sandbox"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Connection from "./Connection.js"
import type { McpCommandError } from "./McpCommand.js"
import type * as Telemetry from "./Telemetry.js"

/** The HTTP server (`@jitbox/mcp`'s `HttpServer.serve`). @since 0.1.0 @category serving */
export const serveHttp = HttpServer.serve

/** What the command serves, and how to open a session of it. @since 0.1.0 @category models */
export interface Opener {
  /** What the command serves, for its `ready` line. */
  readonly label: string
  /** The NATS connection a remote session is reached over. */
  readonly connection?: NatsConnection.NatsConnectionShape | undefined
  readonly open: () => Promise<ServedSession.OpenedSession>
}

const describe = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** Sessions in this process, each a harness from the snapshot (or empty), code sandboxed in subprocesses. */
export const localSessions = (
  file: Option.Option<string>,
  options: { readonly inspectionTools: "always" | "deferred" | "hidden"; readonly policy: Option.Option<JitPolicy.JitPolicyInput> },
  telemetry: Telemetry.Telemetry
): Effect.Effect<Opener, JitHarnessSnapshot.SnapshotError | HarnessError.ConfigError, Scope.Scope> =>
  Effect.gen(function*() {
    const template = yield* Option.match(file, {
      onNone: () => Effect.succeed(undefined),
      onSome: (path) =>
        Effect.tryPromise({
          try: () => JitHarnessSnapshot.load(path),
          catch: (error) =>
            error instanceof JitHarnessSnapshot.SnapshotError
              ? error
              : new JitHarnessSnapshot.SnapshotError({ reason: "Io", detail: `${path}: ${describe(error)}` })
        })
    })
    const runner = yield* Effect.acquireRelease(Effect.sync(() => SandboxRunner.make()), (made) => Effect.promise(() => made.close()))
    const harnessOptions = {
      codeExecution: "sandboxed" as const,
      runners: [runner],
      inspectionTools: options.inspectionTools,
      ...telemetry.sinks,
      ...Option.match(options.policy, { onNone: () => ({}), onSome: (policy) => ({ policy }) })
    }
    // a bad option fails now, not on the first session
    yield* Effect.try({ try: () => new JitHarness({ ...harnessOptions, sessionId: "options-check" }).release(), catch: (error) => error as HarnessError.ConfigError })
    let opened = 0
    return {
      label: Option.match(file, { onNone: () => "fresh session", onSome: (path) => `snapshot ${path}` }),
      open: async () => {
        const sessionId = `mcp-${++opened}`
        const harness = template === undefined
          ? new JitHarness({ ...harnessOptions, sessionId })
          : new JitHarness(template, { ...harnessOptions, sessionId })
        return { session: harness, events: ServedSession.eventsOf(harness), close: () => harness.release() }
      }
    }
  })

/** What reaching the session at start fails with: a session nobody stored (without `--create`) is a `ConfigError` naming `--create`. */
const unreachable = (sessionId: string, namespace: string) => (error: unknown): McpCommandError =>
  error instanceof JitHarnessSnapshot.SnapshotError && error.reason === "NotFound"
    ? new HarnessError.ConfigError({
      option: "--session",
      detail: `no session ${sessionId} is stored or active in namespace ${namespace}; check the id, or give --create to start a new session`
    })
    : error instanceof HarnessError.ConfigError || error instanceof TransportError.TransportError || error instanceof JitHarnessSnapshot.SnapshotError
    ? error
    : new McpError.McpServeError({ reason: "Session", detail: `session ${sessionId} of ${namespace}: ${describe(error)}` })

/**
 * The session `sessionId` of the namespace, over NATS, reached once before serving (activated by a
 * host, or refused when nobody stored it and `create` is off); closing an MCP session leaves it to its host.
 */
export const remoteSession = (
  config: Connection.ConnectionConfig & { readonly create: boolean },
  sessionId: string,
  telemetry: Telemetry.Telemetry
): Effect.Effect<Opener, McpCommandError, Scope.Scope> =>
  Effect.gen(function*() {
    const { namespace, prefix } = yield* Connection.prefixOf(config)
    const transport = yield* Layer.build(NatsTransport.layer.pipe(Layer.provideMerge(Connection.serving(config, `jitbox-mcp-${namespace}`))))
    const remote = yield* RemoteSession.make(sessionId, { prefix, create: config.create }).pipe(Effect.provide(transport), telemetry.provide)
    yield* Effect.tryPromise({ try: () => remote.listTools(), catch: unreachable(sessionId, namespace) })
    return {
      label: `session ${remote.sessionId} of ${namespace}`,
      connection: Context.get(transport, NatsConnection.NatsConnection),
      open: () =>
        Promise.resolve({ session: remote, events: (listener) => remote.listen(listener), close: () => Promise.resolve() })
    }
  })

/** Opens the one session stdio serves, and serves it until stdin ends or the command is interrupted. */
export const serveStdio = (opener: Opener): Effect.Effect<void, McpError.McpServeError, Scope.Scope> =>
  Effect.gen(function*() {
    const opened = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => opener.open(),
        catch: (error) => new McpError.McpServeError({ reason: "Session", detail: `${opener.label}: ${describe(error)}` })
      }),
      (session) => Effect.promise(() => session.close().catch(() => undefined))
    )
    const served = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => StdioServer.serve(opened.session, { events: opened.events }),
        catch: (error) => new McpError.McpServeError({ reason: "Session", detail: `${opener.label}: ${describe(error)}` })
      }),
      (server) => Effect.promise(() => server.close())
    )
    yield* Console.error(`ready mcp stdio ${opener.label}`)
    yield* Effect.promise(() => served.closed)
    yield* Console.error(`stopped mcp stdio ${opener.label}`)
  })

