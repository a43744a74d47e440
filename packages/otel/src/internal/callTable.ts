/**
 * The calls `DispatchTracing` tracks, and where each finished call's span goes. A started call is
 * pending until its record (at most `maxPendingCalls`); a finished call is made at once under its
 * remote parent, as a root, or under its parent's open span, or else held: by its running parent
 * (made right after it), or, when the parent has no started event (a base tool), in `waiting`
 * under the parent's key until the parent's record (at most `maxWaitingParents` parents; the
 * oldest are made roots past that). `open` opens a running call's span early (a worker's call).
 */
import * as Api from "@opentelemetry/api"
import * as CallSpans from "./callSpans.js"

/** A call that started and has not finished. */
interface Pending {
  readonly toolName: string
  readonly origin: string
  readonly start: number
  /** The remote caller of a call that came over the transport (a worker invocation, a `RemoteSession`'s caller), from its request's headers. */
  readonly remote: Api.Context | undefined
  span: Api.Span | undefined
  children: Array<CallSpans.Finished> | undefined
}

const now = (): number => performance.timeOrigin + performance.now()

const key = (sessionId: string, callId: string): string => `${sessionId}\u0000${callId}`

const join = <A>(a: Array<A> | undefined, b: Array<A> | undefined): Array<A> | undefined =>
  a === undefined ? b : b === undefined ? a : a.concat(b)

export interface CallTableOptions {
  readonly tracer: Api.Tracer
  readonly baseToolsRecorded: boolean
  readonly maxPendingCalls: number
  readonly maxWaitingParents: number
}

export class CallTable {
  private readonly pending = new Map<string, Pending>()
  /** Finished calls composed by a call with no started event (a base tool), by that parent's key. */
  private readonly waiting = new Map<string, Array<CallSpans.Finished>>()

  constructor(private readonly options: CallTableOptions) {}

  /** Notes a call's start (and its remote parent, for a call that came over the transport). */
  started(sessionId: string, callId: string, toolName: string, origin: string, remote: Api.Context | undefined): void {
    if (this.pending.size >= this.options.maxPendingCalls) return
    this.pending.set(key(sessionId, callId), { toolName, origin, start: now(), remote, span: undefined, children: undefined })
  }

  /** The span of the running call `callId`, opened now if need be; undefined when its place in the trace is not known. */
  open(sessionId: string, callId: string, parentCallId: string | null, depth: number): Api.Span | undefined {
    const call = this.pending.get(key(sessionId, callId))
    if (call === undefined) return undefined
    if (call.span !== undefined) return call.span
    let parent: Api.Context
    if (call.remote !== undefined) parent = call.remote
    else if (parentCallId === null || depth <= 1) parent = Api.ROOT_CONTEXT
    else {
      // the parent runs (it composed this call); its own place is known when it came from a
      // worker (its remote parent) or sits at depth 1
      const parentCall = this.pending.get(key(sessionId, parentCallId))
      const parentSpan = parentCall === undefined
        ? undefined
        : parentCall.span ?? (depth === 2 || parentCall.remote !== undefined ? this.open(sessionId, parentCallId, null, depth - 1) : undefined)
      if (parentSpan === undefined) return undefined
      parent = Api.trace.setSpan(Api.ROOT_CONTEXT, parentSpan)
    }
    call.span = CallSpans.open(this.options.tracer, call, callId, parent)
    return call.span
  }

  /** A call's record: ends its span, or makes it (and what it held), or holds it for its parent's. */
  finished(record: CallSpans.Record): void {
    const k = key(record.session_id, record.call_id)
    const call = this.pending.get(k)
    if (call !== undefined) this.pending.delete(k)
    let orphans: Array<CallSpans.Finished> | undefined
    if (this.waiting.size !== 0) {
      orphans = this.waiting.get(k)
      if (orphans !== undefined) this.waiting.delete(k)
    }
    // a call whose start was seen lasts what its record measured from then: the record may arrive
    // later than the call ended, and a start computed back from its arrival would come after the
    // starts of the calls it composed
    const start = call === undefined ? now() - record.duration_ms : call.start
    const end = start + record.duration_ms
    const children = join(call?.children, orphans)
    const span = call?.span
    if (span !== undefined) {
      CallSpans.end(span, record, end)
      if (children !== undefined) CallSpans.emitChildren(this.options.tracer, children, span)
      return
    }
    const finished: CallSpans.Finished = { record, start, end, children }
    if (call?.remote !== undefined) return CallSpans.emit(this.options.tracer, finished, call.remote)
    if (record.parent_call_id === null) return CallSpans.emit(this.options.tracer, finished, Api.ROOT_CONTEXT)
    this.place(finished, key(record.session_id, record.parent_call_id))
  }

  /** Makes a finished call under its parent's span, or holds it for the parent (see the module comment). */
  private place(finished: CallSpans.Finished, parentKey: string): void {
    const tracer = this.options.tracer
    const parent = this.pending.get(parentKey)
    if (parent !== undefined) {
      if (parent.span !== undefined) return CallSpans.emit(tracer, finished, Api.trace.setSpan(Api.ROOT_CONTEXT, parent.span))
      ;(parent.children ??= []).push(finished)
      return
    }
    if (!this.options.baseToolsRecorded) return CallSpans.emit(tracer, finished, Api.ROOT_CONTEXT)
    const siblings = this.waiting.get(parentKey)
    if (siblings !== undefined) return void siblings.push(finished)
    if (this.waiting.size >= this.options.maxWaitingParents) {
      const [oldest, children] = this.waiting.entries().next().value!
      this.waiting.delete(oldest)
      for (const child of children) CallSpans.emit(tracer, child, Api.ROOT_CONTEXT)
    }
    this.waiting.set(parentKey, [finished])
  }
}
