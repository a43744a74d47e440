/**
 * OpenTelemetry for the serving commands (`worker`, `sessions`, `mcp`): `--otlp URL` (environment
 * variable OTEL_EXPORTER_OTLP_ENDPOINT) installs `Otel.layer()` of @jitbox/otel under
 * `NodeSdk.layer` of @effect/opentelemetry, with the OTLP/HTTP exporters posting spans to
 * `URL/v1/traces` and metrics to `URL/v1/metrics` as the service the command names. A call
 * composed across processes (a session host, its workers) forms one trace: each process exports
 * its own spans, parented through the `traceparent` the invocations carry.
 *
 * Metrics are exported every 10 s (OTEL_METRIC_EXPORT_INTERVAL, in milliseconds) and once more
 * when the command stops.
 *
 * Without the option nothing of OpenTelemetry is loaded: the SDK, the exporters and @jitbox/otel
 * are imported only when it is given, and the command runs with no sinks and `TraceContext.none`.
 *
 * The SDK is installed in the command's scope before anything else, so it is shut down last: when
 * SIGTERM closes the scope, the worker drains (its last spans end) and then the provider's
 * shutdown flushes every span and a last reading of the metrics.
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"
import { EventSink, HarnessError, ProfileSink } from "@jitbox/core"
import type { SessionLeases, TraceContext, Worker } from "@jitbox/runtime"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"

/** @since 0.1.0 @category constants */
export const defaults = {
  /** How often the metrics are exported, in milliseconds (and once more when the command stops); environment variable OTEL_METRIC_EXPORT_INTERVAL. */
  metricsIntervalMs: 10_000,
  /** How long stopping may wait for the last spans and metrics to be exported, in milliseconds. */
  shutdownTimeoutMs: 10_000
} as const

/** The metrics' export interval: OTEL_METRIC_EXPORT_INTERVAL (milliseconds, ≥ 100), else the default. */
const metricsInterval = Config.integer("OTEL_METRIC_EXPORT_INTERVAL").pipe(
  Config.validate({ message: "expected an integer number of milliseconds ≥ 100", validation: (ms) => ms >= 100 }),
  Config.withDefault(defaults.metricsIntervalMs)
)

/** @since 0.1.0 @category options */
export const otlp = Options.text("otlp").pipe(
  Options.withDescription(
    "Export OpenTelemetry spans and metrics over OTLP/HTTP to this endpoint (http://collector:4318: posts to /v1/traces and /v1/metrics); environment variable OTEL_EXPORTER_OTLP_ENDPOINT; default: no telemetry"
  ),
  Options.withFallbackConfig(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT")),
  Options.optional
)

/** What the OpenTelemetry layer provides. @since 0.1.0 @category models */
export type Services = EventSink.EventSink | ProfileSink.ProfileSink | TraceContext.TraceContext

/** The telemetry of one command: installed, or absent (then every member does nothing). @since 0.1.0 @category models */
export interface Telemetry {
  /** Whether `--otlp` installed OpenTelemetry. */
  readonly enabled: boolean
  /** Runs `effect` with the sinks and `TraceContext` of OpenTelemetry (unchanged when absent). */
  readonly provide: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, Exclude<R, Services>>
  /** The sinks, for a harness made with `new JitHarness(...)`. */
  readonly sinks: {
    readonly eventSink?: EventSink.EventSinkShape | undefined
    readonly profileSink?: ProfileSink.ProfileSinkShape | undefined
  }
  /** Gauges `worker`'s capacity and load until the scope closes. */
  readonly watchWorker: (worker: Worker.Worker, concurrency: number) => Effect.Effect<void, never, Scope.Scope>
  /** Gauges the lease of every session in `leases` (`Sessions.leases`) until the scope closes. */
  readonly watchLeases: (leases: SessionLeases.SessionLeasesShape) => Effect.Effect<void, never, Scope.Scope>
}

/** @since 0.1.0 @category constructors */
export const absent: Telemetry = {
  enabled: false,
  provide: (effect) => effect as Effect.Effect<any, any, any>,
  sinks: {},
  watchWorker: () => Effect.void,
  watchLeases: () => Effect.void
}

/**
 * The endpoint `--otlp` names, without a trailing slash; anything but an http(s) URL fails `ConfigError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const endpointOf = (text: string): Effect.Effect<string, HarnessError.ConfigError> =>
  Effect.try({
    try: () => {
      const url = new URL(text.trim())
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error(`expected an http or https URL, got ${url.protocol}`)
      return url.href.replace(/\/+$/, "")
    },
    catch: (error) =>
      new HarnessError.ConfigError({ option: "--otlp", detail: `${text}: ${error instanceof Error ? error.message : String(error)}` })
  })

const load = Effect.promise(() =>
  Promise.all([
    import("@effect/opentelemetry/NodeSdk"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/exporter-metrics-otlp-http"),
    import("@opentelemetry/sdk-trace-base"),
    import("@opentelemetry/sdk-metrics"),
    import("@jitbox/otel")
  ])
)

/**
 * Installs OpenTelemetry in the scope when `url` is given, exporting as `serviceName`; the
 * scope's closing shuts the SDK down, flushing what it holds.
 *
 * @since 0.1.0
 * @category constructors
 */
export const install = (
  url: Option.Option<string>,
  serviceName: string
): Effect.Effect<Telemetry, HarnessError.ConfigError, Scope.Scope> =>
  // an empty OTEL_EXPORTER_OTLP_ENDPOINT counts as unset
  Option.match(Option.filter(url, (text) => text.trim() !== ""), {
    onNone: () => Effect.succeed(absent),
    onSome: (text) =>
      Effect.gen(function*() {
        const endpoint = yield* endpointOf(text)
        const intervalMs = yield* Effect.mapError(
          metricsInterval,
          (error) => new HarnessError.ConfigError({ option: "OTEL_METRIC_EXPORT_INTERVAL", detail: String(error) })
        )
        const [NodeSdk, { OTLPTraceExporter }, { OTLPMetricExporter }, { BatchSpanProcessor }, { PeriodicExportingMetricReader }, { Metrics, Otel }] = yield* load
        const sdk = NodeSdk.layer(() => ({
          resource: { serviceName },
          spanProcessor: new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint}/v1/traces` })),
          metricReader: new PeriodicExportingMetricReader({
            exporter: new OTLPMetricExporter({ url: `${endpoint}/v1/metrics` }),
            exportIntervalMillis: intervalMs,
            exportTimeoutMillis: Math.min(intervalMs, 30_000)
          }),
          shutdownTimeout: defaults.shutdownTimeoutMs
        }))
        const context: Context.Context<Services> = yield* Layer.build(Otel.layer().pipe(Layer.provide(sdk)))
        return {
          enabled: true,
          provide: (effect) => Effect.provide(effect, context) as Effect.Effect<any, any, any>,
          sinks: { eventSink: Context.get(context, EventSink.EventSink), profileSink: Context.get(context, ProfileSink.ProfileSink) },
          watchWorker: (worker, concurrency) => Metrics.watchWorker(worker, { concurrency }),
          watchLeases: (leases) => Metrics.watchLeases(leases)
        } satisfies Telemetry
      })
  })
