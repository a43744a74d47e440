/**
 * Installing jitbox's OpenTelemetry in a harness, a session host or a worker. `layer` provides the
 * core's `EventSink` and `ProfileSink` (after any already in the context, such as
 * `StreamPublisher`'s, which keep receiving everything) and the runtime's `TraceContext`, all
 * backed by one `DispatchTracing`. Spans go to the `OtelTracer` of `@effect/opentelemetry`
 * (`NodeSdk.layer` with a `spanProcessor`), or to the global OpenTelemetry tracer when there is
 * none; metrics are Effect metrics, exported by `NodeSdk.layer` with a `metricReader`.
 *
 * Without this layer nothing is created: the harness has no sinks and the runtime's
 * `TraceContext` is `none`.
 *
 * @since 0.1.0
 */
import { EventSink, ProfileSink } from "@jitbox/core"
import { TraceContext } from "@jitbox/runtime"
import * as Tracer from "@effect/opentelemetry/Tracer"
import * as Api from "@opentelemetry/api"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as DispatchTracing from "./DispatchTracing.js"

/** The instrumentation scope name of jitbox's spans. @since 0.1.0 @category constants */
export const scopeName = "@jitbox/otel"

/** @since 0.1.0 @category models */
export interface OtelOptions {
  /** Whether calls update the metrics too (default true). */
  readonly metrics?: boolean | undefined
  /** Whether the harnesses record base tools (`manageBaseTools`, the harness's default: true). */
  readonly baseToolsRecorded?: boolean | undefined
}

/**
 * The tracing of this process, with the tracer of the context (`OtelTracer`, else the global one).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options?: OtelOptions): Effect.Effect<DispatchTracing.DispatchTracing> =>
  Effect.map(Effect.serviceOption(Tracer.OtelTracer), (tracer) =>
    DispatchTracing.make({
      tracer: Option.getOrElse(tracer, () => Api.trace.getTracer(scopeName)),
      metrics: options?.metrics,
      baseToolsRecorded: options?.baseToolsRecorded
    }))

/**
 * `EventSink`, `ProfileSink` and `TraceContext` for a harness, a `Sessions` host or a `Worker`.
 * Sinks already in the context go on receiving everything, before these.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options?: OtelOptions
): Layer.Layer<EventSink.EventSink | ProfileSink.ProfileSink | TraceContext.TraceContext> =>
  Layer.effectContext(Effect.gen(function*() {
    const tracing = yield* make(options)
    const events = Option.getOrUndefined(yield* Effect.serviceOption(EventSink.EventSink))
    const profile = Option.getOrUndefined(yield* Effect.serviceOption(ProfileSink.ProfileSink))
    return Context.make(EventSink.EventSink, EventSink.combine(events, tracing.eventSink)).pipe(
      Context.add(ProfileSink.ProfileSink, ProfileSink.combine(profile, tracing.profileSink)),
      Context.add(TraceContext.TraceContext, tracing.traceContext)
    )
  }))
