/**
 * The harness's clock from Effect: timers on the context's `Clock` (here `TestClock`) that a
 * cancel really stops, even when the runtime was captured inside an uninterruptible region (as a
 * scoped resource's acquisition is: the runtime's `Sessions` builds each harness so); and Effect's
 * live clock is the system clock itself, with no fiber per timer.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as TestClock from "effect/TestClock"
import * as HarnessClock from "../src/HarnessClock.js"

const fromContext = Effect.zipWith(Effect.clock, Effect.runtime<never>(), HarnessClock.fromEffect)

describe("HarnessClock.fromEffect", () => {
  it.effect("runs a timer when the clock reaches it, not before", () =>
    Effect.gen(function*() {
      const clock = yield* fromContext
      let fired = 0
      clock.schedule(1_000, () => fired++)
      yield* TestClock.adjust("999 millis")
      assert.strictEqual(fired, 0)
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(fired, 1)
    }))

  it.effect("a cancelled timer never runs, even from a runtime captured in an uninterruptible region", () =>
    Effect.gen(function*() {
      const clock = yield* Effect.uninterruptible(fromContext)
      let fired = 0
      const cancel = clock.schedule(1_000, () => fired++)
      yield* Effect.yieldNow()
      cancel()
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual(fired, 0)
      const soon = clock.schedule(1_000, () => fired++)
      cancel()
      yield* TestClock.adjust("1 second")
      assert.strictEqual(fired, 1, "cancelling one timer leaves the others")
      soon()
    }))

  it("on Effect's live clock it is the system clock: Node's timers, no fiber per timer", () => {
    const live = Effect.runSync(Effect.clock)
    assert.strictEqual(HarnessClock.fromEffect(live, Runtime.defaultRuntime), HarnessClock.system)
  })
})
