/**
 * What a `Ledger` layer does, as one suite (Ledger.test.ts in memory, packages/nats on JetStream
 * KV): records read back with their revision, every write and every removal is a compare-and-set,
 * and keys list the least recently written first.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Ledger, LedgerError } from "../src/Ledger.js"

export const ledgerConformance = (name: string, layer: () => Layer.Layer<Ledger, unknown>) =>
  describe(`Ledger on ${name}`, () => {
    it.effect("a record reads back with its revision; a missing one is undefined", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        assert.isUndefined(yield* ledger.get("session.a"))
        const revision = yield* ledger.put("session.a", { used: 3 }, 0)
        assert.deepStrictEqual(yield* ledger.get("session.a"), { value: { used: 3 }, revision })
      }).pipe(Effect.provide(layer() as Layer.Layer<Ledger>)))

    it.effect("a write at a stale revision, or a second create, fails Conflict and changes nothing", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const first = yield* ledger.put("profile.p", { n: 1 }, 0)
        const again = yield* Effect.flip(ledger.put("profile.p", { n: 9 }, 0))
        assert.instanceOf(again, LedgerError)
        assert.strictEqual(again.reason, "Conflict")
        const second = yield* ledger.put("profile.p", { n: 2 }, first)
        assert.isAbove(second, first)
        const stale = yield* Effect.flip(ledger.put("profile.p", { n: 3 }, first))
        assert.strictEqual(stale.reason, "Conflict")
        assert.deepStrictEqual(yield* ledger.get("profile.p"), { value: { n: 2 }, revision: second })
      }).pipe(Effect.provide(layer() as Layer.Layer<Ledger>)))

    it.effect("a removal at the record's revision deletes it (not listed, reads as missing, created again at 0); at a stale one it fails Conflict and keeps it", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const first = yield* ledger.put("session.gone", { n: 1 }, 0)
        const second = yield* ledger.put("session.gone", { n: 2 }, first)
        const stale = yield* Effect.flip(ledger.remove("session.gone", first))
        assert.strictEqual(stale.reason, "Conflict")
        assert.deepStrictEqual(yield* ledger.get("session.gone"), { value: { n: 2 }, revision: second })
        yield* ledger.remove("session.gone", second)
        assert.isUndefined(yield* ledger.get("session.gone"))
        assert.deepStrictEqual(yield* ledger.keys("session.", 10), [])
        const again = yield* ledger.put("session.gone", { n: 3 }, 0)
        assert.deepStrictEqual(yield* ledger.get("session.gone"), { value: { n: 3 }, revision: again })
      }).pipe(Effect.provide(layer() as Layer.Layer<Ledger>)))

    it.effect("keys list the least recently written first, at most limit of them, under the prefix", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const a = yield* ledger.put("session.a", 1, 0)
        yield* ledger.put("session.b", 1, 0)
        yield* ledger.put("session.c", 1, 0)
        yield* ledger.put("profile.p", 1, 0)
        yield* ledger.put("session.a", 2, a)
        assert.deepStrictEqual(yield* ledger.keys("session.", 10), ["session.b", "session.c", "session.a"])
        assert.deepStrictEqual(yield* ledger.keys("session.", 2), ["session.b", "session.c"])
      }).pipe(Effect.provide(layer() as Layer.Layer<Ledger>)))
  })
