/**
 * Passivation of a host's idle sessions: a session is idle once no request is attached and it has
 * done no work for `idleMs`, or for `admissionMs` (the shorter) if it has done no work at all since
 * it activated (an activation nobody used). A sweep every quarter of the shorter of the two
 * (between 100 ms and 30 s),
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

/** The idle timeouts: `idleMs`, and `admissionMs` for a session not used since it activated. */
export interface Timeouts {
  readonly idleMs: number
  readonly admissionMs: number
}

const idle = ({ admissionMs, idleMs }: Timeouts) => (actor: SessionActor.SessionActor, now: number): boolean =>
  !actor.pinned() && actor.idleFor(now) >= (actor.used() ? idleMs : Math.min(idleMs, admissionMs))

/** Stores and releases the session if it is active and idle (`force`: even if busy); answers whether it did. */
export const passivate = (slots: SessionSlots, timeouts: Timeouts) => {
  const isIdle = idle(timeouts)
  return (sessionId: Ids.SessionId, options?: { readonly force?: boolean }): Effect.Effect<boolean, JitHarnessSnapshot.SnapshotError> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      slots.release(sessionId, (actor) => options?.force === true || isIdle(actor, now)))
}

/** Passivates the idle sessions of `slots` until the scope closes. */
export const sweep = (slots: SessionSlots, timeouts: Timeouts): Effect.Effect<unknown, never, Scope.Scope> => {
  const isIdle = idle(timeouts)
  const every = Math.min(30_000, Math.max(100, Math.min(timeouts.idleMs, timeouts.admissionMs) / 4))
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
