/**
 * The one dispatch path every call goes through, whether the model asked for it, the application
 * called it, or a tool composed it: lookup → middleware → reject checks → argument validation →
 * handler → record → events, with exactly one profile record per attempt, an error-cache entry per
 * failure, and an event pair per dispatched code, text or management call.
 *
 * Plain Promise code on purpose: a runtime hop per call would cost more than the whole dispatch.
 */
import type { AdmissionShape, Grant } from "../Admission.js"
import type { Middleware } from "../Call.js"
import type { CallContext, CallHost, Invocation, InvocationContext } from "../CodeRunner.js"
import type { ErrorCache } from "../ErrorCache.js"
import type { EventFeed } from "../EventFeed.js"
import type { HarnessClockShape } from "../HarnessClock.js"
import {
  HarnessReleased,
  ToolCancelled,
  ToolRejected,
  ToolTimeout,
  ValidationError
} from "../HarnessError.js"
import * as Measure from "../Measure.js"
import type { Profiler } from "../Profiler.js"
import type { ProfileSinkShape } from "../ProfileSink.js"
import * as TextReader from "../TextReader.js"
import * as ThrownValue from "../ThrownValue.js"
import type { ToolCallStatus } from "../ToolOrigin.js"
import { LiveCall, type Session } from "./liveCall.js"
import { type CodeVersion, type Entry, type Registry, release } from "./registry.js"

export interface DispatcherOptions {
  readonly sessionId: string
  /** The id of a call that came without one, unique in this harness (the profiler derives the same). */
  readonly generatedId: (seq: number) => string
  readonly registry: Registry
  readonly admission: AdmissionShape
  readonly clock: HarnessClockShape
  readonly profiler: Profiler
  readonly errors: ErrorCache
  readonly events: EventFeed
  readonly profileSink: ProfileSinkShape | undefined
  readonly middleware: ReadonlyArray<Middleware>
  readonly maxCallDepth: number
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function"

/** Settles with `pending`, or rejects with the signal's reason as soon as it aborts. */
const abortedBy = <A>(pending: A | PromiseLike<A>, signal: AbortSignal): Promise<A> =>
  new Promise<A>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    if (signal.aborted) return onAbort()
    signal.addEventListener("abort", onAbort, { once: true })
    Promise.resolve(pending).then(
      (value) => {
        signal.removeEventListener("abort", onAbort)
        resolve(value)
      },
      (error) => {
        signal.removeEventListener("abort", onAbort)
        reject(error)
      }
    )
  })

/**
 * An invocation as a runner receives it. Its serialisable `context` is made when a runner reads
 * it, and only then does the call enter the table of live calls (whoever holds the context may
 * name the call later). An in-process runner may use `local`, the call's own handler context,
 * instead: that call enters the table only if its handler composes.
 */
class CodeInvocation implements Invocation {
  readonly toolName: string
  readonly args: unknown
  private made: CallContext | undefined

  constructor(
    readonly activationId: string,
    private readonly call: LiveCall,
    private readonly deadline: number | null
  ) {
    this.toolName = call.name
    this.args = call.args
  }

  get local(): InvocationContext {
    return this.call
  }

  get context(): CallContext {
    if (this.made !== undefined) return this.made
    this.call.register()
    return this.made = this.call.context(this.deadline)
  }
}

export class Dispatcher implements Session, CallHost {
  readonly sessionId: string
  readonly calls = new Map<string, LiveCall>()
  /** Increases when a request detaches; calls of an older epoch may not compose any more (LIFE-07). */
  epoch = 0
  /** Pending while a snapshot activates: calls wait for it. */
  activation: Promise<void> | undefined
  released = false
  private seq = 0
  private readonly o: DispatcherOptions
  private readonly limited: boolean

  constructor(options: DispatcherOptions) {
    this.o = options
    this.sessionId = options.sessionId
    this.generatedId = options.generatedId
    this.limited = options.admission.policy !== undefined
  }

  readonly generatedId: (seq: number) => string

  /** A call from the application or the model. */
  call(name: string, args: unknown, callId: string | undefined, signal: AbortSignal | undefined): Promise<unknown> {
    if (this.released) return Promise.reject(new HarnessReleased({ sessionId: this.sessionId, operation: `calling '${name}'` }))
    return this.dispatch(new LiveCall(this, ++this.seq, callId, name, args, null, null, 1, false, this.epoch, "application", signal))
  }

