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
 * This module wires the sinks and the trace context; the calls tracked and where each span goes
 * are `internal/callTable`, the spans themselves `internal/callSpans`.
 *
 * @since 0.1.0
 */
import type { EventSink, JitToolEvent, ProfileSink } from "@jitbox/core"
import type { TraceContext } from "@jitbox/runtime"
import type * as Api from "@opentelemetry/api"
import * as CallSpans from "./internal/callSpans.js"
import { CallTable } from "./internal/callTable.js"
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

/** @since 0.1.0 @category constructors */
export const make = (options: DispatchTracingOptions): DispatchTracing => {
  const tracer = options.tracer
  const metrics = options.metrics ?? true
  const calls = new CallTable({ tracer, baseToolsRecorded: options.baseToolsRecorded ?? true, maxPendingCalls, maxWaitingParents })
  /** The remote parent of the call being dispatched right now (set only inside `incoming`). */
  let arriving: { readonly sessionId: string; readonly context: Api.Context } | undefined

  const eventSink: EventSink.EventSinkShape = {
    emit: (event: JitToolEvent.JitToolEvent) => {
      if (event.name === "jit_tool_started") {
        const payload = event.payload
        if (metrics) Metrics.callInFlight(payload.origin, 1)
        const remote = arriving !== undefined && arriving.sessionId === payload.session_id ? arriving.context : undefined
        calls.started(payload.session_id, payload.tool_call_id, payload.tool_name, payload.origin, remote)
      } else if (event.name === "jit_tool_completed" && metrics) {
        Metrics.callInFlight(event.payload.origin, -1)
      }
    }
  }

  const profileSink: ProfileSink.ProfileSinkShape = {
    record: (record) => {
      if (metrics) Metrics.recordCall(record.tool_name, record.origin, record.status, record.duration_ms)
      calls.finished(record)
    }
  }

  const traceContext: TraceContext.TraceContextShape = {
    invocationHeaders: (context) => {
      const span = calls.open(context.sessionId, context.callId, context.parentCallId, context.depth)
      return span === undefined ? undefined : Propagation.inject(span)
    },
    startInvocation: (headers, invocation) => CallSpans.invocation(tracer, metrics, headers, invocation),
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
