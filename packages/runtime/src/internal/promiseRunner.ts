/**
 * Runs an Effect from Promise code (a transport handler, a facade method) on a captured runtime,
 * rejecting with the typed failure itself rather than a FiberFailure, so a Promise caller gets the
 * same error an Effect caller does.
 */
import * as Cause from "effect/Cause"
import type * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"

export const promiseRunner = <R>(runtime: Runtime.Runtime<R>) => {
  const run = Runtime.runPromiseExit(runtime)
  return <A, E>(effect: Effect.Effect<A, E, R>): Promise<A> =>
    run(effect).then((exit) => {
      if (Exit.isSuccess(exit)) return exit.value
      throw Cause.squash(exit.cause)
    })
}

/** Runs an Effect with no requirements from Promise code, rejecting with its typed failure itself. */
export const runPromise: <A, E>(effect: Effect.Effect<A, E, never>) => Promise<A> = promiseRunner(Runtime.defaultRuntime)
