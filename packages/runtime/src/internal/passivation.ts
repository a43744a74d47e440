/**
 * Passivation of a host's idle sessions: a session is idle once no request is attached and it has
 * done no work for `idleMs`. A sweep every quarter of the idle timeout (between 100 ms and 30 s),
 * a fiber on the context's `Clock` (so a test drives it with `TestClock`), stores and closes each
 * idle session; one whose snapshot cannot be stored stays active, with a warning. `passivate`
 * does the same for one session on demand (`force`: even if it is busy).
 */
import type { JitHarnessSnapshot } from "@jitbox/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Ids from "../Ids.js"
import type * as SessionActor from "../SessionActor.js"
import type { SessionSlots } from "./sessionSlots.js"

const idle = (idleMs: number) => (actor: SessionActor.SessionActor, now: number): boolean =>
  !actor.pinned() && actor.idleFor(now) >= idleMs

/** Stores and releases the session if it is active and idle (`force`: even if busy); answers whether it did. */
export const passivate = (slots: SessionSlots, idleMs: number) => {
  const isIdle = idle(idleMs)
  return (sessionId: Ids.SessionId, options?: { readonly force?: boolean }): Effect.Effect<boolean, JitHarnessSnapshot.SnapshotError> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      slots.release(sessionId, (actor) => options?.force === true || isIdle(actor, now)))
}

/** Passivates the idle sessions of `slots` until the scope closes. */
export const sweep = (slots: SessionSlots, idleMs: number): Effect.Effect<unknown, never, Scope.Scope> => {
  const isIdle = idle(idleMs)
  const every = Math.min(30_000, Math.max(100, idleMs / 4))
  const once = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    for (const [sessionId, actor] of slots.entries()) {
      if (!isIdle(actor, now)) continue
      yield* slots.release(sessionId, (actor) => isIdle(actor, now)).pipe(
        Effect.catchAll((error) =>
          Effect.logWarning(`session ${sessionId} stays active: its snapshot could not be stored (${error.message})`)
        )
      )
    }
  })
  return Effect.forkScoped(Effect.interruptible(Effect.forever(Effect.zipRight(Effect.sleep(every), once))))
}
