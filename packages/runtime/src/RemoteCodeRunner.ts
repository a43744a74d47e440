/**
 * Core's `CodeRunner` for sessions whose code runs on workers (`Worker`), anywhere on the
 * transport. Put it in the context of `Sessions` (`RemoteCodeRunner.layer`) and every session's
 * harness runs its code tools remotely, unchanged:
 *
 * - `activate` registers the package with the session (so workers can fetch it by version on
 *   `session.<sid>.package`, in chunks) and asks a worker of the pool to load it, which answers
 *   the tool's metadata (so load errors still surface at create/update time);
 * - `invoke` sends the invocation to the queue group of its language and awaits the result, with
 *   the milliseconds left to the call's deadline; a `Busy` answer is retried until the deadline;
 *   a worker that closes mid-invocation fails that invocation with a typed `TransportError`
 *   (`Closed`) and the session keeps working;
 * - a nested `harness.callTool` from code on a worker arrives on `session.<sid>.nested` and goes
 *   into the harness by the parent's call id (the harness resolves parent and depth itself);
 * - a cancelled call (its signal aborts) is cancelled on the worker by call id (`workers.cancel`);
 * - a session admitted by the coordinator (`Sessions` with `admission`) hands its lease with the
 *   host it activates with (`CallHost.grant`, read at each send): each message carries its lease
 *   id, which the worker checks with the coordinator, and goes to its profile's pool (`location`)
 *   or pinned worker (`sandboxNodeId`);
 * - with a `TraceContext` in the context, an invocation carries the call's trace context in its
 *   headers, and a nested call is dispatched in the context its request carried;
 * - `release` forgets the activation; a session with no activation left stops serving its
 *   package and nested subjects.
 *
 * It is a composition of parts in `internal/`: `remoteSessions` (what each session serves its
 * workers), `packageTransfer` (the session's end of the package chunks), `remoteInvocations` (what
 * is sent, routed and retried) and `heartbeats` (the watchdog). Its time is the context's `Clock`.
 *
 * @since 0.1.0
 */
import { CodeRunner, type CodeLanguage, type HarnessError } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Ids from "./Ids.js"
import * as Heartbeats from "./internal/heartbeats.js"
import * as RemoteInvocations from "./internal/remoteInvocations.js"
import * as RemoteSessions from "./internal/remoteSessions.js"
import type * as Subject from "./Subject.js"
import * as TraceContext from "./TraceContext.js"
import type * as Transport from "./Transport.js"
import { TransportError } from "./TransportError.js"
import * as WorkerProtocol from "./WorkerProtocol.js"

/** @since 0.1.0 @category models */
export interface RemoteCodeRunnerOptions {
  readonly prefix: Subject.Prefix
  /** The worker pool invocations go to (default `default`). */
  readonly pool?: string | undefined
  /** The languages the pool runs (default: all four). */
  readonly languages?: ReadonlyArray<CodeLanguage> | undefined
  /** How long an activation (fetch and load on a worker) may take (default 60 000 ms). */
  readonly activateTimeoutMs?: number | undefined
  /** How long an invocation without a deadline may take (default 300 000 ms). */
  readonly timeoutMs?: number | undefined
  /** The first pause before sending again an invocation every worker answered `Busy` (default 5 ms); it doubles on each `Busy`, up to 32 times this. */
  readonly busyRetryMs?: number | undefined
  /** How long past a call's deadline its answer is awaited, so the harness and the worker report the timeout (default 2 000 ms). */
  readonly deadlineGraceMs?: number | undefined
  /** The workers' heartbeat interval (default 1 000 ms); a call not heard of for `heartbeatMisses` intervals fails `WorkerLost`. */
  readonly heartbeatMs?: number | undefined
  /** Heartbeats an invocation may miss (default 3). */
  readonly heartbeatMisses?: number | undefined
  /** Nested calls from workers handled at once per session (default 64). */
  readonly nestedConcurrency?: number | undefined
}

/** @since 0.1.0 @category constants */
export const defaults = {
  pool: "default",
  languages: ["javascript", "typescript", "python", "bash", "csharp"] as ReadonlyArray<CodeLanguage>,
  activateTimeoutMs: 60_000,
  timeoutMs: 300_000,
  busyRetryMs: 5,
  deadlineGraceMs: 2_000,
  nestedConcurrency: 64
} as const

const decodeSessionId = Schema.decodeUnknownEither(Ids.SessionId)

