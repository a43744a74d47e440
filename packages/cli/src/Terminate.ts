/**
 * How `jitbox dev` stops a process it started: SIGTERM (the process's clean stop), then SIGKILL
 * when it has not exited within a bound.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type { ChildProcess } from "node:child_process"

/**
 * SIGTERM, then SIGKILL after `forceAfterMs`; succeeds once the process has exited.
 *
 * @since 0.1.0
 * @category constructors
 */
export const terminate = (child: ChildProcess, forceAfterMs: number): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return resume(Effect.void)
    const timer = setTimeout(() => child.kill("SIGKILL"), forceAfterMs)
    child.once("exit", () => {
      clearTimeout(timer)
      resume(Effect.void)
    })
    child.kill("SIGTERM")
  })
