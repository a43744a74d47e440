/**
 * A worker's invocations: the table of those running (by session and call id), and what acts on
 * it.
 *
 * - `run` runs one invocation in its activation, with the deadline it carried (`timeoutMs` from
 *   now, by the context's `Clock`), and answers the reply text;
 * - the deadline backstop: the session cancels a call at its deadline; if no cancel came,
 *   `DeadlineBackstopMs` later the worker aborts it itself. One fiber sweeps the table every
 *   `sweepMs` by the `Clock` (not a timer per call);
 * - cancels: a `cancel` on `workers.cancel` naming (session, call id) aborts that invocation;
 * - nested calls: a child's `harness.callTool` goes to `session.<sid>.nested`, within the running
 *   call's deadline (or `nestedTimeoutMs`), aborted with it, carrying its trace headers;
 * - `calls` lists what runs, for the heartbeats.
 *
 * The per-invocation path is Promise code; Effect runs the loops.
 */
import { HarnessError, ThrownValue, type CodeRunner } from "@jitbox/core"
import type { SandboxRunner } from "@jitbox/sandbox"
import type * as Clock from "effect/Clock"
import * as Either from "effect/Either"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Envelope from "../Envelope.js"
import type * as Ids from "../Ids.js"
import { valueOf } from "../Protocol.js"
import * as Subject from "../Subject.js"
import type * as TraceContext from "../TraceContext.js"
import * as Transport from "../Transport.js"
import { TransportError } from "../TransportError.js"
import * as WorkerProtocol from "../WorkerProtocol.js"
import type { Activation, Activations } from "./activations.js"
import { okValue } from "./replies.js"
import * as Wire from "./wire.js"

/** How long past a call's deadline the worker waits for the session's cancel before it aborts the call itself. */
export const DeadlineBackstopMs = 1_000

/** How often the backstop looks for invocations past it. */
export const sweepMs = 100

/** A finished invocation, as `onInvocation` hears of it. */
export interface Finished {
  readonly workerId: Ids.WorkerId
  readonly sessionId: string
  readonly toolName: string
  readonly callId: string
  readonly outcome: "ok" | "failed" | "cancelled"
}

interface Running {
  readonly sessionId: Ids.SessionId
  readonly callId: string
  /** What the session gave this invocation: its nested calls carry it, and only a cancel with it stops it. */
  readonly capability: WorkerProtocol.Capability
  readonly controller: AbortController
  readonly deadline: number | null
  readonly trace: TraceContext.InvocationTrace
}

export interface Options {
  readonly prefix: Subject.Prefix
  readonly workerId: Ids.WorkerId
  readonly sandbox: SandboxRunner.SandboxRunner
  readonly trace: TraceContext.TraceContextShape
  readonly nestedTimeoutMs: number
  readonly onInvocation: ((invocation: Finished) => void) | undefined
}

/** One invocation to run: the request, its activation, and what the worker's serving knows of it. */
export interface Run {
  readonly request: WorkerProtocol.Invocation
  readonly entry: Activation
  readonly activations: Activations
  /** Aborts when the worker drains past its grace. */
  readonly drained: AbortSignal
  readonly subject: string
  readonly headers: Transport.Headers
}

export interface Invocations {
  readonly run: (run: Run) => Promise<string>
  /** Whether the call runs here (its nested calls take no slot). */
  readonly has: (sessionId: string, callId: string) => boolean
  readonly size: () => number
  /** The calls running now, by session. */
  readonly calls: () => ReadonlyMap<Ids.SessionId, ReadonlyArray<string>>
  /** The host the code of `sessionId` calls back into. */
  readonly hostFor: (sessionId: Ids.SessionId) => CodeRunner.CallHost
}

const key = (sessionId: string, callId: string): string => `${sessionId}\u0000${callId}`

/** What the functions on the running table share. */
interface Table {
  readonly options: Options
  readonly transport: Transport.TransportShape
  readonly clock: Clock.Clock
  readonly running: Map<string, Running>
}

const finish = (options: Options, request: WorkerProtocol.Invocation, outcome: Finished["outcome"]) => {
  try {
    options.onInvocation?.({ workerId: options.workerId, sessionId: request.sessionId, toolName: request.toolName, callId: request.callId, outcome })
  } catch {
    // a log must not change the invocation's answer
  }
}

