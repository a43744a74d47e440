/**
 * Session ownership in this process: the shared suite (SessionOwnershipConformance.ts) on the
 * memory layer, under the TestClock, and its options.
 */
import { HarnessError } from "@jitbox/core"
import { assert, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SessionOwnership from "../src/SessionOwnership.js"
import { sessionOwnershipConformance } from "./SessionOwnershipConformance.js"

sessionOwnershipConformance("memory", (ttlMs) => SessionOwnership.layerMemory({ ttlMs }))

it.effect("a ttlMs that is not a positive integer fails the layer with ConfigError; the default is 30 s", () =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(Layer.build(SessionOwnership.layerMemory({ ttlMs: 0 })).pipe(Effect.scoped))
    assert.instanceOf(error, HarnessError.ConfigError)
    assert.strictEqual(error.option, "ttlMs")
    assert.strictEqual(SessionOwnership.makeMemory().ttlMs, 30_000)
  }))
