/**
 * The lease travels with the call: two session hosts in one process, each with its own
 * `RemoteCodeRunner`, on one transport, one coordinator and one worker (which requires admission),
 * both run code; each host's runner sends its own sessions' leases, and each host shows only its
 * own sessions' leases. (With an ambient registry of leases, a host whose runner was built with
 * another registry had every call refused.)
 */
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Coordinator from "../src/Coordinator.js"
import * as Embedded from "../src/Embedded.js"
import * as ExecutionProfile from "../src/ExecutionProfile.js"
import * as Ids from "../src/Ids.js"
import * as Ledger from "../src/Ledger.js"
import * as MemoryTransport from "../src/MemoryTransport.js"
import * as RemoteCodeRunner from "../src/RemoteCodeRunner.js"
import * as Sessions from "../src/Sessions.js"
import * as SnapshotStore from "../src/SnapshotStore.js"
import * as Subject from "../src/Subject.js"
import * as Worker from "../src/Worker.js"
import { add, twiceSource } from "../../core/test/fixtures.js"

const policy = { allowedLanguages: ["JavaScript"] } as const

describe("two session hosts in one process", () => {
  it.live("each with its own runner, both run code on one worker; their leases do not cross", () =>
    Effect.gen(function*() {
      const namespace = Ids.namespace("twohosts")
      const prefix = Subject.prefix(namespace)
      const context = yield* Layer.build(Layer.mergeAll(MemoryTransport.layer(), SnapshotStore.layerMemory(), Ledger.layerMemory))
      const coordinator = yield* Coordinator.make({ namespace, profiles: ExecutionProfile.all([{ name: "standard", policy }]) }).pipe(Effect.provide(context))
      const worker = yield* Worker.make({ prefix }).pipe(Effect.provide(context))
      const host = () =>
        Effect.gen(function*() {
          const runner = yield* Layer.build(RemoteCodeRunner.layer({ prefix })).pipe(Effect.provide(context))
          return yield* Sessions.make({
            prefix,
            harness: { tools: [add], codeExecution: "sandboxed", policy },
            admission: { profile: "standard", deploymentConsent: true },
            idleTimeout: "10 minutes"
          }).pipe(Effect.provide(Context.merge(context, runner)))
        })
      const one = yield* host()
      const two = yield* host()
      const run = (sessions: Sessions.SessionsShape, sessionId: string, value: number) =>
        Effect.promise(async () => {
          const session = sessions.get(sessionId)
          await session.createTool({ entrypoint: "twice", source: twiceSource })
          return session.callTool("twice", { value })
        })
      const [a, b] = yield* Effect.all([run(one, "a1", 1), run(two, "b1", 2)], { concurrency: 2 })
      assert.deepStrictEqual([a, b], [2, 4])
      assert.strictEqual(worker.fetches(), 2, "both ran on the worker, which checked each lease")
      assert.deepStrictEqual(one.leases.entries().map(([sessionId]) => sessionId), ["a1"])
      assert.deepStrictEqual(two.leases.entries().map(([sessionId]) => sessionId), ["b1"])
      assert.notStrictEqual(one.leases.get("a1")?.leaseId(), undefined)
      assert.isAtLeast(coordinator.requests(), 4, "two admissions and two verifications")
    }).pipe(Effect.scoped), 60_000)

  it.live("two embedded runtimes in one process both run code", () =>
    Effect.promise(async () => {
      const first = await Embedded.start({ namespace: "first", harness: { tools: [add], policy } })
      const second = await Embedded.start({ namespace: "second", harness: { tools: [add], policy } })
      try {
        const calls = [first, second].map(async (runtime, i) => {
          const session = runtime.sessions.get("s1")
          await session.createTool({ entrypoint: "twice", source: twiceSource })
          return session.callTool("twice", { value: i + 1 })
        })
        assert.deepStrictEqual(await Promise.all(calls), [2, 4])
        assert.strictEqual(first.leases.entries().length, 1)
        assert.strictEqual(second.leases.entries().length, 1)
      } finally {
        await Promise.all([first.close(), second.close()])
      }
    }), 60_000)
})
