/**
 * The end of a session's lease: when the scope closes, calls waiting for a slot are dropped and
 * the lease is released to the coordinator with what was spent of it. A release the coordinator
 * does not confirm is logged as such (JT-HOST-06), never assumed; a lease the coordinator no
 * longer knows (revoked) is not released.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { CoordinatorClient } from "../CoordinatorClient.js"
import type { LeaseHold } from "./leaseHold.js"

/** Releases the lease when the scope closes. */
export const onClose = (hold: LeaseHold, client: CoordinatorClient): Effect.Effect<void, never, Scope.Scope> =>
  Effect.addFinalizer(() =>
    Effect.gen(function*() {
      hold.slots.clear()
      if (hold.revoked) return
      const { lease, sessionId } = hold
      const released = yield* Effect.either(client.release({ sessionId, leaseId: lease.id, spent: hold.spent }))
      if (released._tag === "Left") {
        yield* Effect.logWarning(
          `jitbox: the release of lease '${lease.id}' of session '${sessionId}' was not confirmed (${released.left.message}); the coordinator charges the lease what it verifiably spent when it expires`
        )
      }
    })
  )
