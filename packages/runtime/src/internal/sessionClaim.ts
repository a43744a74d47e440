/**
 * A host's claim on one session (`SessionOwnership`): taken before the session loads, renewed
 * every third of the claim's time to live by a fiber on the context's `Clock`, released after
 * the session closes. A renewal the store could not answer is tried again while the claim is still
 * valid; a claim lost for good (it lapsed, or another host took the session over) calls `lost`,
 * which closes the session here without storing it again.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Ids from "../Ids.js"
import type * as SessionOwnership from "../SessionOwnership.js"

/** Claims `sessionId` for `ownerId` until the scope closes, and keeps the claim renewed. */
export const hold = (
  ownership: SessionOwnership.SessionOwnershipShape,
  ownerId: string,
  sessionId: Ids.SessionId,
  lost: (why: string) => Effect.Effect<unknown>
): Effect.Effect<void, SessionOwnership.OwnershipError, Scope.Scope> =>
  Effect.gen(function*() {
    const claimed = yield* ownership.claim(sessionId, ownerId)
    // added before the actor, so it runs after the actor has closed
    yield* Effect.addFinalizer(() =>
      claimed.release.pipe(Effect.catchAll((error) => Effect.logWarning(`jitbox: releasing the claim on session ${sessionId}: ${error.message}`)))
    )
    /** Renews once; answers why the claim is lost, or undefined while it holds. */
    const renew = Effect.flatMap(Effect.either(claimed.renew), (renewed) => {
      if (renewed._tag === "Right") return Effect.succeed(undefined)
      return Effect.map(Clock.currentTimeMillis, (now) =>
        renewed.left.reason === "Unavailable" && now < claimed.expiresAt() ? undefined : renewed.left.message)
    })
    const every = Math.max(10, Math.floor(ownership.ttlMs / 3))
    const keep = renew.pipe(
      Effect.delay(Duration.millis(every)),
      Effect.repeat({ until: (why): why is string => why !== undefined }),
      Effect.flatMap(lost)
    )
    yield* Effect.forkScoped(Effect.interruptible(keep))
  })
