/**
 * How every `jitbox` command serves: it starts its actor in a scope, prints one `ready …` line on
 * stdout, and serves until it is interrupted (SIGTERM or SIGINT: `NodeRuntime.runMain` interrupts
 * the main fiber). Interruption closes the scope, so the actor's finalizers run (a worker drains,
 * connections drain and close), and then one `stopped …` line is printed.
 *
 * @since 0.1.0
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/**
 * Starts `start` in a scope, prints `ready <label>`, serves until interrupted (or until `serving`,
 * made once it has started, fails), then prints `stopped <label>` once the scope has closed.
 *
 * @since 0.1.0
 * @category constructors
 */
export const untilInterrupted = <E, R, E2 = never>(
  start: Effect.Effect<string, E, R | Scope.Scope>,
  serving: () => Effect.Effect<never, E2> = () => Effect.never
): Effect.Effect<never, E | E2, Exclude<R, Scope.Scope>> =>
  Effect.gen(function*() {
    let label: string | undefined
    return yield* Effect.scoped(
      Effect.gen(function*() {
        label = yield* start
        yield* Console.log(`ready ${label}`)
        return yield* serving()
      })
    ).pipe(Effect.onInterrupt(() => label === undefined ? Effect.void : Console.log(`stopped ${label}`)))
  })
