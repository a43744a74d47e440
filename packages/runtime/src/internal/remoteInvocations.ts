/**
 * What a `RemoteCodeRunner` sends to workers: `activate` and `invoke` (`WorkerProtocol.worker`),
 * each routed by the grant its harness holds now (`CallHost.grant`, read at each send: the lease
 * id the worker checks, and the profile's pool or pinned worker), and sent until an answer other
 * than `Busy` comes or its deadline passes (pausing `busyRetryMs`, doubling up to 32 times it, by
 * the context's `Clock`).
 *
 * An invocation is watched by the heartbeat watchdog while it is in flight: a silent worker fails
 * it `WorkerLost` (and is told to cancel it); a cancelled call (its signal aborts) is cancelled on
 * the worker by call id (`workers.cancel`). The invocation path is Promise code.
 */
import type { Admission, CodeLanguage, CodeRunner } from "@jitbox/core"
import { ToolError } from "@jitbox/sandbox"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as Envelope from "../Envelope.js"
import * as Ids from "../Ids.js"
import { valueOf } from "../Protocol.js"
import * as Subject from "../Subject.js"
import type * as TraceContext from "../TraceContext.js"
import * as Transport from "../Transport.js"
import { ProtocolError } from "../ProtocolError.js"
import { RemoteExecutionError } from "../RemoteExecutionError.js"
import { TransportError } from "../TransportError.js"
import type * as WireError from "../WireError.js"
import * as WorkerProtocol from "../WorkerProtocol.js"
import type { Capabilities } from "./capabilities.js"
import * as ExactInvoke from "./exactInvoke.js"
import type * as Heartbeats from "./heartbeats.js"
import { noWorker } from "./missingServers.js"
import * as Wire from "./wire.js"

/** An activation the runner made: what every message about it carries, and the harness that made it. */
export interface Registered {
  readonly host: CodeRunner.CallHost
  readonly fields: Omit<WorkerProtocol.Activation, "leaseId" | "capability">
  /** Where its session keeps the capabilities it hands out. */
  readonly capabilities: Capabilities
}

export interface Options {
  readonly prefix: Subject.Prefix
  readonly pool: Ids.PoolName
  readonly busyRetryMs: number
  readonly activateTimeoutMs: number
  readonly timeoutMs: number
  readonly deadlineGraceMs: number
  readonly trace: TraceContext.TraceContextShape
  readonly watchdog: Heartbeats.Watchdog
}

export interface RemoteInvocations {
  readonly activate: (registered: Registered) => Promise<CodeRunner.CodeToolMetadata>
  readonly invoke: (registered: Registered, invocation: CodeRunner.Invocation, signal: AbortSignal | undefined) => Promise<unknown>
}

/** What a remote failure becomes for the harness: a tool's own error keeps its type and message, as the sandbox reports it. */
const rethrow = (error: WireError.WireError): never => {
  if (error._tag === "ToolFailure") throw new ToolError.ToolError({ toolName: error.toolName, errorType: error.errorType, message: error.detail ?? "" })
  throw error
}

const decodeMetadata = Schema.decodeUnknownEither(WorkerProtocol.Metadata)
const encodeCancel = Schema.encodeSync(WorkerProtocol.CancelMessage)

/** Where a message goes, and the lease it carries. */
interface Route {
  readonly subject: Subject.Subject
  readonly leaseId: Ids.LeaseId | undefined
}

/** What sending shares. */
interface Env {
  readonly options: Options
  readonly transport: Transport.TransportShape
  readonly now: () => number
  /** Pauses by the context's `Clock` (a `Busy` answer's back-off). */
  readonly sleep: (ms: number) => Promise<void>
  readonly route: (registered: Registered) => Route
  readonly cancel: (sessionId: Ids.SessionId, callId: string, capability: WorkerProtocol.Capability) => void
}

/**
 * Sends until an answer other than `Busy` comes or `deadline` passes. The last wait lasts
 * `graceMs` past the deadline: the harness's own timer (the signal) and the worker's answer
 * say what happened at the deadline, not the transport's timeout racing them.
 */
const sendUntilAnswered = async (
  { now, options, sleep, transport }: Env,
  subject: Subject.Subject,
  body: string,
  deadline: number,
  graceMs: number,
  watched?: Heartbeats.Watched,
  headers?: Transport.Headers
): Promise<unknown> => {
  const signal = watched?.lost.signal
  let pause = options.busyRetryMs
  for (;;) {
    if (watched !== undefined) options.watchdog.heard(watched)
    try {
      const reply = await transport.request(subject, body, { timeoutMs: Math.max(1, deadline + graceMs - now()), signal, headers })
      const ok = ExactInvoke.ok(reply.data)
      if (ok !== undefined) return ok.value
      const answer = valueOf(reply, subject)
      return Either.isRight(answer) ? answer.right : rethrow(answer.left)
    } catch (error) {
      // the worker went silent, or the caller gave up (the harness's deadline, a cancel): that
      // reason says what happened, not the worker's answer to the cancel racing it
      if (signal?.aborted === true && signal.reason !== undefined) throw signal.reason
      const busy = error instanceof TransportError && error.reason === "Busy"
      if (!busy || signal?.aborted === true || now() + pause >= deadline) throw noWorker(error)
      await sleep(pause)
      pause = Math.min(pause * 2, options.busyRetryMs * 32)
    }
  }
}

