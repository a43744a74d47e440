/**
 * The benchmark against a remote session over a real nats-server (one for this file): the session
 * is hosted in this process by `Sessions` on a NATS connection (the nats tests' `sessionsHere`
 * fixture), its code runs on a `Worker` on another connection, and the benchmark reaches it as a
 * `RemoteSession` on a third, creating the snapshot's tools and the composing tools in it for the
 * run and unloading them afterwards. No timing is asserted.
 */
import { Bench, BenchResult } from "@jitbox/bench"
import { NatsConnection, NatsTransport } from "@jitbox/nats"
import { Ids, Subject, Worker } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { afterAll, beforeAll, expect, it } from "vitest"
import { sessionsHere } from "../../nats/test/fixtures/sessionsHere.js"
import { toolbox } from "./toolbox.js"

const namespace = "benchremote"
const prefix = Subject.prefix(Ids.namespace(namespace))
let server: NatsServer.Handle | undefined
let scope: Scope.CloseableScope | undefined
let host: Effect.Effect.Success<ReturnType<typeof sessionsHere>> | undefined

beforeAll(async () => {
  server = await NatsServer.start()
  scope = Effect.runSync(Scope.make())
  await Effect.runPromise(
    Effect.gen(function*() {
      const transport = yield* Layer.build(NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer({ servers: server!.url, reconnectTimeWaitMs: 100 }))))
      yield* Worker.make({ prefix, requireAdmission: false, concurrency: 8, sandbox: { maximumRuntimeEnvironments: 8 } }).pipe(Effect.provide(transport))
    }).pipe(Scope.extend(scope))
  )
  host = await Effect.runPromise(
    sessionsHere({
      server: server.url,
      prefix,
      harness: {
        codeExecution: "sandboxed",
        policy: { allowedLanguages: ["JavaScript"], maximumInvocations: 6_400, maximumConcurrentInvocations: 8, maximumTools: 16, requireRootCoordinator: false }
      }
    }).pipe(Scope.extend(scope))
  )
}, 60_000)

afterAll(async () => {
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  await server?.close()
})

it("times a composed tool of the snapshot in a remote session at depths 0 and 1, beside the NATS raw floor", async () => {
  const iterations = 8
  const result = await Bench.run({
    snapshot: toolbox,
    tool: "twice",
    args: { left: 1, right: 2 },
    target: { kind: "remote", servers: server!.url, namespace, session: "remote-bench" },
    concurrency: 2,
    depths: [0, 1],
    warmup: 2,
    iterations
  })
  expect(result.target).toMatchObject({ kind: "remote", session: "remote-bench" })
  expect(result.floors.raw).not.toBeNull()
  expect(result.floors.raw!.description).toContain("nats.js request")
  expect(result.runs.map((run) => [run.depth, run.called])).toEqual([[0, "twice"], [1, "bench_depth_1"]])
  for (const phase of [result.floors.direct, result.floors.raw!, ...result.runs]) {
    expect(phase.stats.iterations).toBe(iterations)
    expect(phase.histogram.counts.reduce((a, b) => a + b, 0)).toBe(iterations)
    expect(phase.stats.p99_us).toBeGreaterThanOrEqual(phase.stats.median_us)
  }
  for (const run of result.runs) {
    expect(run.median_over_raw).toBe(BenchResult.ratio(run.stats.median_us, result.floors.raw!.stats.median_us))
    expect(run.median_over_direct).toBe(BenchResult.ratio(run.stats.median_us, result.floors.direct.stats.median_us))
  }
  // what the run created in the session is unloaded again
  const session = host!.sessions.get("remote-bench")
  const loaded = async () => (await session.listTools()).filter((entry) => entry.state === "loaded").map((entry) => entry.name)
  expect(await loaded()).toEqual([])
  // a second run in the same session loads them again (composing tools too, and one level deeper)
  const again = await Bench.run({
    snapshot: toolbox,
    tool: "add",
    args: { left: 1, right: 2 },
    target: { kind: "remote", servers: server!.url, namespace, session: "remote-bench" },
    depths: [2],
    warmup: 1,
    iterations: 3
  })
  expect(again.runs.map((run) => [run.depth, run.stats.iterations])).toEqual([[2, 3]])
  expect(await loaded()).toEqual([])
}, 120_000)
