/**
 * The clock-driven parts of a worker and of a session's remote runner, on `TestClock` and the
 * in-memory transport, without real sleeps: the worker's verified-lease cache expires after a
 * quarter of the lease's lifetime, an invocation past its deadline is aborted by the worker's
 * backstop, and a session fails a call `WorkerLost` when its worker's heartbeats stop. The parts
 * are tested with stand-ins for the sandbox and the coordinator; the last test runs a whole
 * `Worker` (its sandbox child is real, its time is the `TestClock`).
 */
import { assert, describe, it } from "@effect/vitest"
import type { CodeRunner } from "@jitbox/core"
import type { SandboxRunner } from "@jitbox/sandbox"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as Envelope from "../src/Envelope.js"
import * as PackageTransfer from "../src/internal/packageTransfer.js"
import * as Wire from "../src/internal/wire.js"
import * as Protocol from "../src/Protocol.js"
import * as Worker from "../src/Worker.js"
import * as WorkerProtocol from "../src/WorkerProtocol.js"
import * as Ids from "../src/Ids.js"
import { Activations } from "../src/internal/activations.js"
import * as Invocations from "../src/internal/invocations.js"
import * as LeaseVerification from "../src/internal/leaseVerification.js"
import * as MemoryTransport from "../src/MemoryTransport.js"
import * as RemoteCodeRunner from "../src/RemoteCodeRunner.js"
import * as Subject from "../src/Subject.js"
import * as TraceContext from "../src/TraceContext.js"
import * as Transport from "../src/Transport.js"
import type { RemoteExecutionError } from "../src/RemoteExecutionError.js"

const prefix = Subject.prefix(Ids.namespace("clock"))
const sessionId = Ids.sessionId("s1")
const tick = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

const activation: WorkerProtocol.Activation = {
  sessionId,
  versionId: "v_1",
  toolName: "slow",
  language: "javascript",
  entrypoint: "slow",
  entryFile: "index.js",
  leaseId: Ids.leaseId("lease_1"),
  capability: "AAAAAAAAAAAAAAAAAAAAAA" as WorkerProtocol.Capability
}

/** A sandbox whose invocations run until their signal aborts. */
const hangingSandbox = {
  invoke: (_invocation: CodeRunner.Invocation, signal: AbortSignal | undefined) =>
    new Promise((_resolve, reject) => signal?.addEventListener("abort", () => reject(new Error("aborted")), { once: true })),
  release: () => Promise.resolve()
} as unknown as SandboxRunner.SandboxRunner

