/**
 * The polled gauges: the invocations a real coordinator lease has left (a `LeasedAdmission` on
 * the in-memory transport, spending from it), and a real worker's capacity and running count.
 */
import { assert, describe, it } from "@effect/vitest"
import { Metrics } from "@jitbox/otel"
import { Coordinator, Embedded, ExecutionProfile, Ids, LeasedAdmission, Ledger, MemoryTransport } from "@jitbox/runtime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"

const gauge = (name: string, label: string, value: string): number | undefined => {
  const found = Metric.unsafeSnapshot().find((pair) =>
    pair.metricKey.name === name && pair.metricKey.tags.some((tag) => tag.key === label && tag.value === value)
  )
  return found === undefined ? undefined : Number((found.metricState as unknown as { value: number }).value)
}

const until = (check: () => boolean, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      if (check()) return
      yield* Effect.sleep("10 millis")
    }
    assert.fail(`timed out waiting for ${what}`)
  })

describe("Metrics watchers", () => {
  it.scopedLive("jitbox.lease.invocations_left follows what the lease granted minus what the session spent", () =>
    Effect.gen(function*() {
      const namespace = Ids.namespace("lease")
      const profiles = ExecutionProfile.all([{ name: "standard", policy: { allowedLanguages: ["JavaScript"], maximumInvocations: 8 } }])
      yield* Coordinator.make({ namespace, profiles })
      const leased = yield* LeasedAdmission.make({
        namespace,
        sessionId: Ids.sessionId("leased"),
        profile: "standard",
        deploymentConsent: true,
        policy: { allowedLanguages: ["JavaScript"], maximumInvocations: 8 }
      })
      const granted = leased.lease().invocations
      assert.isAbove(granted, 1)
      yield* Metrics.watchLease("leased", leased, { intervalMs: 10 })
      yield* until(() => gauge("jitbox.lease.invocations_left", "jitbox.session.id", "leased") === granted, "the first reading")
      assert.isTrue(leased.trySpendInvocation())
      yield* until(() => gauge("jitbox.lease.invocations_left", "jitbox.session.id", "leased") === leased.lease().invocations - 1, "a spent invocation")
    }).pipe(Effect.provide(Layer.merge(MemoryTransport.layer(), Ledger.layerMemory))))

  it.scopedLive("jitbox.worker.capacity and jitbox.worker.running report a worker's concurrency and load", () =>
    Effect.gen(function*() {
      const runtime = yield* Embedded.make({ namespace: "capacity", publishStreams: false, worker: { concurrency: 3 } })
      const worker = runtime.workers[0]!
      yield* Metrics.watchWorker(worker, { concurrency: 3, intervalMs: 10 })
      yield* until(() => gauge("jitbox.worker.capacity", "jitbox.worker.id", worker.workerId) === 3 * worker.languages.length, "the capacity")
      assert.strictEqual(gauge("jitbox.worker.running", "jitbox.worker.id", worker.workerId), 0)
    }))
})
