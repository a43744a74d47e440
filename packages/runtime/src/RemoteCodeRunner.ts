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
 * @since 0.1.0
 */
import { CodeRunner, type CodeLanguage } from "@jitbox/core"
import { ToolError } from "@jitbox/sandbox"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Envelope from "./Envelope.js"
import * as Ids from "./Ids.js"
import { attempt, failed, okValue } from "./internal/replies.js"
import { valueOf } from "./Protocol.js"
import * as Subject from "./Subject.js"
import * as TraceContext from "./TraceContext.js"
import * as Transport from "./Transport.js"
import { TransportError } from "./TransportError.js"
import type * as WireError from "./WireError.js"
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
  languages: ["javascript", "typescript", "python", "bash"] as ReadonlyArray<CodeLanguage>,
  activateTimeoutMs: 60_000,
  timeoutMs: 300_000,
  busyRetryMs: 5,
  deadlineGraceMs: 2_000,
  nestedConcurrency: 64
} as const

interface Registered {
  readonly sessionId: Ids.SessionId
  /** The harness that activated it: its `grant` is read at each message sent. */
  readonly host: CodeRunner.CallHost
  readonly versionId: string
  readonly fields: {
    readonly session_id: string
    readonly version_id: string
    readonly tool_name: string
    readonly language: CodeLanguage
    readonly entrypoint: string
    readonly entry_file: string
  }
}

interface Watched {
  lastHeard: number
  readonly lost: AbortController
  readonly toolName: string
  readonly callId: string
  readonly subject: Subject.Subject
}

interface SessionEntry {
  host: CodeRunner.CallHost
  /** Package bytes by version id, with how many activations hold each. */
  readonly packages: Map<string, { readonly bytes: Uint8Array; holders: number }>
  readonly activations: Set<string>
  /** Invocations in flight, by call id: when a worker last said it runs them. */
  readonly watched: Map<string, Watched>
  readonly scope: Scope.CloseableScope
  readonly serving: Promise<void>
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** What a remote failure becomes for the harness: a tool's own error keeps its type and message, as the sandbox reports it. */
const rethrow = (error: WireError.WireError): never => {
  if (error._tag === "ToolFailure") throw new ToolError.ToolError({ toolName: error.toolName, errorType: error.errorType, message: error.detail ?? "" })
  throw error
}

/**
 * A remote code runner, serving each session's packages and nested calls while it has
 * activations, until the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: RemoteCodeRunnerOptions
): Effect.Effect<CodeRunner.CodeRunnerShape, never, Scope.Scope | Transport.Transport> =>
  Effect.gen(function*() {
    const transport = yield* Transport.Transport
    const trace = yield* TraceContext.current
    const runtime = yield* Effect.runtime<never>()
    const run = Runtime.runPromise(runtime)
    const outer = yield* Effect.scope
    const clock = yield* Effect.clock
    const prefix = options.prefix
    const pool = Ids.poolName(options.pool ?? defaults.pool)
    const languages = options.languages ?? defaults.languages
    const busyRetryMs = options.busyRetryMs ?? defaults.busyRetryMs
    const heartbeatMs = options.heartbeatMs ?? WorkerProtocol.heartbeatDefaults.intervalMs
    const heartbeatMisses = options.heartbeatMisses ?? WorkerProtocol.heartbeatDefaults.misses
    const sessions = new Map<string, SessionEntry>()
    const activations = new Map<string, Registered>()
    /** Sessions whose subjects are being given up: serving them again waits, so two responders never answer one session. */
    const closing = new Map<string, Promise<void>>()