  /** A nested call by the running call `parentCallId`, resolved from this session's table. */
  readonly callNested = (parentCallId: string, name: string, args: unknown): Promise<unknown> => {
    if (this.released) return Promise.reject(new HarnessReleased({ sessionId: this.sessionId, operation: `calling '${name}'` }))
    const parent = this.calls.get(parentCallId)
    if (parent === undefined) {
      return Promise.reject(
        new ToolRejected({ name, reason: "NoActiveInvocation", detail: `'${name}' was called for call ${parentCallId}, which is not running` })
      )
    }
    if (parent.epoch !== this.epoch) {
      return Promise.reject(
        new ToolRejected({
          name,
          reason: "NoActiveInvocation",
          detail: `'${parent.name}' called '${name}' through a context of a request that has ended`
        })
      )
    }
    return this.dispatch(
      new LiveCall(
        this,
        ++this.seq,
        undefined,
        name,
        args,
        parent.callId,
        parent.name,
        parent.depth + 1,
        parent.withinChange,
        this.epoch,
        "composed",
        parent.cancelSignal
      )
    )
  }

  /** The CallHost face: nested calls from runners. */
  readonly callTool = this.callNested

  /** The CallHost face: the lease the session's admission holds now (for runners in another process). */
  readonly grant = (): Grant | undefined => this.o.admission.grant?.()

  /**
   * A change the application made through the API (`createTool`, …) rather than by calling the
   * management tool `toolName`: it publishes the same `jit_tool_started` / `jit_tool_completed`
   * pair (origin `management`, that tool's name), so whoever follows the events sees every change.
   * It is not a call: it has no profile record, and no middleware or budget applies.
   */
  announced<A>(toolName: string, change: () => Promise<A>): Promise<A> {
    const events = this.o.events
    if (!events.active) return change()
    const callId = this.generatedId(++this.seq)
    const payload = { session_id: this.sessionId, tool_call_id: callId, tool_name: toolName, origin: "management" as const }
    events.emit({ type: "CUSTOM", name: "jit_tool_started", payload })
    const completed = (success: boolean, errorType: string | null) =>
      events.emit({ type: "CUSTOM", name: "jit_tool_completed", payload: { ...payload, success, error_type: errorType } })
    return change().then((value) => {
      completed(true, null)
      return value
    }, (thrown: unknown) => {
      completed(false, ThrownValue.errorType(thrown))
      throw thrown
    })
  }

  /** Runs one example of a version that is not installed yet, as part of the change that builds it. Not recorded. */
  readonly runExample = async (version: CodeVersion, name: string, input: unknown): Promise<unknown> => {
    const call = new LiveCall(this, ++this.seq, undefined, name, input, null, null, 1, true, this.epoch, "example", undefined)
    call.register()
    try {
      return await version.runner.invoke({ activationId: version.activationId, toolName: name, args: input, context: call.context(null) }, undefined)
    } finally {
      call.end()
    }
  }

  private dispatch(call: LiveCall): Promise<unknown> {
    if (this.activation !== undefined) return this.activation.then(() => this.dispatch(call))
    const entry = this.o.registry.entries.get(call.name)
    if (entry === undefined) return Promise.reject(this.o.registry.notFound(call.name))
    call.origin = entry.origin
    const middleware = this.o.middleware
    if (middleware.length === 0) return this.attempt(entry, call)
    const run = (index: number): Promise<unknown> =>
      index === middleware.length ? this.attempt(entry, call) : middleware[index]!(call, () => run(index + 1))
    return run(0)
  }