/** Sends one invocation, watched by the heartbeat watchdog while it is in flight, and answers its value. */
const invokeOne = async (
  env: Env,
  registered: Registered,
  invocation: CodeRunner.Invocation,
  signal: AbortSignal | undefined
): Promise<unknown> => {
  const { cancel, now, options, route } = env
  const { leaseId, subject } = route(registered)
  const context = invocation.context
  const sent = now()
  const timeoutMs = context.deadline === null ? null : Math.max(1, context.deadline - sent)
  const args = Envelope.encodeValue(invocation.args, `the arguments of '${invocation.toolName}'`, subject)
  if (Either.isLeft(args)) throw args.left
  const capabilities = registered.capabilities
  const capability = capabilities.issue(registered.fields.versionId, context.callId)
  const body = Wire.message(WorkerProtocol.worker, "invoke", {
    ...registered.fields,
    leaseId,
    capability,
    toolName: invocation.toolName,
    callId: context.callId,
    parentCallId: context.parentCallId,
    depth: context.depth,
    withinChange: context.withinChange,
    timeoutMs
  }, "args", args.right)
  const sessionId = registered.fields.sessionId
  const watched = options.watchdog.watch(sessionId, context.callId, invocation.toolName, subject)
  const lost = watched.lost
  const onCallerAbort = () => {
    cancel(sessionId, context.callId, capability)
    lost.abort(signal?.reason)
  }
  if (signal?.aborted === true) lost.abort(signal.reason)
  signal?.addEventListener("abort", onCallerAbort, { once: true })
  // a worker that went silent may still be alive (cut off from the session): tell it to stop
  const onLost = () => {
    const reason: unknown = lost.signal.reason
    if (reason instanceof RemoteExecutionError) cancel(sessionId, context.callId, capability)
  }
  lost.signal.addEventListener("abort", onLost, { once: true })
  try {
    return await sendUntilAnswered(
      env,
      subject,
      body,
      sent + (timeoutMs ?? options.timeoutMs),
      timeoutMs === null ? 0 : options.deadlineGraceMs,
      watched,
      options.trace.invocationHeaders(context)
    )
  } finally {
    capabilities.revoke(capability)
    options.watchdog.unwatch(watched)
    signal?.removeEventListener("abort", onCallerAbort)
    lost.signal.removeEventListener("abort", onLost)
  }
}

/** Asks a worker to load the activation, answering its metadata. */
const activateOne = async (env: Env, registered: Registered): Promise<CodeRunner.CodeToolMetadata> => {
  const { now, options, route } = env
  const { leaseId, subject } = route(registered)
  const capability = registered.capabilities.issue(registered.fields.versionId)
  const body = Wire.message(WorkerProtocol.worker, "activate", { ...registered.fields, leaseId, capability }, "args", undefined)
  let answer: unknown
  try {
    answer = await sendUntilAnswered(env, subject, body, now() + options.activateTimeoutMs, 0)
  } finally {
    registered.capabilities.revoke(capability)
  }
  const metadata = decodeMetadata(answer)
  if (Either.isLeft(metadata)) throw new ProtocolError({ reason: "Decode", subject, detail: `the metadata: ${metadata.left.message.slice(0, 500)}` })
  return metadata.right as CodeRunner.CodeToolMetadata
}

/** The sends of one runner, on the transport and `Clock` of the context. */
export const make = (options: Options): Effect.Effect<RemoteInvocations, never, Transport.Transport> =>
  Effect.gen(function*() {
    const transport = yield* Transport.Transport
    const clock = yield* Effect.clock
    const run = Runtime.runPromise(yield* Effect.runtime<never>())
    const now = () => clock.unsafeCurrentTimeMillis()

    /** The subject of each (pool or pinned worker, language) a grant named, made once (ids branded once, not per call). */
    const subjects = new Map<string, Subject.Subject>()
    const subjectOf = (grant: Admission.Grant | undefined, language: CodeLanguage): Subject.Subject => {
      const k = `${grant?.sandboxNodeId ?? ""}\u0000${grant?.location ?? ""}\u0000${language}`
      let found = subjects.get(k)
      if (found === undefined) {
        found = grant?.sandboxNodeId !== undefined
          ? Subject.nodeInvoke(options.prefix, Ids.workerId(grant.sandboxNodeId), language)
          : Subject.workerInvoke(options.prefix, grant?.location === undefined ? options.pool : Ids.poolName(grant.location), language)
        if (subjects.size >= 1024) subjects.clear()
        subjects.set(k, found)
      }
      return found
    }

    /** The route each activation last took, and the grant it was built for: the same grant takes it again, unchecked. */
    const routes = new WeakMap<Registered, { readonly grant: Admission.Grant | undefined; readonly route: Route }>()

    /** Where a message of the activation goes now, and the lease it carries. */
    const route = (registered: Registered): Route => {
      const grant = registered.host.grant?.()
      const last = routes.get(registered)
      if (last !== undefined && last.grant === grant) return last.route
      // the lease id is the coordinator's (a LeaseId it decoded); the worker decodes it again at its hop
      const built = { subject: subjectOf(grant, registered.fields.language), leaseId: grant?.id as Ids.LeaseId | undefined }
      routes.set(registered, { grant, route: built })
      return built
    }

    const cancel = (sessionId: Ids.SessionId, callId: string, capability: WorkerProtocol.Capability) => {
      try {
        transport.publish(
          Subject.workerCancel(options.prefix),
          JSON.stringify(encodeCancel({ v: Envelope.version, kind: "cancel", sessionId, callId, capability }))
        )
      } catch {
        // the transport is closed: no worker runs it any more
      }
    }

    const env: Env = { options, transport, now, sleep: (ms) => run(Effect.sleep(ms)), route, cancel }
    const activate = (registered: Registered) => activateOne(env, registered)
    return { activate, invoke: (registered, invocation, signal) => invokeOne(env, registered, invocation, signal) }
  })