    const packageHandler = (entry: SessionEntry): Transport.Handler => (request) => {
      const message = Envelope.decode(WorkerProtocol.PackageRequest, request.data, request.subject)
      if (message instanceof TransportError) return Envelope.error(message)
      const found = entry.packages.get(message.version_id)
      if (found === undefined) {
        return Envelope.error(
          new TransportError({ reason: "InvalidArgument", subject: request.subject, detail: `no package version ${message.version_id} here` })
        )
      }
      const size = WorkerProtocol.chunkBytes(transport.maxPayload())
      const chunks = Math.max(1, Math.ceil(found.bytes.length / size))
      if (!(Number.isInteger(message.chunk) && message.chunk >= 0 && message.chunk < chunks)) {
        return Envelope.error(
          new TransportError({ reason: "InvalidArgument", subject: request.subject, detail: `chunk ${message.chunk} of ${chunks}` })
        )
      }
      const data = Buffer.from(found.bytes.subarray(message.chunk * size, (message.chunk + 1) * size)).toString("base64")
      return Envelope.ok(JSON.stringify({ chunks, data }))
    }

    const nestedHandler = (entry: SessionEntry): Transport.Handler => (request) => {
      const subject = request.subject
      const message = Envelope.decode(WorkerProtocol.NestedRequest, request.data, subject)
      if (message instanceof TransportError) return Envelope.error(message)
      const host = entry.host
      const dispatch = () => host.callTool(message.parent_call_id, message.name, message.args ?? {})
      return attempt(() => trace.incoming(host.sessionId, request.headers, dispatch)).then(
        (value) => okValue(value, `the result of '${message.name}'`, subject),
        failed(message.name)
      )
    }

    const sessionEntry = (sessionId: Ids.SessionId, host: CodeRunner.CallHost): SessionEntry => {
      const found = sessions.get(sessionId)
      if (found !== undefined) {
        found.host = host
        return found
      }
      const scope = Effect.runSync(Scope.fork(outer, ExecutionStrategy.sequential))
      const entry: SessionEntry = { host, packages: new Map(), activations: new Set(), watched: new Map(), scope, serving: undefined as never }
      const heartbeats = Effect.flatMap(transport.subscribe(Subject.sessionHeartbeat(prefix, sessionId)), (stream) =>
        Effect.forkScoped(Effect.ignore(Stream.runForEach(stream, (message) =>
          Effect.sync(() => {
            const beat = Envelope.decode(WorkerProtocol.Heartbeat, message.data, message.subject)
            if (beat instanceof TransportError) return
            const now = Date.now()
            for (const callId of beat.call_ids) {
              const watched = entry.watched.get(callId)
              if (watched !== undefined) watched.lastHeard = now
            }
          })))))
      const serve = Effect.all([
        heartbeats,
        transport.serve(Subject.sessionPackage(prefix, sessionId), { concurrency: 8 }, packageHandler(entry)),
        transport.serve(
          Subject.sessionNested(prefix, sessionId),
          { concurrency: options.nestedConcurrency ?? defaults.nestedConcurrency },
          nestedHandler(entry)
        )
      ])
      const previous = closing.get(sessionId) ?? Promise.resolve()
      ;(entry as { serving: Promise<void> }).serving = previous.then(() => run(Scope.extend(serve, scope))).then(() => undefined)
      sessions.set(sessionId, entry)
      return entry
    }

    const forget = (activationId: string): void => {
      const registered = activations.get(activationId)
      if (registered === undefined) return
      activations.delete(activationId)
      const entry = sessions.get(registered.sessionId)
      if (entry === undefined) return
      entry.activations.delete(activationId)
      const held = entry.packages.get(registered.versionId)
      if (held !== undefined && --held.holders === 0) entry.packages.delete(registered.versionId)
      if (entry.activations.size === 0) {
        sessions.delete(registered.sessionId)
        const closed = run(Scope.close(entry.scope, Exit.void))
        closing.set(registered.sessionId, closed)
        void closed.then(() => {
          if (closing.get(registered.sessionId) === closed) closing.delete(registered.sessionId)
        })
      }
    }

