/**
 * The spans of a dispatch, as `DispatchTracing` makes them: a call's attributes, the span of a
 * finished call (made after the fact, with explicit start and end times, and then its held children
 * under it), the end of a call's span opened early, and the worker's span of an invocation.
 */
import type { ProfileSink } from "@jitbox/core"
import type { TraceContext } from "@jitbox/runtime"
import * as Api from "@opentelemetry/api"
import * as Attributes from "../Attributes.js"
import * as Metrics from "../Metrics.js"
import * as Propagation from "../Propagation.js"

export type Record = ProfileSink.SessionProfileRecord

/** A finished call waiting for its parent's span. */
export interface Finished {
  readonly record: Record
  readonly start: number
  readonly end: number
  children: Array<Finished> | undefined
}

const A = Attributes.span

const failed = (status: string): boolean => status !== "completed"

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

/** Makes each child's span under `span`. */
export const emitChildren = (tracer: Api.Tracer, children: ReadonlyArray<Finished>, span: Api.Span): void => {
  const context = Api.trace.setSpan(Api.ROOT_CONTEXT, span)
  for (const child of children) emit(tracer, child, context)
}

/** Makes the span of a finished call under `parent`, then its held children under it. */
export const emit = (tracer: Api.Tracer, finished: Finished, parent: Api.Context): void => {
  const record = finished.record
  const span = tracer.startSpan(
    Attributes.spanName.dispatch(record.tool_name),
    { kind: Api.SpanKind.INTERNAL, startTime: finished.start, attributes: attributes(record) },
    parent
  )
  if (failed(record.status)) span.setStatus({ code: Api.SpanStatusCode.ERROR, message: record.error_type ?? record.status })
  span.end(finished.end)
  if (finished.children !== undefined) emitChildren(tracer, finished.children, span)
}

/** Ends the span of a running call opened early, with its record. */
export const end = (span: Api.Span, record: Record, at: number): void => {
  span.setAttributes(attributes(record))
  if (failed(record.status)) span.setStatus({ code: Api.SpanStatusCode.ERROR, message: record.error_type ?? record.status })
  span.end(at)
}

/** Opens the span of a running call (before its record), with what its start told. */
export const open = (
  tracer: Api.Tracer,
  call: { readonly toolName: string; readonly origin: string; readonly start: number },
  callId: string,
  parent: Api.Context
): Api.Span =>
  tracer.startSpan(
    Attributes.spanName.dispatch(call.toolName),
    {
      kind: Api.SpanKind.INTERNAL,
      startTime: call.start,
      attributes: { [A.operationName]: "execute_tool", [A.toolName]: call.toolName, [A.callId]: callId, [A.origin]: call.origin }
    },
    parent
  )

/** The worker's span of an invocation, parented on its headers' context. */
export const invocation = (
  tracer: Api.Tracer,
  metrics: boolean,
  headers: Parameters<TraceContext.TraceContextShape["startInvocation"]>[0],
  invocation: Parameters<TraceContext.TraceContextShape["startInvocation"]>[1]
): ReturnType<TraceContext.TraceContextShape["startInvocation"]> => {
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
}
