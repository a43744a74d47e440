/**
 * What a `SnapshotStore` layer does, as one suite (SnapshotStore.test.ts on the memory and file
 * layers, packages/nats on JetStream KV): what is saved loads back, sessions are independent,
 * `remove` deletes, and a snapshot over `maxBytes` or one the schema refuses is not stored.
 */
import type { JitHarnessSnapshot } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Ids from "../src/Ids.js"
import type * as SnapshotStore from "../src/SnapshotStore.js"

export const conformanceSnapshot: JitHarnessSnapshot.JitHarnessSnapshot = {
  format_version: 1,
  tools: [{ name: "twice", language: "javascript", entrypoint: "twice", source: "export const twice = 1\n" }],
  text_tools: [{ name: "notes", description: "Notes.", markdown: "# Notes" }],
  base_tools: ["add"],
  unloaded_tools: ["notes"]
}

/** A fresh, empty store for each test, bounded by `maxBytes` when given. */
export type MakeStore = (maxBytes?: number) => Effect.Effect<SnapshotStore.SnapshotStoreShape, unknown, Scope.Scope>

export const snapshotStoreConformance = (name: string, make: MakeStore) =>
  describe(`SnapshotStore on ${name}`, () => {
    const sid = Ids.sessionId("s1")
    const snapshot = conformanceSnapshot

    it.scoped("what is saved loads back; a session never saved has none; remove deletes", () =>
      Effect.gen(function*() {
        const store = yield* Effect.orDie(make())
        assert.isTrue(Option.isNone(yield* store.load(sid)))
        yield* store.save(sid, snapshot)
        assert.deepStrictEqual(Option.getOrThrow(yield* store.load(sid)), snapshot)
        yield* store.save(sid, { ...snapshot, unloaded_tools: [] })
        assert.deepStrictEqual(Option.getOrThrow(yield* store.load(sid)).unloaded_tools, [])
        yield* store.remove(sid)
        yield* store.remove(sid)
        assert.isTrue(Option.isNone(yield* store.load(sid)))
      }))

    it.scoped("sessions are independent: each loads its own snapshot, removing one leaves the other", () =>
      Effect.gen(function*() {
        const store = yield* Effect.orDie(make())
        const other = Ids.sessionId("s-2_B")
        yield* store.save(sid, snapshot)
        yield* store.save(other, { ...snapshot, base_tools: [] })
        assert.deepStrictEqual(Option.getOrThrow(yield* store.load(other)).base_tools, [])
        assert.deepStrictEqual(Option.getOrThrow(yield* store.load(sid)).base_tools, ["add"])
        yield* store.remove(sid)
        assert.isTrue(Option.isNone(yield* store.load(sid)))
        assert.deepStrictEqual(Option.getOrThrow(yield* store.load(other)).base_tools, [])
      }))

    it.scoped("a snapshot over maxBytes, or one the schema refuses, is not stored", () =>
      Effect.gen(function*() {
        const store = yield* Effect.orDie(make(2_000))
        yield* store.save(sid, snapshot)
        const large = { ...snapshot, text_tools: [{ name: "notes", description: "Notes.", markdown: "x".repeat(3_000) }] }
        const tooLarge = yield* Effect.flip(store.save(sid, large))
        assert.strictEqual(tooLarge._tag, "SnapshotError")
        assert.strictEqual(tooLarge.reason, "Invalid")
        assert.include(tooLarge.detail, "at most 2000")
        const invalid = yield* Effect.flip(store.save(sid, { ...snapshot, tools: [{ ...snapshot.tools[0]!, name: "bad name" }] }))
        assert.strictEqual(invalid.reason, "Invalid")
        assert.deepStrictEqual(Option.getOrThrow(yield* store.load(sid)), snapshot)
      }))
  })