/** Runs one invocation in its activation and answers the reply text; it is in the running table while it runs. */
const runOne = async (
  { clock, options, running }: Table,
  { activations, drained, entry, headers, request, subject }: Run
): Promise<string> => {
  activations.hold(entry)
  const runningKey = key(request.sessionId, request.callId)
  const controller = new AbortController()
  const deadline = request.timeoutMs === null ? null : clock.unsafeCurrentTimeMillis() + request.timeoutMs
  const abort = () => controller.abort()
  drained.addEventListener("abort", abort, { once: true })
  const traced = options.trace.startInvocation(headers, {
    workerId: options.workerId,
    sessionId: request.sessionId,
    toolName: request.toolName,
    callId: request.callId,
    parentCallId: request.parentCallId,
    depth: request.depth
  })
  running.set(runningKey, { sessionId: request.sessionId, callId: request.callId, capability: request.capability, controller, deadline, trace: traced })
  let finished = false
  let errorType: string | null = null
  try {
    await entry.ready
    const result = await options.sandbox.invoke(
      {
        activationId: entry.activationId,
        toolName: request.toolName,
        args: request.args,
        context: {
          sessionId: request.sessionId,
          callId: request.callId,
          parentCallId: request.parentCallId,
          depth: request.depth,
          withinChange: request.withinChange,
          // the sandbox's own bound is the backstop too, so it never races the session's timeout
          deadline: deadline === null ? null : deadline + DeadlineBackstopMs
        }
      },
      controller.signal
    )
    finished = true
    return okValue(result, `the result of '${request.toolName}'`, subject)
  } catch (error) {
    errorType = ThrownValue.errorType(error)
    throw error
  } finally {
    drained.removeEventListener("abort", abort)
    running.delete(runningKey)
    activations.release(entry)
    const outcome = finished ? "ok" : controller.signal.aborted ? "cancelled" : "failed"
    traced.end(outcome, errorType)
    finish(options, request, outcome)
  }
}

/** The host the code of `sessionId` calls back into: nested calls within the running call's deadline, aborted with it. */
const nestedHost = ({ clock, options, running, transport }: Table, sessionId: Ids.SessionId): CodeRunner.CallHost => {
  const subject = Subject.sessionNested(options.prefix, sessionId)
  return {
    sessionId,
    callTool: async (parentCallId, name, args) => {
      const parent = running.get(key(sessionId, parentCallId))
      if (parent === undefined) {
        throw new HarnessError.ToolRejected({ name, reason: "NoActiveInvocation", detail: `call '${parentCallId}' does not run on this worker` })
      }
      const timeoutMs = parent.deadline === null ? options.nestedTimeoutMs : Math.max(1, parent.deadline - clock.unsafeCurrentTimeMillis())
      const json = Envelope.encodeValue(args, `the arguments of '${name}'`, subject)
      if (Either.isLeft(json)) throw json.left
      const body = Wire.message(WorkerProtocol.session, "nested", { parentCallId, capability: parent.capability, name }, "args", json.right)
      const reply = await transport.request(subject, body, { timeoutMs, signal: parent.controller.signal, headers: parent.trace.headers })
      const answer = valueOf(reply, subject)
      if (Either.isLeft(answer)) throw answer.left
      return answer.right
    }
  }
}

/** The invocations of a worker; its cancel subscription and backstop run until the scope closes. */
export const make = (options: Options): Effect.Effect<Invocations, TransportError, Scope.Scope | Transport.Transport> =>
  Effect.gen(function*() {
    const transport = yield* Transport.Transport
    const clock = yield* Effect.clock
    const running = new Map<string, Running>()

    // Cancels first, so a cancel never misses an invocation taken after the worker joined.
    const cancels = yield* transport.subscribe(Subject.workerCancel(options.prefix))
    yield* cancels.pipe(
      Stream.runForEach((message) =>
        Effect.sync(() => {
          const cancel = Envelope.decode(WorkerProtocol.CancelMessage, message.data, message.subject)
          if (Either.isLeft(cancel)) return
          const call = running.get(key(cancel.right.sessionId, cancel.right.callId))
          if (call !== undefined && call.capability === cancel.right.capability) call.controller.abort()
        })
      ),
      Effect.ignore,
      Effect.forkScoped
    )

    const backstop = Effect.sync(() => {
      const now = clock.unsafeCurrentTimeMillis()
      for (const call of running.values()) {
        if (call.deadline !== null && now >= call.deadline + DeadlineBackstopMs) call.controller.abort()
      }
    })
    yield* Effect.forkScoped(Effect.interruptible(Effect.repeat(backstop, Schedule.spaced(sweepMs))))

    const table: Table = { options, transport, clock, running }
    const hostFor = (sessionId: Ids.SessionId) => nestedHost(table, sessionId)
    const run: Invocations["run"] = (invocation) => runOne(table, invocation)

    const calls = () => {
      const bySession = new Map<Ids.SessionId, Array<string>>()
      for (const call of running.values()) {
        const found = bySession.get(call.sessionId)
        if (found === undefined) bySession.set(call.sessionId, [call.callId])
        else found.push(call.callId)
      }
      return bySession
    }

    return { run, has: (sessionId, callId) => running.has(key(sessionId, callId)), size: () => running.size, calls, hostFor }
  })
