/**
 * jitbox's metrics as Effect metrics, which `@effect/opentelemetry` exports (its `Metrics.layer`,
 * or `NodeSdk.layer` with a `metricReader`) under the names of `Attributes.metric`:
 *
 * - `jitbox.calls` (counter) and `jitbox.call.duration` (histogram, seconds), by tool, origin and
 *   status, from each finished call's profile record;
 * - `jitbox.calls.in_flight` (up-down counter), by origin, from the `jit_tool_*` events;
 * - `jitbox.worker.invocations.in_flight` (up-down counter), by worker, from the worker's invocations;
 * - `jitbox.lease.invocations_left` (gauge), by session, polled from a `LeasedAdmission` (`watchLease`)
 *   or from every lease the sessions of a host hold (`watchLeases`, over `Sessions.leases`);
 * - `jitbox.worker.capacity` and `jitbox.worker.running` (gauges), by worker and pool, polled from a
 *   `Worker` (`watchWorker`).
 *
 * The per-call updates run on the dispatch path, so each labelled series is looked up once and
 * its hook kept (at most `maxSeries` per metric; past that, updates go through the registry).
 *
 * @since 0.1.0
 */
import { type LeasedAdmission, type SessionLeases, Worker } from "@jitbox/runtime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import type * as MetricHook from "effect/MetricHook"
import * as MetricKey from "effect/MetricKey"
import * as MetricLabel from "effect/MetricLabel"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Attributes from "./Attributes.js"

/** How many labelled series of one metric keep a cached hook. @since 0.1.0 @category constants */
export const maxSeries = 4_096

/** Histogram bounds of `jitbox.call.duration`: 0.1 ms doubling up to ~27 min. @since 0.1.0 @category constants */
export const durationBoundaries = MetricBoundaries.exponential({ start: 0.0001, factor: 2, count: 24 })

const A = Attributes.span

/** One metric's hooks by series id. */
class Series<In> {
  private readonly hooks = new Map<string, MetricHook.MetricHook<In, unknown>>()
  constructor(private readonly key: (labels: ReadonlyArray<MetricLabel.MetricLabel>) => MetricKey.MetricKey.Untyped) {}

  hook(id: string, labels: () => ReadonlyArray<MetricLabel.MetricLabel>): MetricHook.MetricHook<In, unknown> {
    const found = this.hooks.get(id)
    if (found !== undefined) return found
    const hook = Metric.globalMetricRegistry.get(this.key(labels()) as never) as unknown as MetricHook.MetricHook<In, unknown>
    if (this.hooks.size < maxSeries) this.hooks.set(id, hook)
    return hook
  }
}

const label = MetricLabel.make

const calls = new Series<number>((labels) =>
  MetricKey.taggedWithLabels(MetricKey.counter(Attributes.metric.calls, { description: "finished tool calls", incremental: true }), labels)
)
const durations = new Series<number>((labels) =>
  MetricKey.taggedWithLabels(
    MetricKey.histogram(Attributes.metric.callDuration, durationBoundaries, "how long finished tool calls took, in seconds"),
    labels
  )
)
const inFlight = new Series<number>((labels) =>
  MetricKey.taggedWithLabels(MetricKey.counter(Attributes.metric.callsInFlight, { description: "tool calls dispatched and not finished" }), labels)
)
const workerInFlight = new Series<number>((labels) =>
  MetricKey.taggedWithLabels(
    MetricKey.counter(Attributes.metric.workerInvocationsInFlight, { description: "invocations a worker runs now" }),
    labels
  )
)

/** Counts a finished call. @since 0.1.0 @category updates */
export const recordCall = (toolName: string, origin: string, status: string, durationMs: number): void => {
  const id = `${toolName}\u0000${origin}\u0000${status}`
  const labels = () => [label(A.toolName, toolName), label(A.origin, origin), label(A.status, status)]
  calls.hook(id, labels).update(1)
  durations.hook(id, labels).update(durationMs / 1000)
}

/** A call was dispatched (`+1`) or finished (`-1`). @since 0.1.0 @category updates */
export const callInFlight = (origin: string, delta: 1 | -1): void => {
  inFlight.hook(origin, () => [label(A.origin, origin)]).update(delta)
}

/** A worker started (`+1`) or finished (`-1`) an invocation. @since 0.1.0 @category updates */
export const workerInvocation = (workerId: string, delta: 1 | -1): void => {
  workerInFlight.hook(workerId, () => [label(A.workerId, workerId)]).update(delta)
}

