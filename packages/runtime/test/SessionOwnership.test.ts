/**
 * Session ownership in this process: the shared suite (SessionOwnershipConformance.ts) on the
 * memory layer, under the TestClock, its options, and a store holding garbage (over `fromRecords`).
 */
import { HarnessError } from "@jitbox/core"
import { assert, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ids from "../src/Ids.js"
import * as SessionOwnership from "../src/SessionOwnership.js"
import { sessionOwnershipConformance } from "./SessionOwnershipConformance.js"

sessionOwnershipConformance("memory", (ttlMs) => SessionOwnership.layerMemory({ ttlMs }))

it.effect("a ttlMs that is not a positive integer fails the layer with ConfigError; the default is 4 s", () =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(Layer.build(SessionOwnership.layerMemory({ ttlMs: 0 })).pipe(Effect.scoped))
    assert.instanceOf(error, HarnessError.ConfigError)
    assert.strictEqual(error.option, "ttlMs")
    assert.strictEqual(SessionOwnership.makeMemory().ttlMs, 4_000)
  }))

it.effect("a stored record that does not decode, or lapses further ahead than horizonMs, is no claim: it is taken over by compare-and-set at its revision; a newer version is read by its owner and expiry", () =>
  Effect.gen(function*() {
    const values = new Map<string, { value: unknown; revision: number }>([
      ["junk", { value: "garbage", revision: 7 }],
      ["v1-bad", { value: { v: 1, owner: "", expiresAt: "soon" }, revision: 8 }],
      ["v3", { value: { v: 3, owner: "newer-host", expiresAt: 1_000, extra: true }, revision: 9 }],
      // well formed, but lapsing in 270 000 years: no host writes that, so it is no claim
      ["squatted", { value: { v: 1, owner: "squatter", expiresAt: 8.64e15 }, revision: 10 }]
    ])
    const writes: Array<[string, number]> = []
    const ownership = SessionOwnership.fromRecords({
      get: (sessionId) => Effect.sync(() => values.get(sessionId)),
      put: (sessionId, value, expected) =>
        Effect.sync(() => {
          if ((values.get(sessionId)?.revision ?? 0) !== expected) return undefined
          writes.push([sessionId, expected])
          values.set(sessionId, { value, revision: expected + 1 })
          return expected + 1
        }),
      remove: (sessionId) => Effect.sync(() => values.delete(sessionId))
    })
    for (const name of ["junk", "v1-bad", "squatted"]) {
      const sid = Ids.sessionId(name)
      assert.isTrue(Option.isNone(yield* ownership.holder(sid)))
      const claim = yield* ownership.claim(sid, "host-a")
      assert.strictEqual(claim.ownerId, "host-a")
    }
    assert.deepStrictEqual(writes, [["junk", 7], ["v1-bad", 8], ["squatted", 10]])
    const held = yield* Effect.flip(ownership.claim(Ids.sessionId("v3"), "host-a"))
    assert.strictEqual(held.reason, "Held")
    assert.strictEqual(held.owner, "newer-host")
  }))
