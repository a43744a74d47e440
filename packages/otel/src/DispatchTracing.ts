/**
 * One OpenTelemetry span per dispatch, parented on the call that composed it, across processes.
 * It is the harness's `EventSink` and `ProfileSink` and the runtime's `TraceContext` at once:
 *
 * - `jit_tool_started` notes when a call started (and, for a call that came over the transport, its
 *   remote parent, read from the request's headers by `incoming`: a worker's invocation for a nested
 *   call, the caller's span for a `RemoteSession`'s call);
 * - the call's profile record (status, error type, parent call id, depth) makes its span after
 *   the fact, with explicit start and end times. A call's children finish before it does, so a
 *   finished child whose parent still runs is held by the parent and made right after it, with it
 *   as parent: every span is made once, complete, and no open span waits on the dispatch path;
 * - a call that runs on a worker needs its span's id before it finishes (its invocation carries
 *   it): `invocationHeaders` opens that span early (and its running ancestors, when their parent
 *   is known), and the record ends it;
 * - on the worker, `startInvocation` opens the invocation's span from the headers, and its nested
 *   calls carry that span back to the session.
 *
 * A base tool has no `jit_tool_started` event, only its record (when the harness's
 * `manageBaseTools` is on, its default): a call it composed waits for that record (at most
 * `maxWaitingParents` such parents at once; the oldest are made roots past that). With
 * `baseToolsRecorded: false` (harnesses with `manageBaseTools: false`) such a call is a root at once.
 * Everything is bounded: at most `maxPendingCalls` running calls are tracked per process.
 *
 * @since 0.1.0
 */
import type { EventSink, JitToolEvent, ProfileSink } from "@jitbox/core"
import type { TraceContext } from "@jitbox/runtime"
import * as Api from "@opentelemetry/api"
import * as Attributes from "./Attributes.js"
import * as Metrics from "./Metrics.js"
import * as Propagation from "./Propagation.js"

/** Running calls tracked at most, per process; past that a call gets no span. @since 0.1.0 @category constants */
export const maxPendingCalls = 100_000

/** Untraced running parents (base tools) whose finished children wait for their record, at most. @since 0.1.0 @category constants */
export const maxWaitingParents = 4_096

/** @since 0.1.0 @category models */
export interface DispatchTracingOptions {
  /** The tracer spans are made with. */
  readonly tracer: Api.Tracer
  /** Whether calls also update the metrics (default true). */
  readonly metrics?: boolean | undefined
  /** Whether the harnesses record their base tools (`manageBaseTools`, default true): then a call a base tool composed waits for its parent's span. */
  readonly baseToolsRecorded?: boolean | undefined
}

/** @since 0.1.0 @category models */
export interface DispatchTracing {
  readonly eventSink: EventSink.EventSinkShape
  readonly profileSink: ProfileSink.ProfileSinkShape
  readonly traceContext: TraceContext.TraceContextShape
}

type Record = ProfileSink.SessionProfileRecord

/** A finished call waiting for its parent's span. */
interface Finished {
  readonly record: Record
  readonly start: number
  readonly end: number
  children: Array<Finished> | undefined
}

/** A call that started and has not finished. */
interface Pending {
  readonly toolName: string
  readonly origin: string
  readonly start: number
  /** The remote caller of a call that came over the transport (a worker invocation, a `RemoteSession`'s caller), from its request's headers. */
  readonly remote: Api.Context | undefined
  span: Api.Span | undefined
  children: Array<Finished> | undefined
}

const A = Attributes.span

const now = (): number => performance.timeOrigin + performance.now()

const key = (sessionId: string, callId: string): string => `${sessionId}\u0000${callId}`

const failed = (status: string): boolean => status !== "completed"

const join = <A>(a: Array<A> | undefined, b: Array<A> | undefined): Array<A> | undefined =>
  a === undefined ? b : b === undefined ? a : a.concat(b)

