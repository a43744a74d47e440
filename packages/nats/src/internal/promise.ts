/**
 * Effects run for async callers: a failure rejects with the error itself (the tagged error, with
 * its `_tag` and fields), never with the `FiberFailure` that `Effect.runPromise` wraps it in.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"

/** Runs `effect`; rejects with its failure (or defect) as it is. */
export const runPromise = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromiseExit(effect).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    throw Cause.squash(exit.cause)
  })

/**
 * Builds `effect` in a scope of its own and answers what it built with `close`, which closes
 * that scope once (calling it again answers the same promise). A failed build closes the scope
 * before it rejects.
 */
export const openScoped = async <A, E>(
  effect: Effect.Effect<A, E, Scope.Scope>
): Promise<{ readonly value: A; readonly close: () => Promise<void> }> => {
  const scope = Effect.runSync(Scope.make())
  const opened = await Effect.runPromiseExit(Scope.extend(effect, scope))
  if (Exit.isFailure(opened)) {
    await Effect.runPromise(Scope.close(scope, opened))
    throw Cause.squash(opened.cause)
  }
  let closing: Promise<void> | undefined
  return { value: opened.value, close: () => closing ??= Effect.runPromise(Scope.close(scope, Exit.void)) }
}
