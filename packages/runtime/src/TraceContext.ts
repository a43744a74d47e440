/**
 * The seam that carries a trace across the transport without the runtime knowing any tracing
 * library. Three places use it:
 *
 * - the session's `RemoteCodeRunner`, sending an invocation to a worker: `invocationHeaders`
 *   answers the headers that carry the call's context (W3C `traceparent` / `tracestate` for
 *   OpenTelemetry);
 * - the `Worker`, running an invocation: `startInvocation` opens the worker's side of it from the
 *   request's headers, answers the headers the invocation's nested calls carry back to the
 *   session, and is ended with the outcome;
 * - the session's handlers of calls that arrive over the transport (a worker's nested call on
 *   `session.<sid>.nested`, a `RemoteSession`'s call on `session.<sid>.call`): `incoming` runs the
 *   call's dispatch with the context its request carried; the harness emits the call's
 *   `jit_tool_started` event synchronously inside `dispatch`, so an implementation that is also the
 *   harness's event sink can parent the call's span on it.
 *
 * Headers are hints for observability only: an implementation bounds what it reads, ignores what
 * does not parse, and nothing decides authority from them (leases, parents and depths come from
 * the session's own tables). Without a `TraceContext` in the context the runtime uses `none`,
 * which does nothing and allocates nothing.
 *
 * @since 0.1.0
 */
import type { CodeRunner } from "@jitbox/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Headers } from "./Transport.js"

/** What the worker knows of an invocation it starts. @since 0.1.0 @category models */
export interface WorkerInvocation {
  readonly workerId: string
  readonly sessionId: string
  readonly toolName: string
  readonly callId: string
  readonly parentCallId: string | null
  readonly depth: number
}

/** The worker's side of one invocation while it runs. @since 0.1.0 @category models */
export interface InvocationTrace {
  /** What the invocation's nested calls carry to the session, or `undefined` for nothing. */
  readonly headers: Headers | undefined
  /** Called once when the invocation has finished; never throws. */
  readonly end: (outcome: "ok" | "failed" | "cancelled", errorType: string | null) => void
}

/** @since 0.1.0 @category models */
export interface TraceContextShape {
  /** Session side: the headers an invocation of the running call `context` carries to a worker. */
  readonly invocationHeaders: (context: CodeRunner.CallContext) => Headers | undefined
  /** Worker side: an invocation arrived with `headers` (untrusted, possibly empty). */
  readonly startInvocation: (headers: Headers, invocation: WorkerInvocation) => InvocationTrace
  /** Session side: runs `dispatch` (which dispatches a call that arrived over the transport, synchronously) in the context its request carried. */
  readonly incoming: <A>(sessionId: string, headers: Headers, dispatch: () => A) => A
}

/** @since 0.1.0 @category tags */
export class TraceContext extends Context.Tag("@jitbox/runtime/TraceContext")<TraceContext, TraceContextShape>() {}

const untraced: InvocationTrace = { headers: undefined, end: () => {} }

/** Carries nothing: the default when no `TraceContext` is in the context. @since 0.1.0 @category constructors */
export const none: TraceContextShape = {
  invocationHeaders: () => undefined,
  startInvocation: () => untraced,
  incoming: (_sessionId, _headers, dispatch) => dispatch()
}

/** The `TraceContext` in the context, or `none`. @since 0.1.0 @category accessors */
export const current: Effect.Effect<TraceContextShape> = Effect.map(Effect.serviceOption(TraceContext), Option.getOrElse(() => none))

/** @since 0.1.0 @category layers */
export const layer = (shape: TraceContextShape): Layer.Layer<TraceContext> => Layer.succeed(TraceContext, shape)
