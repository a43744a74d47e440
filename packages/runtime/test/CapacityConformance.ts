/**
 * Workers report their capacity and the coordinator answers `coordinator.workers`, as one suite
 * for every transport layer: WorkerCapacity.test.ts runs it in memory, packages/nats on a real
 * nats-server. Each test has a namespace of its own. Tests that need time to pass drive the
 * `TestClock` (the reporter's intervals and the coordinator's expiry both read the Clock); the
 * waits for a message to cross are bounded polls in real time.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Coordinator from "../src/Coordinator.js"
import * as CoordinatorClient from "../src/CoordinatorClient.js"
import * as CoordinatorProtocol from "../src/CoordinatorProtocol.js"
import * as Envelope from "../src/Envelope.js"
import * as ExecutionProfile from "../src/ExecutionProfile.js"
import * as Ids from "../src/Ids.js"
import * as Ledger from "../src/Ledger.js"
import * as Subject from "../src/Subject.js"
import * as Transport from "../src/Transport.js"
import { TransportError } from "../src/TransportError.js"
import * as Worker from "../src/Worker.js"
import * as WorkerCapacity from "../src/WorkerCapacity.js"

let namespaces = 0
const freshNamespace = () => Ids.namespace(`cap${++namespaces}_${Math.random().toString(36).slice(2, 8)}`)

const profiles = ExecutionProfile.all([{ name: "standard" }])

const settle = (ms = 10) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/** Polls `effect` (in real time, bounded) until its value satisfies `check`; answers that value. */
const eventually = <A, E, R>(effect: Effect.Effect<A, E, R>, check: (value: A) => boolean, what: string) =>
  Effect.gen(function*() {
    let last: A | undefined
    for (let i = 0; i < 500; i++) {
      last = yield* effect
      if (check(last)) return last
      yield* settle()
    }
    return assert.fail(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`)
  })

const startCoordinator = (namespace: Ids.Namespace, options: Partial<Coordinator.CoordinatorOptions> = {}) =>
  Effect.gen(function*() {
    yield* Coordinator.make({ namespace, profiles, ...options }).pipe(Effect.provideService(Ledger.Ledger, Ledger.makeMemory()))
    return yield* CoordinatorClient.make({ namespace })
  })

/** A reporter in its own scope, started. */
const startReporter = (prefix: Subject.Prefix, workerId: string, extra: Partial<WorkerCapacity.ReporterOptions> = {}) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const reporter = yield* WorkerCapacity.reporter({
      prefix,
      workerId: Ids.workerId(workerId),
      pool: Ids.poolName("default"),
      languages: ["javascript", "python"],
      concurrency: 2,
      running: () => 0,
      ...extra
    }).pipe(Scope.extend(scope))
    yield* reporter.start.pipe(Scope.extend(scope))
    return { reporter, close: Scope.close(scope, Exit.void) }
  })

const report = (workerId: string, fields: Record<string, unknown> = {}) =>
  Envelope.encode("capacity", {
    worker_id: workerId,
    pool: "default",
    languages: ["javascript"],
    concurrency: { javascript: 1 },
    running: 0,
    draining: false,
    interval_ms: 60_000,
    ...fields
  })

const idsOf = (workers: ReadonlyArray<WorkerCapacity.WorkerCapacity>) => workers.map((worker) => worker.workerId)

export const capacityConformance = (name: string, transport: () => Layer.Layer<Transport.Transport, unknown>) =>
  describe(`worker capacity on ${name}`, () => {
    const run = <A, E>(effect: Effect.Effect<A, E, Transport.Transport | Scope.Scope>) =>
      effect.pipe(Effect.scoped, Effect.provide(transport() as Layer.Layer<Transport.Transport>))

    it.live("a worker reports pool, languages and concurrency; a call in progress runs; closing drains", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const prefix = Subject.prefix(namespace)
        const client = yield* startCoordinator(namespace)
        const scope = yield* Scope.make()
        // a report interval far beyond the test: every report after the first is one "on change"
        // the raw invocation below carries no lease: this worker does not check admissions
        const worker = yield* Worker.make({ prefix, pool: "gpu", languages: ["javascript"], concurrency: 3, capacityIntervalMs: 600_000, requireAdmission: false })
          .pipe(Scope.extend(scope))
        const [listed] = yield* eventually(client.workers(), (workers) => workers.length === 1, "the worker's first report")
        assert.deepInclude(listed!, {
          workerId: worker.workerId,
          pool: "gpu",
          languages: ["javascript"],
          concurrency: { javascript: 3 },
          running: 0,
          draining: false
        })
        assert.strictEqual(listed!.expiresAt - listed!.lastSeen, WorkerCapacity.defaults.maxTtlMs, "a 10 min interval is kept at most maxTtlMs")

        // An invocation whose package the session has not sent yet is running on the worker.
        let sendPackage!: () => void
        const packageSent = new Promise<void>((resolve) => sendPackage = resolve)
        yield* Transport.serve(Subject.sessionPackage(prefix, Ids.sessionId("s1")), { concurrency: 1 }, () =>
          packageSent.then(() => Envelope.error(new TransportError({ reason: "Unknown", subject: "", detail: "no such package" }))))
        const invocation = yield* Effect.fork(Transport.request(
          Subject.workerInvoke(prefix, worker.pool, "javascript"),
          Envelope.encode("invoke", {
            session_id: "s1",
            version_id: "v1",
            tool_name: "t",
            language: "javascript",
            entrypoint: "t",
            entry_file: "index.js",
            args: {},
            call_id: "call_1",
            parent_call_id: null,
            depth: 0,
            within_change: false,
            timeout_ms: 30_000,
            capability: "AAAAAAAAAAAAAAAAAAAAAA"
          }),
          { timeoutMs: 30_000 }
        ))
        yield* eventually(client.workers(), (workers) => workers[0]?.running === 1, "a report of the running call")
        sendPackage()
        yield* Fiber.join(invocation)
        yield* eventually(client.workers(), (workers) => workers[0]?.running === 0, "a report of the call's end")

        yield* Scope.close(scope, Exit.void)
        const [draining] = yield* eventually(client.workers(), (workers) => workers[0]?.draining === true, "the draining report")
        assert.strictEqual(draining!.workerId, worker.workerId)
      })), 60_000)

    it.effect("reports go out on change at most once per minIntervalMs, and periodically without change", () =>
      run(Effect.gen(function*() {
        const prefix = Subject.prefix(freshNamespace())
        const received: Array<Record<string, unknown>> = []
        const reports = yield* Transport.subscribe(Subject.workersCapacity(prefix))
        yield* reports.pipe(
          Stream.runForEach((message) => Effect.sync(() => received.push(JSON.parse(Transport.text(message))))),
          Effect.forkScoped
        )
        let running = 0
        const { reporter } = yield* startReporter(prefix, "w1", { running: () => running, intervalMs: 60_000, minIntervalMs: 1_000 })
        yield* eventually(Effect.sync(() => received.length), (n) => n === 1, "the first report")
        for (let i = 1; i <= 100; i++) {
          running = i % 3
          reporter.changed()
        }
        running = 2
        yield* settle(50)
        assert.strictEqual(received.length, 1)
        yield* TestClock.adjust("1 second")
        yield* eventually(Effect.sync(() => received.length), (n) => n === 2, "one report for the hundred changes")
        assert.strictEqual(received[1]!.running, 2)
        yield* TestClock.adjust("1 second")
        yield* settle(50)
        assert.strictEqual(received.length, 2, "no change, no report before the interval")
        yield* TestClock.adjust("59 seconds")
        yield* eventually(Effect.sync(() => received.length), (n) => n === 3, "the periodic report")
        assert.deepStrictEqual(received[2], {
          v: 2,
          kind: "capacity",
          worker_id: "w1",
          pool: "default",
          languages: ["javascript", "python"],
          concurrency: { javascript: 2, python: 2 },
          running: 2,
          draining: false,
          interval_ms: 60_000
        })
        assert.strictEqual(reporter.sent(), 3)
      })))

    it.effect("an entry expires after missed reports, by the Clock; a worker that keeps reporting stays", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const prefix = Subject.prefix(namespace)
        const client = yield* startCoordinator(namespace)
        yield* startReporter(prefix, "steady", { intervalMs: 1_000 })
        const leaving = yield* startReporter(prefix, "leaving", { intervalMs: 1_000 })
        yield* eventually(client.workers(), (workers) => workers.length === 2, "both first reports")
        yield* leaving.close
        yield* eventually(client.workers(), (workers) => workers.find((worker) => worker.workerId === "leaving")?.draining === true, "the draining report")
        yield* TestClock.adjust("2 seconds")
        assert.deepStrictEqual(idsOf(yield* client.workers()), ["leaving", "steady"])
        // `leaving` last reported at 0: three missed intervals later it is gone; `steady` reported since.
        yield* TestClock.adjust("1500 millis")
        const after = yield* eventually(client.workers(), (workers) => idsOf(workers).join() === "steady", "the silent worker to expire")
        assert.isAtLeast(after[0]!.lastSeen, 1_000)
      })))

    it.effect("made-up workers claiming the longest interval are forgotten capacityTtlMs after their last report, by the Clock", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const prefix = Subject.prefix(namespace)
        const client = yield* startCoordinator(namespace, { maxWorkers: 4, capacityTtlMs: 3_000 })
        for (let i = 0; i < 10; i++) {
          yield* Transport.publish(Subject.workersCapacity(prefix), report(`forged_${i}`, { interval_ms: WorkerCapacity.limits.maxIntervalMs }))
        }
        const full = yield* eventually(client.workers(), (workers) => workers.length === 4, "the table to fill")
        assert.deepStrictEqual(idsOf(full), ["forged_0", "forged_1", "forged_2", "forged_3"])
        yield* TestClock.adjust("2999 millis")
        assert.strictEqual((yield* client.workers()).length, 4)
        yield* TestClock.adjust("1 millis")
        assert.deepStrictEqual(yield* client.workers(), [])
        yield* Transport.publish(Subject.workersCapacity(prefix), report("real", { interval_ms: 1_000 }))
        yield* eventually(client.workers(), (workers) => idsOf(workers).join() === "real", "a real worker to join")
      })))

    it.live("a flood of made-up worker ids cannot grow the table past maxWorkers nor push out a known worker", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const prefix = Subject.prefix(namespace)
        const client = yield* startCoordinator(namespace, { maxWorkers: 8 })
        let running = 0
        const { reporter } = yield* startReporter(prefix, "real", { running: () => running, intervalMs: 60_000, minIntervalMs: 10 })
        yield* eventually(client.workers(), (workers) => workers.length === 1, "the real worker")
        for (let i = 0; i < 200; i++) yield* Transport.publish(Subject.workersCapacity(prefix), report(`flood_${i}`))
        // Published after the flood on the same transport, so it arrives after it.
        running = 5
        reporter.changed()
        const workers = yield* eventually(client.workers(), (workers) => workers.find((worker) => worker.workerId === "real")?.running === 5, "the real worker's report after the flood")
        assert.strictEqual(workers.length, 8)
        assert.deepStrictEqual(idsOf(workers).filter((id) => id.startsWith("flood_")), ["flood_0", "flood_1", "flood_2", "flood_3", "flood_4", "flood_5", "flood_6"])
      })), 60_000)

    it.live("reports that do not decode, or are too large, are dropped; a pool can be asked for alone", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const prefix = Subject.prefix(namespace)
        const client = yield* startCoordinator(namespace)
        const subject = Subject.workersCapacity(prefix)
        const bad = [
          "{ not json",
          "[1,2]",
          JSON.stringify({ v: 2, kind: "capacity" }),
          report("a.b"),
          report("neg", { running: -1 }),
          report("frac", { running: 1.5 }),
          report("lang", { languages: ["cobol"] }),
          report("many", { languages: Array.from({ length: 5 }, () => "python") }),
          report("slots", { concurrency: { javascript: "4" } }),
          report("fast", { interval_ms: 0 }),
          report("slow", { interval_ms: 10_000_000 }),
          report("pkg", { pool: "package" }),
          report("big", { padding: "x".repeat(WorkerCapacity.limits.reportBytes) }),
          Envelope.encode("capacity", { worker_id: "missing" }),
          Envelope.encode("heartbeat", { worker_id: "kind" })
        ]
        for (const payload of bad) yield* Transport.publish(subject, payload)
        yield* Transport.publish(subject, report("good"))
        yield* Transport.publish(subject, report("gpu_1", { pool: "gpu", concurrency: { python: 8 }, languages: ["python"] }))
        const workers = yield* eventually(client.workers(), (workers) => workers.length >= 2, "the good reports")
        assert.deepStrictEqual(idsOf(workers), ["good", "gpu_1"])
        const gpu = yield* client.workers("gpu")
        assert.deepStrictEqual(gpu.map((worker) => [worker.workerId, worker.concurrency]), [["gpu_1", { python: 8 }]])
        assert.deepStrictEqual(yield* client.workers("none"), [])
        // the coordinator still answers its other operations
        assert.strictEqual((yield* client.policy("standard")).maximumInvocations, 16)
      })), 60_000)
  })
