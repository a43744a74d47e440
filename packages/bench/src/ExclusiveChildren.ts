/**
 * The raw floor under jitbox's isolation discipline: `children` warm raw children (`RawEcho`, each
 * launched like the sandbox's JavaScript children) and at most one round trip per child at a time,
 * as a jitbox worker runs at most one invocation per sandboxed child. A round trip takes an idle
 * child, or waits, first come first served, for one to come back. No jitbox code is on the path.
 *
 * The pipelining floor (`RawEcho` alone) writes every request to one child as it comes; this one
 * is the floor for the same isolation jitbox keeps between calls.
 *
 * `make` is scoped: closing the scope kills every child.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { BenchSetupError } from "./BenchError.js"
import * as RawEcho from "./RawEcho.js"

/** @since 0.1.0 @category models */
export interface ExclusiveChildren extends RawEcho.RawEcho {
  /** How many children round trips are spread over. */
  readonly children: number
}

/**
 * Starts `children` raw children running `program` (default `RawEcho.echoLoop`), all warm before it
 * returns.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  children: number,
  program: string = RawEcho.echoLoop
): Effect.Effect<ExclusiveChildren, BenchSetupError, Scope.Scope> =>
  Effect.map(
    Effect.all(Array.from({ length: children }, () => RawEcho.launch(program)), { concurrency: "unbounded" }),
    (started) => ({ children, roundTrip: exclusive(started) })
  )

/** A round trip on an idle child of `children`, waiting first come first served when none is idle. */
const exclusive = (children: ReadonlyArray<RawEcho.RawEcho>): RawEcho.RawEcho["roundTrip"] => {
  const idle = [...children]
  const waiting: Array<(child: RawEcho.RawEcho) => void> = []
  const release = (child: RawEcho.RawEcho) => {
    const next = waiting.shift()
    if (next === undefined) idle.push(child)
    else next(child)
  }
  return async (args) => {
    const child = idle.pop() ?? await new Promise<RawEcho.RawEcho>((resolve) => waiting.push(resolve))
    try {
      return await child.roundTrip(args)
    } finally {
      release(child)
    }
  }
}