/** @since 0.1.0 @category constructors */
export const make = (options: DispatchTracingOptions): DispatchTracing => {
  const tracer = options.tracer
  const metrics = options.metrics ?? true
  const pending = new Map<string, Pending>()
  const baseToolsRecorded = options.baseToolsRecorded ?? true
  /** Finished calls composed by a call with no started event (a base tool), by that parent's key. */
  const waiting = new Map<string, Array<Finished>>()
  /** The remote parent of the call being dispatched right now (set only inside `incoming`). */
  let arriving: { readonly sessionId: string; readonly context: Api.Context } | undefined

  /** Every attribute of a finished call's span (set at once: each `setAttribute` is checked again). */
  const attributes = (record: Record): Api.Attributes => {
    const out: Api.Attributes = {
      [A.operationName]: "execute_tool",
      [A.toolName]: record.tool_name,
      [A.callId]: record.call_id,
      [A.origin]: record.origin,
      [A.sessionId]: record.session_id,
      [A.depth]: record.depth,
      [A.status]: record.status
    }
    if (record.parent_call_id !== null) out[A.parentCallId] = record.parent_call_id
    if (record.error_type !== null) out[A.errorType] = record.error_type
    return out
  }

  /** Makes the span of a finished call under `parent`, then its held children under it. */
  const emit = (finished: Finished, parent: Api.Context): void => {
    const record = finished.record
    const span = tracer.startSpan(
      Attributes.spanName.dispatch(record.tool_name),
      { kind: Api.SpanKind.INTERNAL, startTime: finished.start, attributes: attributes(record) },
      parent
    )
    if (failed(record.status)) span.setStatus({ code: Api.SpanStatusCode.ERROR, message: record.error_type ?? record.status })
    span.end(finished.end)
    const children = finished.children
    if (children === undefined) return
    const context = Api.trace.setSpan(Api.ROOT_CONTEXT, span)
    for (const child of children) emit(child, context)
  }

  /** The span of the running call `callId`, opened now if need be; undefined when its place in the trace is not known. */
  const open = (sessionId: string, callId: string, parentCallId: string | null, depth: number): Api.Span | undefined => {
    const call = pending.get(key(sessionId, callId))
    if (call === undefined) return undefined
    if (call.span !== undefined) return call.span
    let parent: Api.Context
    if (call.remote !== undefined) parent = call.remote
    else if (parentCallId === null || depth <= 1) parent = Api.ROOT_CONTEXT
    else {
      // the parent runs (it composed this call); its own place is known when it came from a
      // worker (its remote parent) or sits at depth 1
      const parentCall = pending.get(key(sessionId, parentCallId))
      const parentSpan = parentCall === undefined
        ? undefined
        : parentCall.span ?? (depth === 2 || parentCall.remote !== undefined ? open(sessionId, parentCallId, null, depth - 1) : undefined)
      if (parentSpan === undefined) return undefined
      parent = Api.trace.setSpan(Api.ROOT_CONTEXT, parentSpan)
    }
    const span = tracer.startSpan(
      Attributes.spanName.dispatch(call.toolName),
      {
        kind: Api.SpanKind.INTERNAL,
        startTime: call.start,
        attributes: { [A.operationName]: "execute_tool", [A.toolName]: call.toolName, [A.callId]: callId, [A.origin]: call.origin }
      },
      parent
    )
    call.span = span
    return span
  }

  const started = (sessionId: string, callId: string, toolName: string, origin: string): void => {
    if (metrics) Metrics.callInFlight(origin, 1)
    if (pending.size >= maxPendingCalls) return
    const remote = arriving !== undefined && arriving.sessionId === sessionId ? arriving.context : undefined
    pending.set(key(sessionId, callId), { toolName, origin, start: now(), remote, span: undefined, children: undefined })
  }

  const eventSink: EventSink.EventSinkShape = {
    emit: (event: JitToolEvent.JitToolEvent) => {
      if (event.name === "jit_tool_started") {
        const payload = event.payload
        started(payload.session_id, payload.tool_call_id, payload.tool_name, payload.origin)
      } else if (event.name === "jit_tool_completed" && metrics) {
        Metrics.callInFlight(event.payload.origin, -1)
      }
    }
  }

  const profileSink: ProfileSink.ProfileSinkShape = {
    record: (record) => {
      if (metrics) Metrics.recordCall(record.tool_name, record.origin, record.status, record.duration_ms)
      const k = key(record.session_id, record.call_id)
      const call = pending.get(k)
      if (call !== undefined) pending.delete(k)
      let orphans: Array<Finished> | undefined
      if (waiting.size !== 0) {
        orphans = waiting.get(k)
        if (orphans !== undefined) waiting.delete(k)
      }
      const end = now()
      const span = call?.span
      if (span !== undefined) {
        span.setAttributes(attributes(record))
        if (failed(record.status)) span.setStatus({ code: Api.SpanStatusCode.ERROR, message: record.error_type ?? record.status })
        span.end(end)
        const children = join(call!.children, orphans)
        if (children !== undefined) {
          const context = Api.trace.setSpan(Api.ROOT_CONTEXT, span)
          for (const child of children) emit(child, context)
        }
        return
      }
      const finished: Finished = { record, start: end - record.duration_ms, end, children: join(call?.children, orphans) }
      if (call?.remote !== undefined) return emit(finished, call.remote)
      if (record.parent_call_id === null) return emit(finished, Api.ROOT_CONTEXT)
      const parentKey = key(record.session_id, record.parent_call_id)
      const parent = pending.get(parentKey)
      if (parent === undefined) {
        if (!baseToolsRecorded) return emit(finished, Api.ROOT_CONTEXT)
        const siblings = waiting.get(parentKey)
        if (siblings !== undefined) return void siblings.push(finished)
        if (waiting.size >= maxWaitingParents) {
          const [oldest, children] = waiting.entries().next().value!
          waiting.delete(oldest)
          for (const child of children) emit(child, Api.ROOT_CONTEXT)
        }
        return void waiting.set(parentKey, [finished])
      }
      if (parent.span !== undefined) return emit(finished, Api.trace.setSpan(Api.ROOT_CONTEXT, parent.span))
      ;(parent.children ??= []).push(finished)
    }
  }

  const traceContext: TraceContext.TraceContextShape = {
    invocationHeaders: (context) => {
      const span = open(context.sessionId, context.callId, context.parentCallId, context.depth)
      return span === undefined ? undefined : Propagation.inject(span)
    },
    startInvocation: (headers, invocation) => {
      const parent = Propagation.extract(headers) ?? Api.ROOT_CONTEXT
      const span = tracer.startSpan(Attributes.spanName.invocation(invocation.toolName), {
        kind: Api.SpanKind.SERVER,
        attributes: {
          [A.toolName]: invocation.toolName,
          [A.callId]: invocation.callId,
          [A.sessionId]: invocation.sessionId,
          [A.workerId]: invocation.workerId,
          [A.depth]: invocation.depth
        }
      }, parent)
      if (metrics) Metrics.workerInvocation(invocation.workerId, 1)
      return {
        headers: Propagation.inject(span),
        end: (outcome, errorType) => {
          if (metrics) Metrics.workerInvocation(invocation.workerId, -1)
          span.setAttribute(A.outcome, outcome)
          if (errorType !== null) span.setAttribute(A.errorType, errorType)
          if (outcome !== "ok") span.setStatus({ code: Api.SpanStatusCode.ERROR, message: errorType ?? outcome })
          span.end()
        }
      }
    },
    incoming: (sessionId, headers, dispatch) => {
      const context = Propagation.extract(headers)
      if (context === undefined) return dispatch()
      const outer = arriving
      arriving = { sessionId, context }
      try {
        return dispatch()
      } finally {
        arriving = outer
      }
    }
  }

  return { eventSink, profileSink, traceContext }
}