/** @since 0.1.0 @category models */
export interface WatchOptions {
  /** How often the gauge is read (default 1 000 ms). */
  readonly intervalMs?: number | undefined
}

const poll = (update: () => void, options: WatchOptions | undefined): Effect.Effect<void, never, Scope.Scope> =>
  Effect.sync(update).pipe(
    Effect.repeat(Schedule.spaced(Duration.millis(options?.intervalMs ?? 1_000))),
    Effect.ignore,
    Effect.forkScoped,
    Effect.zipRight(Effect.addFinalizer(() => Effect.sync(update))),
    Effect.asVoid
  )

/**
 * Keeps `jitbox.lease.invocations_left` of `sessionId` up to date with its lease (what the lease
 * granted minus what the session spent), until the scope closes.
 *
 * @since 0.1.0
 * @category watchers
 */
export const watchLease = (
  sessionId: string,
  leased: Pick<LeasedAdmission.LeasedAdmission, "lease" | "usage">,
  options?: WatchOptions
): Effect.Effect<void, never, Scope.Scope> => {
  const gauge = Metric.gauge(Attributes.metric.leaseInvocationsLeft, { description: "invocations the session's lease has left" }).pipe(
    Metric.taggedWithLabels([label(A.sessionId, sessionId)])
  )
  return poll(() => gauge.unsafeUpdate(Math.max(0, leased.lease().invocations - leased.usage().invocations), []), options)
}

/**
 * Keeps `jitbox.lease.invocations_left` of every session whose lease is held in `leases` (a session
 * host's `Sessions.leases`) up to date, until the
 * scope closes; a session that is no longer hosted here reads 0 once. At most `maxSeries` sessions.
 *
 * @since 0.1.0
 * @category watchers
 */
export const watchLeases = (leases: Pick<SessionLeases.SessionLeasesShape, "entries">, options?: WatchOptions): Effect.Effect<void, never, Scope.Scope> => {
  const gauges = new Map<string, Metric.Metric.Gauge<number>>()
  const gaugeOf = (sessionId: string) => {
    let gauge = gauges.get(sessionId)
    if (gauge === undefined && gauges.size < maxSeries) {
      gauge = Metric.gauge(Attributes.metric.leaseInvocationsLeft, { description: "invocations the session's lease has left" }).pipe(
        Metric.taggedWithLabels([label(A.sessionId, sessionId)])
      )
      gauges.set(sessionId, gauge)
    }
    return gauge
  }
  return poll(() => {
    const seen = new Set<string>()
    for (const [sessionId, lease] of leases.entries()) {
      if (lease.invocationsLeft === undefined) continue
      seen.add(sessionId)
      gaugeOf(sessionId)?.unsafeUpdate(lease.invocationsLeft(), [])
    }
    for (const [sessionId, gauge] of gauges) {
      if (seen.has(sessionId)) continue
      gauge.unsafeUpdate(0, [])
      gauges.delete(sessionId)
    }
  }, options)
}

/**
 * Keeps `jitbox.worker.capacity` (its concurrency times its languages: what it runs at once) and
 * `jitbox.worker.running` of `worker` up to date until the scope closes. `concurrency` is the
 * worker's option (default `Worker.defaults.concurrency`).
 *
 * @since 0.1.0
 * @category watchers
 */
export const watchWorker = (
  worker: Pick<Worker.Worker, "workerId" | "pool" | "languages" | "running">,
  options?: WatchOptions & { readonly concurrency?: number | undefined }
): Effect.Effect<void, never, Scope.Scope> => {
  const labels = [label(A.workerId, worker.workerId), label(A.workerPool, worker.pool)]
  const capacity = Metric.gauge(Attributes.metric.workerCapacity, { description: "invocations the worker runs at once" }).pipe(
    Metric.taggedWithLabels(labels)
  )
  const running = Metric.gauge(Attributes.metric.workerRunning, { description: "invocations the worker runs now" }).pipe(
    Metric.taggedWithLabels(labels)
  )
  const concurrency = (options?.concurrency ?? Worker.defaults.concurrency) * worker.languages.length
  return poll(() => {
    capacity.unsafeUpdate(concurrency, [])
    running.unsafeUpdate(worker.running(), [])
  }, options)
}