  private rejection(entry: Entry, depth: number): ToolRejected | undefined {
    const name = entry.name
    if (depth > this.o.maxCallDepth) {
      return new ToolRejected({
        name,
        reason: "DepthExceeded",
        detail: `calling '${name}' would nest ${depth} calls deep; maxCallDepth is ${this.o.maxCallDepth}`
      })
    }
    if (entry.origin === "base") {
      if (entry.binding === undefined) {
        return new ToolRejected({
          name,
          reason: "MissingBinding",
          detail: `base tool '${name}' has no binding in this harness; the application must supply it`
        })
      }
      if (!this.o.registry.manageBaseTools) return undefined
    } else if (entry.origin === "management") {
      return undefined
    }
    const unloaded = this.o.registry.unloaded
    if (unloaded.size !== 0 && unloaded.has(name)) {
      return new ToolRejected({ name, reason: "Unloaded", detail: `tool '${name}' is unloaded; load it with load_tool first` })
    }
    if (entry.origin === "code" && !this.o.admission.trySpendInvocation()) {
      const refusal = this.o.admission.refusal?.()
      return new ToolRejected({
        name,
        reason: refusal === undefined ? "BudgetExhausted" : "NotAdmitted",
        detail: refusal === undefined
          ? `the policy's ${this.o.admission.policy?.maximumInvocations} invocations are spent; '${name}' was not run`
          : `${refusal}; '${name}' was not run`
      })
    }
    return undefined
  }

  private invokeCode(version: CodeVersion, call: LiveCall): unknown {
    if (!this.limited) return version.runner.invoke(new CodeInvocation(version.activationId, call, null), call.cancelSignal)
    return this.invokeAdmitted(version, call)
  }

  /**
   * A code call under a policy: a concurrency slot (given up if the call is abandoned while it
   * waits), then its deadline. A call nested in code that runs on a slot runs on that slot: its
   * caller waits for it, and taking one more would leave a composition deeper than the slots
   * waiting behind itself until it timed out.
   */
  private async invokeAdmitted(version: CodeVersion, call: LiveCall): Promise<unknown> {
    const signal = call.signal
    const release = this.onCallersSlot(call) ? undefined : await this.o.admission.acquire(signal)
    call.onSlot = true
    const seconds = this.o.admission.timeoutSeconds(version.duration)
    const clock = this.o.clock
    const deadline = seconds === null ? null : clock.now() + seconds * 1000
    const cancelTimer = seconds === null
      ? undefined
      : clock.schedule(seconds * 1000, () => call.abort(new ToolTimeout({ name: call.name, seconds })))
    try {
      return await version.runner.invoke(new CodeInvocation(version.activationId, call, deadline), signal)
    } finally {
      call.onSlot = false
      cancelTimer?.()
      release?.()
    }
  }

  /** Whether a caller of the call (through base and text tools too) runs code on a slot now. */
  private onCallersSlot(call: LiveCall): boolean {
    for (let id = call.parentCallId; id !== null;) {
      const caller = this.calls.get(id)
      if (caller === undefined) return false
      if (caller.onSlot) return true
      id = caller.parentCallId
    }
    return false
  }

  /**
   * One attempt. A handler that answers synchronously (most base tools, many code tools) settles
   * without an extra await: the promise the caller gets is the only one made.
   */
  private attempt(entry: Entry, call: LiveCall): Promise<unknown> {
    const started = performance.now()
    call.startedAt = started
    const origin = entry.origin
    const args = call.args
    const recorded = origin !== "base" || this.o.registry.manageBaseTools
    const rejected = this.rejection(entry, call.depth)
    if (rejected !== undefined) {
      call.end()
      if (recorded) this.fail(call, started, "rejected", rejected)
      return Promise.reject(rejected)
    }
    const events = this.o.events
    const emits = origin !== "base" && events.active
    if (emits) {
      events.emit({
        type: "CUSTOM",
        name: "jit_tool_started",
        payload: { session_id: this.sessionId, tool_call_id: call.callId, tool_name: entry.name, origin }
      })
    }
    let version: CodeVersion | undefined
    let pending: unknown
    try {
      const validate = origin === "base"
        ? entry.binding!.validate
        : origin === "code"
        ? entry.version.validate
        : origin === "text"
        ? TextReader.validate
        : entry.validate
      const problems = validate(args)
      if (problems !== undefined) throw new ValidationError({ name: entry.name, issues: problems })
      switch (origin) {
        case "base":
          pending = entry.binding!.handler(args, call)
          break
        case "code":
          version = entry.version
          version.inflight++
          pending = this.invokeCode(version, call)
          break
        case "text":
          pending = TextReader.read(entry.name, entry.version.body, args as never)
          break
        case "management":
          pending = entry.handler(args, call)
          break
      }
    } catch (thrown) {
      return Promise.reject(this.failed(entry, call, started, thrown, version, recorded, emits))
    }
    const signal = call.cancelSignal
    if (signal === undefined && !isThenable(pending)) {
      return Promise.resolve(this.succeeded(entry, call, started, pending, version, recorded, emits))
    }
    return this.settle(entry, call, started, signal === undefined ? pending : abortedBy(pending, signal), version, recorded, emits)
  }

