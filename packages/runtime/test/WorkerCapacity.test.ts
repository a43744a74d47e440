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
})