describe("worker and runner on TestClock", () => {
  it.scoped("the worker trusts a verified lease for a quarter of its lifetime, then asks the coordinator again", () =>
    Effect.gen(function*() {
      const transport = yield* Transport.Transport
      let verifies = 0
      yield* transport.serve(Subject.coordinator(prefix, Ids.defaultPrincipal, Ids.token("verify")), { concurrency: 4 }, () => {
        verifies++
        return Envelope.ok(JSON.stringify({ sessionId, leaseId: "lease_1", expiresAt: 1e15, lifetimeSeconds: 40, profile: "standard", deploymentConsent: true }))
      })
      const leases = yield* LeaseVerification.make({
        prefix,
        requireAdmission: true,
        pool: Ids.poolName("default"),
        nodeId: undefined,
        credentials: {},
        verifyTimeoutMs: 5_000
      })
      yield* Effect.promise(() => leases.admit(activation, false))
      yield* Effect.promise(() => leases.admit(activation, false))
      assert.strictEqual(verifies, 1, "a second request of the lease is answered from the cache")
      yield* TestClock.adjust("9999 millis")
      yield* Effect.promise(() => leases.admit(activation, false))
      assert.strictEqual(verifies, 1, "trusted until a quarter of its 40 s lifetime")
      yield* TestClock.adjust("1 millis")
      yield* Effect.promise(() => leases.admit(activation, false))
      assert.strictEqual(verifies, 2, "asked again once the 10 s passed")
      const refused = yield* Effect.either(Effect.promise(() => leases.admit({ ...activation, leaseId: undefined }, false).then(() => "ran", (error) => Promise.reject(error))).pipe(Effect.catchAllDefect(Effect.fail)))
      assert.isTrue(Either.isLeft(refused), "a request without a lease is refused")
    }).pipe(Effect.provide(MemoryTransport.layer())))

  it.scoped("an invocation past its deadline is aborted by the worker's backstop when no cancel comes", () =>
    Effect.gen(function*() {
      const outcomes: Array<string> = []
      const invocations = yield* Invocations.make({
        prefix,
        workerId: Ids.workerId("w1"),
        sandbox: hangingSandbox,
        trace: yield* TraceContext.current,
        nestedTimeoutMs: 1_000,
        onInvocation: (finished) => outcomes.push(finished.outcome)
      })
      const activations = new Activations({
        workerId: Ids.workerId("w1"),
        cacheSize: 1,
        sandbox: hangingSandbox,
        fetch: () => Promise.resolve({}),
        hostFor: invocations.hostFor
      })
      const entry = { activationId: "a1", ready: Promise.resolve({}), inflight: 0, settled: true }
      const request: WorkerProtocol.Invocation = { ...activation, args: {}, callId: "call_1", parentCallId: null, depth: 0, withinChange: false, timeoutMs: 500 }
      const run = yield* Effect.fork(Effect.either(Effect.tryPromise(() =>
        invocations.run({ request, entry, activations, drained: new AbortController().signal, subject: "subject", headers: {} })
      )))
      yield* tick
      assert.strictEqual(invocations.size(), 1)
      yield* TestClock.adjust(500 + Invocations.DeadlineBackstopMs - Invocations.sweepMs)
      yield* tick
      assert.strictEqual(invocations.size(), 1, "still running before the backstop")
      yield* TestClock.adjust(Invocations.sweepMs)
      const result = yield* Fiber.join(run)
      assert.isTrue(Either.isLeft(result))
      assert.deepStrictEqual(outcomes, ["cancelled"])
      assert.strictEqual(invocations.size(), 0)
      assert.strictEqual(entry.inflight, 0)
    }).pipe(Effect.provide(MemoryTransport.layer())))

  it.scoped("a session fails a call WorkerLost when its worker's heartbeats stop, not while they come", () =>
    Effect.gen(function*() {
      const transport = yield* Transport.Transport
      const pending: Array<() => void> = []
      yield* transport.serve(Subject.workerInvoke(prefix, Ids.poolName("default"), "javascript"), { concurrency: 8 }, (request) => {
        const message = JSON.parse(new TextDecoder().decode(request.data)) as { kind: string }
        if (message.kind === "activate") return Envelope.ok("{}")
        // never answers by itself: the test ends it
        return new Promise<string>((resolve) => pending.push(() => resolve(Envelope.ok("1"))))
      })
      const runner = yield* RemoteCodeRunner.make({ prefix, heartbeatMs: 1_000, heartbeatMisses: 3 })
      const host: CodeRunner.CallHost = { sessionId, callTool: () => Promise.resolve(null) }
      yield* Effect.promise(() =>
        runner.activate({ sessionId, activationId: "a1", toolName: "slow", versionId: "v_1", language: "javascript", entrypoint: "slow", entryFile: "index.js", files: { "index.js": "" } }, host)
      )
      const context = { sessionId, callId: "call_1", parentCallId: null, depth: 0, withinChange: false, deadline: null }
      const call = yield* Effect.fork(Effect.either(Effect.tryPromise({
        try: () => Promise.resolve(runner.invoke({ activationId: "a1", toolName: "slow", args: {}, context }, undefined)),
        catch: (error) => error as RemoteExecutionError
      })))
      yield* tick
      const beat = () =>
        transport.publish(Subject.sessionHeartbeat(prefix, sessionId), Envelope.encode("heartbeat", { worker_id: "w1", call_ids: ["call_1"] }))
      for (let i = 0; i < 3; i++) {
        yield* TestClock.adjust("2 seconds")
        beat()
        yield* tick
      }
      assert.isUndefined(yield* Fiber.poll(call).pipe(Effect.map((exit) => exit._tag === "Some" ? exit : undefined)), "heard of every 2 s: alive")
      yield* TestClock.adjust("4 seconds")
      const result = yield* Fiber.join(call)
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) {
        assert.strictEqual(result.left._tag, "RemoteExecutionError")
        assert.strictEqual((result.left as RemoteExecutionError).reason, "WorkerLost")
        assert.strictEqual((result.left as RemoteExecutionError).callId, "call_1")
      }
      for (const end of pending) end()
    }).pipe(Effect.provide(MemoryTransport.layer())))
})

