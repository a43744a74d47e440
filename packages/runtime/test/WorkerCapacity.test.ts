/**
 * Worker capacity reports and `coordinator.workers` on the in-memory transport (packages/nats runs
 * the same suite on a real nats-server), plus the table's bounds on their own.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Ids from "../src/Ids.js"
import * as MemoryTransport from "../src/MemoryTransport.js"
import * as Subject from "../src/Subject.js"
import * as WorkerCapacity from "../src/WorkerCapacity.js"
import { capacityConformance } from "./CapacityConformance.js"

capacityConformance("MemoryTransport", () => MemoryTransport.layer())

const report = (workerId: string, intervalMs = 1_000): WorkerCapacity.CapacityReport => ({
  v: 2,
  kind: "capacity",
  worker_id: workerId as WorkerCapacity.CapacityReport["worker_id"],
  pool: "default" as WorkerCapacity.CapacityReport["pool"],
  languages: ["javascript"],
  concurrency: { javascript: 1 },
  running: 0,
  draining: false,
  interval_ms: intervalMs
})

describe("WorkerCapacity.table", () => {
  it("reports travel on <prefix>.workers.capacity; a prefix names its namespace last", () => {
    assert.strictEqual(Subject.workersCapacity(Subject.prefix(Ids.namespace("prod"))), "jitbox.prod.workers.capacity")
    assert.strictEqual(Subject.namespaceOf(Subject.prefix(Ids.namespace("prod"), "acme.jitbox")), "prod")
  })

  it("holds at most maxWorkers; a full table refuses new ids until entries expire", () => {
    const table = WorkerCapacity.table({ maxWorkers: 3, misses: 2 })
    for (const id of ["a", "b", "c"]) assert.isTrue(table.offer(report(id), 0))
    assert.isFalse(table.offer(report("d"), 10))
    assert.isTrue(table.offer(report("a"), 10), "a known worker still reports")
    assert.deepStrictEqual([table.size(), table.refused()], [3, 1])
    // b and c reported at 0 with a 1 s interval: gone from 2 s on; a reported at 10
    assert.isTrue(table.offer(report("d"), 2_000))
    assert.deepStrictEqual(table.live(2_000).map((entry) => entry.workerId), ["a", "d"])
    assert.deepStrictEqual(table.live(2_010).map((entry) => entry.workerId), ["d"])
    assert.deepStrictEqual(table.live(4_000), [])
  })

  it("defaults: 256 workers, entries kept at most 15 s without a report whatever interval they claim; 1 100 forged reports fill it to 256 and are gone 15 s later", () => {
    const table = WorkerCapacity.table()
    assert.isTrue(table.offer(report("real", 5_000), 0))
    for (let i = 0; i < 1_100; i++) table.offer(report(`forged_${i}`, WorkerCapacity.limits.maxIntervalMs), 100)
    assert.deepStrictEqual([table.size(), table.refused()], [256, 1_100 - 255])
    assert.isTrue(table.offer(report("real", 5_000), 10_000), "a known worker keeps reporting")
    // the forged entries claimed a 10 min interval, but live 15 s: by 15.1 s only the real worker is left
    assert.strictEqual(table.live(15_099).length, 256)
    assert.deepStrictEqual(table.live(15_100).map((entry) => entry.workerId), ["real"])
    assert.isTrue(table.offer(report("late", 5_000), 15_100), "a new worker joins once the flood has expired")
    assert.strictEqual(table.live(25_000).length, 1)
  })

  it("maxTtlMs bounds every entry's life; a short interval still expires after its own misses", () => {
    const table = WorkerCapacity.table({ maxTtlMs: 2_000, misses: 3 })
    table.offer(report("slow", 60_000), 0)
    table.offer(report("fast", 100), 0)
    assert.deepStrictEqual(table.live(299).map((entry) => [entry.workerId, entry.expiresAt]), [["fast", 300], ["slow", 2_000]])
    assert.deepStrictEqual(table.live(300).map((entry) => entry.workerId), ["slow"])
    assert.deepStrictEqual(table.live(2_000), [])
  })
})