  private async settle(
    entry: Entry,
    call: LiveCall,
    started: number,
    pending: unknown,
    version: CodeVersion | undefined,
    recorded: boolean,
    emits: boolean
  ): Promise<unknown> {
    let result: unknown
    try {
      result = await pending
    } catch (thrown) {
      throw this.failed(entry, call, started, thrown, version, recorded, emits)
    }
    return this.succeeded(entry, call, started, result, version, recorded, emits)
  }

  private succeeded(
    entry: Entry,
    call: LiveCall,
    started: number,
    result: unknown,
    version: CodeVersion | undefined,
    recorded: boolean,
    emits: boolean
  ): unknown {
    this.ended(call, version)
    if (recorded) this.finish(call, started, "completed", Measure.output(result), null)
    if (emits) this.completed(entry, call, true, null)
    return result
  }

  /** Records a failure and answers what the caller gets: the thrown value, or `ToolCancelled` when the caller gave up. */
  private failed(
    entry: Entry,
    call: LiveCall,
    started: number,
    thrown: unknown,
    version: CodeVersion | undefined,
    recorded: boolean,
    emits: boolean
  ): unknown {
    this.ended(call, version)
    if (call.callerAborted) {
      const cancelled = new ToolCancelled({ name: entry.name, callId: call.callId })
      if (recorded) this.finish(call, started, "cancelled", null, cancelled._tag)
      if (emits) this.completed(entry, call, false, cancelled._tag)
      return cancelled
    }
    if (recorded) this.fail(call, started, "failed", thrown)
    if (emits) this.completed(entry, call, false, ThrownValue.errorType(thrown))
    return thrown
  }

  private ended(call: LiveCall, version: CodeVersion | undefined): void {
    call.end()
    if (version !== undefined && --version.inflight === 0 && version.retired) void release(version)
  }

  private completed(entry: Entry, call: LiveCall, success: boolean, errorType: string | null): void {
    if (!this.o.events.active) return
    this.o.events.emit({
      type: "CUSTOM",
      name: "jit_tool_completed",
      payload: {
        session_id: this.sessionId,
        tool_call_id: call.callId,
        tool_name: entry.name,
        origin: entry.origin as "code" | "text" | "management",
        success,
        error_type: errorType
      }
    })
  }

  private finish(call: LiveCall, started: number, status: ToolCallStatus, outputChars: number | null, errorType: string | null): void {
    const duration = performance.now() - started
    const inputChars = Measure.input(call.args)
    this.o.profiler.add(call.seq, call.givenId, call.name, call.origin, status, duration, inputChars, outputChars, call.callerToolName, errorType)
    const sink = this.o.profileSink
    if (sink === undefined) return
    try {
      sink.record({
        session_id: this.sessionId,
        call_id: call.callId,
        tool_name: call.name,
        origin: call.origin,
        status,
        duration_ms: duration,
        input_chars: inputChars,
        output_chars: outputChars,
        caller_tool_name: call.callerToolName,
        error_type: errorType,
        parent_call_id: call.parentCallId,
        depth: call.depth
      })
    } catch {
      // a sink's failure is its own; dispatch goes on
    }
  }

  private fail(call: LiveCall, started: number, status: "failed" | "rejected", thrown: unknown): void {
    const errorType = ThrownValue.errorType(thrown)
    const message = ThrownValue.message(thrown)
    this.finish(call, started, status, Measure.message(message), errorType)
    this.o.errors.add({ toolName: call.name, errorType, status, message, callId: call.callId, callerToolName: call.callerToolName })
  }

  /** Cancels every call still running (the harness was released). */
  cancelAll(reason: unknown): void {
    for (const call of Array.from(this.calls.values())) call.abort(reason, true)
  }
}