/** A coordinator that confirms every lease (40 s lifetime: trusted 10 s), counting the times it is asked. */
const confirmingCoordinator = Effect.gen(function*() {
  const transport = yield* Transport.Transport
  const asked = { verifies: 0 }
  yield* transport.serve(Subject.coordinator(prefix, Ids.defaultPrincipal, Ids.token("verify")), { concurrency: 4 }, () => {
    asked.verifies++
    return Envelope.ok(JSON.stringify({ sessionId, leaseId: "lease_1", expiresAt: 1e15, lifetimeSeconds: 40, profile: "standard", deploymentConsent: true }))
  })
  return asked
})

/** The session's end of the package subject, holding one version. */
const servePackage = (versionId: string, files: Record<string, string>) =>
  Effect.gen(function*() {
    const transport = yield* Transport.Transport
    const packages = new PackageTransfer.Packages()
    packages.hold(versionId, files)
    yield* transport.serve(Subject.sessionPackage(prefix, sessionId), { concurrency: 4 }, Protocol.serve(WorkerProtocol.session, {
      package: ({ chunk, versionId }, request) => packages.chunk(versionId, chunk, transport.maxPayload(), request!.subject),
      nested: () => null
    }))
  })

describe("a worker on TestClock", () => {
  it.scoped("asks the coordinator again once a lease's trust ran out, and aborts an invocation past its deadline when no cancel comes", () =>
    Effect.gen(function*() {
      const transport = yield* Transport.Transport
      const coordinator = yield* confirmingCoordinator
      yield* servePackage("v_1", { "index.js": `export const slow = tool({ description: "Never answers." }, () => new Promise(() => {}))` })
      const outcomes: Array<string> = []
      const worker = yield* Worker.make({ prefix, workerId: "w1", languages: ["javascript"], onInvocation: (finished) => outcomes.push(finished.outcome) })
      const subject = Subject.workerInvoke(prefix, worker.pool, "javascript")
      const send = (body: string) =>
        Effect.promise(() => transport.request(subject, body, { timeoutMs: 30_000 })).pipe(
          Effect.map((reply) => JSON.parse(new TextDecoder().decode(reply.data)) as { kind: string; error?: { _tag: string } })
        )
      const activate = Wire.message(WorkerProtocol.worker, "activate", activation, "args", undefined)
      assert.strictEqual((yield* send(activate)).kind, "ok")
      assert.strictEqual((yield* send(activate)).kind, "ok")
      assert.deepStrictEqual([coordinator.verifies, worker.fetches()], [1, 1], "the lease verified once, the package fetched once")
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual((yield* send(activate)).kind, "ok")
      assert.strictEqual(coordinator.verifies, 2, "verified again once its trust ran out")

      const invoke = Wire.message(WorkerProtocol.worker, "invoke", { ...activation, callId: "call_1", parentCallId: null, depth: 0, withinChange: false, timeoutMs: 500 }, "args", "{}")
      const call = yield* Effect.fork(send(invoke))
      for (let i = 0; i < 1_000 && worker.running() === 0; i++) yield* tick
      assert.strictEqual(worker.running(), 1)
      yield* TestClock.adjust(500 + Invocations.DeadlineBackstopMs + Invocations.sweepMs)
      const answer = yield* Fiber.join(call)
      assert.strictEqual(answer.kind, "error")
      assert.deepStrictEqual(outcomes, ["cancelled"])
      assert.strictEqual(worker.running(), 0)
    }).pipe(Effect.provide(MemoryTransport.layer())), 60_000)
})