    // One watchdog for every invocation in flight (not a timer per call): a call not heard of
    // for `heartbeatMisses` intervals fails `WorkerLost`. It holds the process open only while
    // calls are in flight.
    const inflight = new Set<Watched>()
    const lostAfterMs = heartbeatMs * heartbeatMisses
    const watchdog = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const timer = setInterval(() => {
          const now = Date.now()
          for (const watched of inflight) {
            if (now - watched.lastHeard <= lostAfterMs || watched.lost.signal.aborted) continue
            watched.lost.abort(
              new TransportError({
                reason: "WorkerLost",
                subject: watched.subject,
                detail: `no heartbeat for '${watched.toolName}' (call ${watched.callId}) in ${lostAfterMs} ms: the worker died or lost its connection`
              })
            )
          }
        }, heartbeatMs)
        timer.unref()
        return timer
      }),
      (timer) => Effect.sync(() => clearInterval(timer))
    )
    const watch = (watched: Watched) => {
      inflight.add(watched)
      if (inflight.size === 1) watchdog.ref()
    }
    const unwatch = (watched: Watched) => {
      inflight.delete(watched)
      if (inflight.size === 0) watchdog.unref()
    }

    /**
     * Sends until an answer other than `Busy` comes or `deadline` passes. The last wait lasts
     * `graceMs` past the deadline: the harness's own timer (the signal) and the worker's answer
     * say what happened at the deadline, not the transport's timeout racing them.
     */
    const request = async (
      subject: Subject.Subject,
      body: string,
      deadline: number,
      graceMs: number,
      signal?: AbortSignal,
      watched?: Watched,
      headers?: Transport.Headers
    ): Promise<unknown> => {
      // Busy answers are retried after a pause that doubles from busyRetryMs up to 32 times it
      let pause = busyRetryMs
      for (;;) {
        if (watched !== undefined) watched.lastHeard = Date.now()
        const timeoutMs = Math.max(1, deadline + graceMs - clock.unsafeCurrentTimeMillis())
        try {
          const reply = await transport.request(subject, body, { timeoutMs, signal, headers })
          const answer = valueOf(reply, subject)
          return "value" in answer ? answer.value : rethrow(answer)
        } catch (error) {
          const lost: unknown = watched?.lost.signal.reason
          if (lost instanceof TransportError && lost.reason === "WorkerLost") throw lost
          // the caller gave up (the harness's deadline, a cancel): its reason says what happened,
          // not the worker's answer to the cancel racing it
          if (lost !== undefined && watched?.lost.signal.aborted === true) throw lost
          const busy = error instanceof TransportError && error.reason === "Busy"
          if (!busy || signal?.aborted === true || clock.unsafeCurrentTimeMillis() + pause >= deadline) throw error
          await sleep(pause)
          pause = Math.min(pause * 2, busyRetryMs * 32)
        }
      }
    }

    /** Where a message of the session goes, and the lease it carries. */
    const route = (host: CodeRunner.CallHost, language: CodeLanguage): { readonly subject: Subject.Subject; readonly lease: { lease_id?: string } } => {
      const lease = host.grant?.()
      if (lease === undefined) return { subject: Subject.workerInvoke(prefix, pool, language), lease: {} }
      const subject = lease.sandboxNodeId !== undefined
        ? Subject.nodeInvoke(prefix, Ids.workerId(lease.sandboxNodeId), language)
        : Subject.workerInvoke(prefix, lease.location === undefined ? pool : Ids.poolName(lease.location), language)
      return { subject, lease: { lease_id: lease.id } }
    }

    const activate = async (source: CodeRunner.CodeSource, host: CodeRunner.CallHost): Promise<CodeRunner.CodeToolMetadata> => {
      const sessionId = Ids.sessionId(source.sessionId)
      const entry = sessionEntry(sessionId, host)
      entry.activations.add(source.activationId)
      const held = entry.packages.get(source.versionId)
      if (held !== undefined) held.holders++
      else entry.packages.set(source.versionId, { bytes: Buffer.from(JSON.stringify({ files: source.files })), holders: 1 })
      const registered: Registered = {
        sessionId,
        host,
        versionId: source.versionId,
        fields: {
          session_id: sessionId,
          version_id: source.versionId,
          tool_name: source.toolName,
          language: source.language,
          entrypoint: source.entrypoint,
          entry_file: source.entryFile
        }
      }
      activations.set(source.activationId, registered)
      try {
        await entry.serving
        const { lease, subject } = route(host, source.language)
        const deadline = clock.unsafeCurrentTimeMillis() + (options.activateTimeoutMs ?? defaults.activateTimeoutMs)
        const metadata = await request(subject, Envelope.encode("activate", { ...registered.fields, ...lease }), deadline, 0)
        const decoded = Envelope.decodeParsed(WorkerProtocol.Metadata, metadata, subject)
        if (decoded instanceof TransportError) throw decoded
        return decoded as CodeRunner.CodeToolMetadata
      } catch (error) {
        forget(source.activationId)
        throw error
      }
    }

    const invoke = async (invocation: CodeRunner.Invocation, signal: AbortSignal | undefined): Promise<unknown> => {
      const registered = activations.get(invocation.activationId)
      if (registered === undefined) {
        throw new TransportError({ reason: "InvalidArgument", subject: "", detail: `activation ${invocation.activationId} was released` })
      }
      const { lease, subject } = route(registered.host, registered.fields.language)
      const context = invocation.context
      const now = clock.unsafeCurrentTimeMillis()
      const timeoutMs = context.deadline === null ? null : Math.max(1, context.deadline - now)
      const args = Envelope.encodeValue(invocation.args, `the arguments of '${invocation.toolName}'`, subject)
      if (args instanceof TransportError) throw args
      const body = Envelope.withValue("invoke", {
        ...registered.fields,
        ...lease,
        tool_name: invocation.toolName,
        call_id: context.callId,
        parent_call_id: context.parentCallId,
        depth: context.depth,
        within_change: context.withinChange,
        timeout_ms: timeoutMs
      }, "args", args)
      const onAbort = () => {
        try {
          transport.publish(
            Subject.workerCancel(prefix),
            Envelope.encode("cancel", { session_id: registered.sessionId, call_id: context.callId })
          )
        } catch {
          // the transport is closed: no worker runs it any more
        }
      }
      signal?.addEventListener("abort", onAbort, { once: true })
      const entry = sessions.get(registered.sessionId)
      const lost = new AbortController()
      const watched: Watched = { lastHeard: Date.now(), lost, toolName: invocation.toolName, callId: context.callId, subject }
      entry?.watched.set(context.callId, watched)
      const onCallerAbort = () => lost.abort(signal?.reason)
      if (signal?.aborted === true) lost.abort(signal.reason)
      signal?.addEventListener("abort", onCallerAbort, { once: true })
      // a worker that went silent may still be alive (cut off from the session): tell it to stop
      const onLost = () => {
        const reason: unknown = lost.signal.reason
        if (reason instanceof TransportError && reason.reason === "WorkerLost") onAbort()
      }
      lost.signal.addEventListener("abort", onLost, { once: true })
      watch(watched)
      try {
        return await request(
          subject,
          body,
          now + (timeoutMs ?? options.timeoutMs ?? defaults.timeoutMs),
          timeoutMs === null ? 0 : options.deadlineGraceMs ?? defaults.deadlineGraceMs,
          lost.signal,
          watched,
          trace.invocationHeaders(context)
        )
      } finally {
        unwatch(watched)
        if (entry?.watched.get(context.callId) === watched) entry.watched.delete(context.callId)
        signal?.removeEventListener("abort", onCallerAbort)
        signal?.removeEventListener("abort", onAbort)
        lost.signal.removeEventListener("abort", onLost)
      }
    }

    const runner: CodeRunner.CodeRunnerShape = {
      languages,
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
): Layer.Layer<CodeRunner.CodeRunner, never, Transport.Transport> => Layer.scoped(CodeRunner.CodeRunner, make(options))
