/**
 * Single activation: two hosts share a store and a `SessionOwnership`; a session active in one
 * cannot be activated in the other (OwnershipError Held, naming the holder) until the first gives
 * it up, and then the second takes it over from the store with its tools. A host that loses its
 * claim closes the session without storing it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import * as Ids from "../src/Ids.js"
import * as MemoryTransport from "../src/MemoryTransport.js"
import * as Sessions from "../src/Sessions.js"
import * as SessionOwnership from "../src/SessionOwnership.js"
import * as SnapshotStore from "../src/SnapshotStore.js"
import * as Subject from "../src/Subject.js"
import { add, twiceSource } from "../../core/test/fixtures.js"

const prefix = Subject.prefix(Ids.namespace("owners"))

/** Hosts of sessions, each on its own transport (two processes, say), sharing one store and the claims. */
const sharing = (ttlMs: number) => {
  const store = SnapshotStore.makeMemory()
  const ownership = SessionOwnership.makeMemory({ ttlMs })
  const host = (ownerId: string) =>
    Effect.flatMap(
      Layer.build(Layer.mergeAll(
        MemoryTransport.layer(),
        Layer.succeed(SnapshotStore.SnapshotStore, store),
        Layer.succeed(SessionOwnership.SessionOwnership, ownership)
      )),
      (context) => Sessions.make({ prefix, ownerId, harness: { tools: [add] }, idleTimeout: "10 minutes" }).pipe(Effect.provide(context))
    )
  return { store, ownership, host }
}

describe("Sessions with SessionOwnership", () => {
  it.live("a session is active in one host at a time; the other takes it over once it is given up", () =>
    Effect.gen(function*() {
      const { host, ownership } = sharing(30_000)
      const a = yield* host("host-a")
      const b = yield* host("host-b")
      yield* Effect.promise(() => a.get("s1").createTool({ entrypoint: "twice", source: twiceSource }))
      assert.strictEqual(holderOf(yield* ownership.holder(Ids.sessionId("s1"))), "host-a")

      const refused = yield* Effect.promise(() => b.get("s1").ready.then(() => undefined, (error: unknown) => error))
      assert.strictEqual((refused as { _tag?: string })._tag, "OwnershipError", String(refused))
      assert.strictEqual((refused as { reason?: string }).reason, "Held")
      assert.include((refused as Error).message, "host-a")
      assert.deepStrictEqual(b.active(), [])

      yield* Effect.promise(() => a.forget("s1"))
      assert.strictEqual(holderOf(yield* ownership.holder(Ids.sessionId("s1"))), undefined)
      assert.strictEqual(yield* Effect.promise(() => b.get("s1").callTool("twice", { value: 21 })), 42)
      assert.strictEqual(holderOf(yield* ownership.holder(Ids.sessionId("s1"))), "host-b")
      const again = yield* Effect.promise(() => a.get("s1").ready.then(() => undefined, (error: unknown) => error))
      assert.strictEqual((again as { reason?: string }).reason, "Held")
    }).pipe(Effect.scoped), 30_000)

  it.effect("a host that loses its claim closes the session without storing it: the new owner's changes stay (TestClock)", () =>
    Effect.gen(function*() {
      const { host, store } = sharing(300)
      const a = yield* host("host-a")
      yield* Effect.promise(() => a.get("s1").createTool({ entrypoint: "twice", source: twiceSource }))
      assert.deepStrictEqual(a.active(), [Ids.sessionId("s1")])
      // the same host restarted (same owner id) takes the claim over: the first one's claim is lost
      const restarted = yield* host("host-a")
      yield* Effect.promise(() => restarted.get("s1").createTool({ name: "thrice", entrypoint: "twice", source: twiceSource }))
      // the first host's next renewal (every ttlMs / 3) finds the claim taken over
      yield* TestClock.adjust("100 millis")
      for (let turn = 0; turn < 1_000 && a.active().length > 0; turn++) yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      assert.deepStrictEqual(a.active(), [], "the first host kept the session after losing its claim")
      const stored = yield* store.load(Ids.sessionId("s1"))
      assert.isTrue(stored._tag === "Some")
      assert.deepStrictEqual(stored._tag === "Some" ? stored.value.tools.map((tool) => tool.name).sort() : [], ["thrice", "twice"])
      assert.deepStrictEqual(restarted.active(), [Ids.sessionId("s1")])
    }).pipe(Effect.scoped), 30_000)
})

const holderOf = (holder: { _tag: "Some"; value: { ownerId: string } } | { _tag: "None" }): string | undefined =>
  holder._tag === "Some" ? holder.value.ownerId : undefined
