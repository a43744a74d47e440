/**
 * Fault: the root coordinator's process is SIGKILLed and a new one started on the same KV bucket.
 *
 * Proves, against a real nats-server, real coordinator processes and a worker running every call
 * in a sandbox child: what the coordinator granted lives in the JetStream KV ledger, not in its
 * process. After the restart, a lease granted by the dead coordinator renews under the new one
 * (same lease id), the concurrency slots it holds still count (a new session of the profile gets
 * only what is left), a session that exhausted its `maximumInvocations` before the restart is
 * refused again when admitted anew, and spent invocations reported to the new coordinator come
 * back at the next admission. Throughout, the sessions of one profile (each asking for 2 slots of
 * the profile's 3) never run more than 3 calls at once, counted where the calls run: each call
 * tells the test when its code starts and ends (nested base tools), and the worker's own count of
 * running invocations is sampled too.
 */
import { Harness, tool } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import { Coordinator, CoordinatorClient, CoordinatorProtocol, Ids, LeasedAdmission, RemoteCodeRunner, Subject, Transport, Worker } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { afterAll, beforeAll } from "vitest"
import * as NatsConnection from "../../src/NatsConnection.js"
import * as NatsTransport from "../../src/NatsTransport.js"
import { coordinatorProcess, exited } from "../fixtures/processes.js"
import { rejection } from "../fixtures/sessionsHere.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

const profileSlots = 3
const profiles = [{ name: "shared", policy: { allowedLanguages: ["JavaScript"], maximumInvocations: 100, maximumConcurrentInvocations: profileSlots } }]
const policy = (maximumInvocations: number) => ({ allowedLanguages: ["JavaScript" as const], maximumInvocations, maximumConcurrentInvocations: 2 })

/** Calls whose code runs now, by session; the most at once; which sessions ran together. */
const inside = new Map<string, number>()
let most = 0
const together = new Set<string>()
const enter = tool(
  { name: "enter", description: "Notes that a call's code starts.", guidelines: "Use in tests.", parameters: { type: "object", properties: { who: { type: "string" } } } },
  ({ who }: { who: string }) => {
    inside.set(who, (inside.get(who) ?? 0) + 1)
    most = Math.max(most, [...inside.values()].reduce((sum, n) => sum + n, 0))
    const present = [...inside].filter(([, n]) => n > 0).map(([session]) => session).sort()
    if (present.length > 1) together.add(present.join("+"))
    return null
  }
)
const leave = tool(
  { name: "leave", description: "Notes that a call's code ends.", guidelines: "Use in tests.", parameters: { type: "object", properties: { who: { type: "string" } } } },
  ({ who }: { who: string }) => {
    inside.set(who, inside.get(who)! - 1)
    return null
  }
)

const heldJs = `export const held = tool({
  description: "Runs for a second, telling the session when its code starts and ends.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { who: { type: "string" } }, required: ["who"] }
}, async ({ who }) => {
  await harness.callTool("enter", { who })
  await new Promise((resolve) => setTimeout(resolve, 1000))
  await harness.callTool("leave", { who })
  return who
})`

