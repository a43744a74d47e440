/**
 * The one source of time for what a harness decides by time: call deadlines and timeouts, the
 * await window of `await_invocations`, and (in the runtime) lease expiry. `system` reads the
 * wall clock and uses timers; `layerEffect` takes Effect's `Clock` from the context, so a test
 * that provides `TestClock` moves every deadline with `TestClock.adjust` instead of sleeping.
 *
 * Durations in profile records are measurements, not decisions, and keep `performance.now()`.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DefaultServices from "effect/DefaultServices"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"

/** Cancels a scheduled callback; cancelling twice, or after it ran, does nothing. @since 0.1.0 @category models */
export type Cancel = () => void

/** @since 0.1.0 @category models */
export interface HarnessClockShape {
  /** Epoch milliseconds. */
  readonly now: () => number
  /** Runs `callback` once after `ms` milliseconds. */
  readonly schedule: (ms: number, callback: () => void) => Cancel
}

/** @since 0.1.0 @category tags */
export class HarnessClock extends Context.Tag("@jitbox/core/HarnessClock")<HarnessClock, HarnessClockShape>() {}

/**
 * The wall clock and Node's timers; a pending timer does not keep the process alive.
 *
 * @since 0.1.0
 * @category constructors
 */
export const system: HarnessClockShape = {
  now: Date.now,
  schedule: (ms, callback) => {
    const timer = setTimeout(callback, ms)
    timer.unref()
    return () => clearTimeout(timer)
  }
}

/** The clock of Effect's default services: what `Effect.clock` gives unless another one is provided. */
const liveClock = Context.get(DefaultServices.liveServices, Clock.Clock)

/**
 * A clock driven by Effect: `clock` for the time, the runtime's scheduler for the timers
 * (`TestClock` under `@effect/vitest`). Effect's own live clock is the wall clock and Node's
 * timers, so for it this is `system`: a deadline then costs one timer, not two fibers per call.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromEffect = <R>(clock: Clock.Clock, runtime: Runtime.Runtime<R>): HarnessClockShape => {
  if (clock === liveClock) return system
  const run = Runtime.runFork(runtime)
  return {
    now: () => clock.unsafeCurrentTimeMillis(),
    schedule: (ms, callback) => {
      // interruptible even when the runtime was captured in an uninterruptible region (a scoped
      // resource's acquisition): else cancelling would wait for the sleep, and the callback would run
      const fiber = run(Effect.interruptible(Effect.sleep(ms).pipe(Effect.andThen(Effect.sync(callback)))))
      return () => {
        run(Fiber.interrupt(fiber))
      }
    }
  }
}

/** @since 0.1.0 @category layers */
export const layerSystem: Layer.Layer<HarnessClock> = Layer.succeed(HarnessClock, system)

/** @since 0.1.0 @category layers */
export const layerEffect: Layer.Layer<HarnessClock> = Layer.effect(
  HarnessClock,
  Effect.zipWith(Effect.clock, Effect.runtime<never>(), fromEffect)
)