/** The runner's parts: the heartbeat watchdog, the sessions it serves and what it sends. */
const parts = (options: RemoteCodeRunnerOptions) =>
  Effect.gen(function*() {
    const trace = yield* TraceContext.current
    const pool = yield* Ids.decode(Ids.PoolName, "pool")(options.pool ?? defaults.pool)
    const watchdog = yield* Heartbeats.watchdog({
      prefix: options.prefix,
      intervalMs: options.heartbeatMs ?? WorkerProtocol.heartbeatDefaults.intervalMs,
      misses: options.heartbeatMisses ?? WorkerProtocol.heartbeatDefaults.misses
    })
    const sessions = yield* RemoteSessions.make({
      prefix: options.prefix,
      nestedConcurrency: options.nestedConcurrency ?? defaults.nestedConcurrency,
      trace,
      watchdog
    })
    const send = yield* RemoteInvocations.make({
      prefix: options.prefix,
      pool,
      busyRetryMs: options.busyRetryMs ?? defaults.busyRetryMs,
      activateTimeoutMs: options.activateTimeoutMs ?? defaults.activateTimeoutMs,
      timeoutMs: options.timeoutMs ?? defaults.timeoutMs,
      deadlineGraceMs: options.deadlineGraceMs ?? defaults.deadlineGraceMs,
      trace,
      watchdog
    })
    return { sessions, send }
  })

/**
 * A remote code runner, serving each session's packages and nested calls while it has
 * activations, until the scope closes. A bad `pool` fails with `ConfigError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: RemoteCodeRunnerOptions
): Effect.Effect<CodeRunner.CodeRunnerShape, HarnessError.ConfigError, Scope.Scope | Transport.Transport> =>
  Effect.gen(function*() {
    const { send, sessions } = yield* parts(options)
    const activations = new Map<string, RemoteInvocations.Registered & { readonly versionId: string }>()

    const forget = (activationId: string): void => {
      const registered = activations.get(activationId)
      if (registered === undefined) return
      activations.delete(activationId)
      const sessionId = registered.fields.sessionId
      const entry = sessions.get(sessionId)
      if (entry === undefined) return
      entry.activations.delete(activationId)
      entry.packages.drop(registered.versionId)
      if (entry.activations.size === 0) sessions.close(sessionId)
    }

    const activate = async (source: CodeRunner.CodeSource, host: CodeRunner.CallHost): Promise<CodeRunner.CodeToolMetadata> => {
      const sessionId = decodeSessionId(source.sessionId)
      if (Either.isLeft(sessionId)) throw new TransportError({ reason: "InvalidArgument", subject: "", detail: `session id '${source.sessionId}': ${sessionId.left.message.slice(0, 200)}` })
      const entry = sessions.open(sessionId.right, host)
      entry.activations.add(source.activationId)
      entry.packages.hold(source.versionId, source.files)
      const registered = {
        host,
        capabilities: entry.capabilities,
        versionId: source.versionId,
        fields: {
          sessionId: sessionId.right,
          versionId: source.versionId,
          toolName: source.toolName,
          language: source.language,
          entrypoint: source.entrypoint,
          entryFile: source.entryFile
        }
      }
      activations.set(source.activationId, registered)
      try {
        await entry.serving
        return await send.activate(registered)
      } catch (error) {
        forget(source.activationId)
        throw error
      }
    }

    const invoke = (invocation: CodeRunner.Invocation, signal: AbortSignal | undefined): Promise<unknown> => {
      const registered = activations.get(invocation.activationId)
      if (registered === undefined) {
        return Promise.reject(new TransportError({ reason: "InvalidArgument", subject: "", detail: `activation ${invocation.activationId} was released` }))
      }
      return send.invoke(registered, invocation, signal)
    }

    const runner: CodeRunner.CodeRunnerShape = {
      languages: options.languages ?? defaults.languages,
      activate,
      invoke,
      release: (activationId) => {
        forget(activationId)
        return Promise.resolve()
      }
    }
    return runner
  })

/**
 * `CodeRunner` as a remote runner: provide it to `Sessions` (with a `Transport`) and every
 * session runs its code on the pool's workers. An admitted session's lease comes with its harness
 * (`CallHost.grant`), so any number of hosts and runners share a process without crossing.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: RemoteCodeRunnerOptions
): Layer.Layer<CodeRunner.CodeRunner, HarnessError.ConfigError, Transport.Transport> => Layer.scoped(CodeRunner.CodeRunner, make(options))
