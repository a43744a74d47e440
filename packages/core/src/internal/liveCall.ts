/**
 * One call while it runs, and the session's table of the calls that can be addressed by id.
 *
 * A call enters the table when something may name it later: it runs code (a runner's nested
 * calls come back naming it), its handler took `callTool`, or it has a signal of its own (it can
 * be cancelled: by a deadline, or by a release that cancels every running call). A nested call names its parent's id,
 * and the parent's depth, session, change flag and signal are read from the table, never taken
 * from whoever made the nested call. Calls that nothing can address (a base tool that never
 * composes) stay out of the table: that keeps a map write off the plain dispatch path.
 *
 * Its signal is made on first use: most handlers never read it.
 */
import type { Call, CallSource } from "../Call.js"
import type { CallContext, InvocationContext } from "../CodeRunner.js"
import type { ToolOrigin } from "../ToolOrigin.js"

/** What a live call needs of its session. */
export interface Session {
  readonly sessionId: string
  readonly calls: Map<string, LiveCall>
  /** The id of a call that came without one. */
  readonly generatedId: (seq: number) => string
  readonly callNested: (parentCallId: string, name: string, args: unknown) => Promise<unknown>
}

export class LiveCall implements Call, InvocationContext {
  origin: ToolOrigin = "unknown"
  startedAt = 0
  /** Set when the call was cancelled (by its caller, or by a cancel naming it). */
  cancelled = false
  /** Set while the call runs code on a concurrency slot (its own, or its caller's). */
  onSlot = false
  private id: string | undefined
  private controller: AbortController | undefined
  private registered = false
  private forward: (() => void) | undefined

  constructor(
    private readonly session: Session,
    readonly seq: number,
    /** The id the caller gave, if any. */
    readonly givenId: string | undefined,
    readonly name: string,
    readonly args: unknown,
    readonly parentCallId: string | null,
    readonly callerToolName: string | null,
    readonly depth: number,
    readonly withinChange: boolean,
    readonly epoch: number,
    readonly source: CallSource,
    private readonly callerSignal: AbortSignal | undefined
  ) {
    this.id = givenId
  }

  get callId(): string {
    return this.id ??= this.session.generatedId(this.seq)
  }

  get toolName(): string {
    return this.name
  }

  /** A signal that fires when the caller's does, or when this call is aborted. */
  get signal(): AbortSignal {
    return this.ensureController().signal
  }

  /** The signal that cancels this call now, if there is one yet. */
  get cancelSignal(): AbortSignal | undefined {
    return this.controller === undefined ? this.callerSignal : this.controller.signal
  }

  /** Whether the caller gave up (as opposed to a timeout, which aborts with its own reason). */
  get callerAborted(): boolean {
    return this.cancelled || this.callerSignal?.aborted === true
  }

  get callTool(): (name: string, args?: unknown) => Promise<unknown> {
    this.register()
    const callId = this.callId
    return (name, args = {}) => this.session.callNested(callId, name, args)
  }

  /** Aborts the call with `reason`; `cancel` marks it as given up by its caller. */
  abort(reason: unknown, cancel = false): void {
    if (cancel) this.cancelled = true
    const controller = this.ensureController()
    if (!controller.signal.aborted) controller.abort(reason)
  }

  /** The call's own controller; a call that can be aborted can be named, so it enters the table. */
  ensureController(): AbortController {
    if (this.controller !== undefined) return this.controller
    const controller = new AbortController()
    this.controller = controller
    this.register()
    const caller = this.callerSignal
    if (caller !== undefined) {
      if (caller.aborted) controller.abort(caller.reason)
      else {
        this.forward = () => controller.abort(caller.reason)
        caller.addEventListener("abort", this.forward, { once: true })
      }
    }
    return controller
  }

  /** Makes the call addressable by its id until it ends. */
  register(): void {
    if (this.registered) return
    this.registered = true
    this.session.calls.set(this.callId, this)
  }

  /** The call is over: it leaves the table and stops following its caller's signal. */
  end(): void {
    if (this.forward !== undefined) {
      this.callerSignal!.removeEventListener("abort", this.forward)
      this.forward = undefined
    }
    if (!this.registered) return
    this.registered = false
    if (this.session.calls.get(this.callId) === this) this.session.calls.delete(this.callId)
  }

  context(deadline: number | null): CallContext {
    return {
      sessionId: this.session.sessionId,
      callId: this.callId,
      parentCallId: this.parentCallId,
      depth: this.depth,
      withinChange: this.withinChange,
      deadline
    }
  }
}
