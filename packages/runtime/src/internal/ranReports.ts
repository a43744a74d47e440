/**
 * A worker's count of the invocations it ran under each lease, told to the coordinator
 * (`coordinator.<principal>.ran`) every `intervalMs` while there is anything to tell, and once more
 * when the scope closes: the coordinator charges a lease what its workers counted, whatever its
 * session host says it spent.
 *
 * Counting is a map update on the invocation path. At most `CoordinatorProtocol.ranLimit` leases
 * are counted between two reports: a new one beyond that sends the report at once. A report the
 * coordinator does not confirm is kept for the next one while it fits, and logged.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type { CoordinatorClient } from "../CoordinatorClient.js"
import { ranLimit } from "../CoordinatorProtocol.js"
import type * as Ids from "../Ids.js"

/** How often a worker reports by default. */
export const defaultIntervalMs = 1_000

/** The longest the last report may take when the worker closes. */
const lastReportMs = 2_000

export interface RanReports {
  /** Counts one invocation run under the lease. */
  readonly count: (sessionId: Ids.SessionId, leaseId: Ids.LeaseId) => void
  /** Leases counted since the last report. */
  readonly pending: () => number
}

interface Entry {
  readonly sessionId: Ids.SessionId
  readonly leaseId: Ids.LeaseId
  invocations: number
}

export const make = (coordinator: CoordinatorClient, intervalMs: number): Effect.Effect<RanReports, never, Scope.Scope> =>
  Effect.gen(function*() {
    let counted = new Map<string, Entry>()
    const send = Effect.suspend(() => {
      if (counted.size === 0) return Effect.void
      const sent = counted
      counted = new Map()
      const leases = [...sent.values()].map(({ invocations, leaseId, sessionId }) => ({ sessionId, leaseId, invocations }))
      return coordinator.ran({ leases }).pipe(
        Effect.asVoid,
        Effect.catchAll((error) =>
          Effect.zipRight(
            Effect.sync(() => {
              for (const [key, entry] of sent) {
                const now = counted.get(key)
                if (now !== undefined) now.invocations += entry.invocations
                else if (counted.size < ranLimit) counted.set(key, entry)
              }
            }),
            Effect.logWarning(`jitbox: the coordinator did not confirm what this worker ran (${error.message}); it is told again`)
          )
        )
      )
    })
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    yield* Effect.forkScoped(Effect.interruptible(Effect.schedule(send, Schedule.spaced(Duration.millis(intervalMs)))))
    yield* Effect.addFinalizer(() => Effect.ignore(Effect.timeout(send, lastReportMs)))
    return {
      count: (sessionId, leaseId) => {
        const key = `${sessionId}\u0000${leaseId}`
        const entry = counted.get(key)
        if (entry !== undefined) {
          entry.invocations++
          return
        }
        if (counted.size >= ranLimit) runFork(send)
        counted.set(key, { sessionId, leaseId, invocations: 1 })
      },
      pending: () => counted.size
    }
  })