describe("fault: the coordinator restarted", () => {
  it.live("leases, held slots and spent budgets come back from KV, and a profile's concurrency holds across the restart", () =>
    Effect.gen(function*() {
      const namespace = Ids.namespace(`crst_${Math.random().toString(36).slice(2, 8)}`)
      const prefix = Subject.prefix(namespace)
      const outer = yield* Effect.scope
      const transport = yield* Effect.map(NatsConnection.make({ servers: server!.url, reconnectTimeWaitMs: 100 }), NatsTransport.fromConnection)
      const withTransport = Effect.provideService(Transport.Transport, transport)
      // the harnesses here are built by hand, not by Sessions, so their messages carry no lease for the worker to check
      const worker = yield* Worker.make({ prefix, concurrency: 8, requireAdmission: false, sandbox: { maximumRuntimeEnvironments: 4, shortTimeoutSeconds: 30 } })
        .pipe(Effect.provideService(Transport.Transport, yield* Effect.map(NatsConnection.make({ servers: server!.url }), NatsTransport.fromConnection)))
      let workerMost = 0
      const sampler = setInterval(() => workerMost = Math.max(workerMost, worker.running()), 5)
      yield* Effect.addFinalizer(() => Effect.sync(() => clearInterval(sampler)))
      const runner = yield* RemoteCodeRunner.make({ prefix }).pipe(withTransport)

      /** A session of the profile with its own lease and harness, until `close`. */
      const session = (who: string, maximumInvocations: number) =>
        Effect.gen(function*() {
          const scope = yield* Scope.fork(outer, ExecutionStrategy.sequential)
          const leased = yield* LeasedAdmission.make({
            namespace,
            sessionId: Ids.sessionId(who),
            profile: "shared",
            deploymentConsent: true,
            policy: policy(maximumInvocations),
            retryMs: 200
          }).pipe(withTransport, Scope.extend(scope))
          const harness = yield* Harness.makeScoped({ sessionId: who, tools: [enter, leave], admission: leased, runners: [runner], codeExecution: "sandboxed" })
            .pipe(Scope.extend(scope))
          return { leased, harness, close: Scope.close(scope, Exit.void) }
        })
      const run = (harness: { callTool: (name: string, args: unknown) => Promise<unknown> }, who: string, times: number) =>
        Array.from({ length: times }, () => harness.callTool("held", { who }))
      const created = (harness: { createTool: (request: { entrypoint: string; language: "javascript"; source: string }) => Promise<unknown> }) =>
        Effect.promise(() => harness.createTool({ entrypoint: "held", language: "javascript", source: heldJs }))

      const first = yield* coordinatorProcess(server!.url, namespace, profiles)
      const a = yield* session("a", 3)
      const b = yield* session("b", 12)
      assert.deepStrictEqual([a.leased.lease().slots, b.leased.lease().slots], [2, 1], "a takes the 2 slots it asks for, b the one left")
      yield* created(a.harness)
      yield* created(b.harness)

      // a spends its whole budget (its 4th call is refused) while b runs beside it.
      const phase1 = yield* Effect.promise(() => Promise.allSettled([...run(a.harness, "a", 4), ...run(b.harness, "b", 4)]))
      assert.deepStrictEqual(phase1.map((result) => result.status), ["fulfilled", "fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled", "fulfilled", "fulfilled"])
      const refused = (phase1[3] as PromiseRejectedResult).reason as { _tag?: string; reason?: string }
      assert.deepStrictEqual([refused._tag, refused.reason], ["ToolRejected", "BudgetExhausted"])
      assert.isTrue(together.has("a+b"), "a and b ran at the same time")
      yield* a.close
      // b's calls wait for a slot, so b renews and takes the 2 slots a gave back.
      yield* Effect.promise(() => Promise.all(run(b.harness, "b", 2)))
      assert.strictEqual(b.leased.lease().slots, 2)
      const bLease = b.leased.lease()

      first.child.kill("SIGKILL")
      yield* exited(first.child)
      yield* coordinatorProcess(server!.url, namespace, profiles)

      // The lease the dead coordinator granted renews under the new one.
      const client = yield* CoordinatorClient.make({ namespace }).pipe(withTransport)
      const renewed = yield* client.renew({ sessionId: Ids.sessionId("b"), leaseId: bLease.id, more: false })
      assert.strictEqual(renewed.id, bLease.id)
      assert.isAbove(renewed.expiresAt, bLease.expiresAt)
      assert.strictEqual(renewed.slots, 2)
      // The 2 slots b holds still count: while b's calls run on them, a new session of the profile
      // gets the one left. (An idle b gives its slots back after retryMs, so they are held busy.)
      const busy = Promise.all(run(b.harness, "b", 2))
      for (let i = 0; i < 200 && (inside.get("b") ?? 0) < 2; i++) yield* Effect.sleep(25)
      assert.strictEqual(inside.get("b"), 2, "b's two calls run at once")
      const c = yield* session("c", 10)
      assert.strictEqual(c.leased.lease().slots, profileSlots - 2)
      yield* Effect.promise(() => busy)
      yield* created(c.harness)
      yield* Effect.promise(() => Promise.all([...run(b.harness, "b", 2), ...run(c.harness, "c", 2)]))
      assert.isTrue(together.has("b+c"), "b and c ran at the same time")

      // a's budget, spent before the restart, stays spent.
      const again = yield* session("a", 3)
      assert.strictEqual(again.leased.lease().invocations, 0)
      yield* created(again.harness)
      const exhausted = (yield* rejection(again.harness.callTool("held", { who: "a" }))) as { _tag?: string; reason?: string }
      assert.deepStrictEqual([exhausted._tag, exhausted.reason], ["ToolRejected", "BudgetExhausted"])
      // b reports its 10 calls to the new coordinator when it ends; admitted anew it has 2 left of 12.
      yield* b.close
      const bAgain = yield* session("b", 12)
      assert.strictEqual(bAgain.leased.lease().invocations, 2)

      assert.isAtMost(most, profileSlots, `at most ${profileSlots} calls of the profile ran at once, counted in the calls`)
      assert.isAtMost(workerMost, profileSlots, `at most ${profileSlots} invocations ran at once, counted by the worker`)
    }).pipe(Effect.scoped), 150_000)
})
