/**
 * The renewer of a session's lease: a background fiber on the context's `Clock` that renews the
 * lease before it runs out (a quarter of its lifetime ahead), tells the coordinator what the lease
 * spent with each renewal (and renews at once when a tool version was created), asks for more
 * invocations when few are left, for the policy's most slots while calls wait for one (again every `retryMs` while the
 * profile has none free), and gives back the slots no call has used for `retryMs`, so an idle
 * session never holds a profile's concurrency from the others.
 *
 * Each step sleeps until the next thing it must look at, or until a call wakes it; a renewal that
 * fails is retried after `retryMs`. It stops once the lease expired or the coordinator no longer
 * knows it (`AdmissionError`).
 */
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import type { CoordinatorClient } from "../CoordinatorClient.js"
import type { LeaseHold } from "./leaseHold.js"

/** The slots to ask for: the most while calls wait, those running when some lie idle, else the same. */
const wantedSlots = (hold: LeaseHold): number =>
  hold.wantsSlots() ? hold.most : hold.wantsShrink() ? hold.slots.running() : hold.lease.slots

/** Renews once; answers whether the renewer goes on. */
const renewOnce = (hold: LeaseHold, client: CoordinatorClient): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const more = hold.needsMore()
    const before = hold.lease.invocations
    const held = hold.lease.slots
    const wanted = wantedSlots(hold)
    if (wanted < held) hold.shrinkingTo = wanted
    hold.unreported = false
    const spent = { ...hold.spent }
    const result = yield* Effect.either(client.renew({ sessionId: hold.sessionId, leaseId: hold.lease.id, more, slots: wanted, spent })).pipe(
      Effect.onInterrupt(() => Effect.sync(() => hold.shrinkingTo = Infinity))
    )
    if (result._tag === "Right") {
      hold.lease = result.right
      hold.leasedAt = hold.now()
    }
    hold.shrinkingTo = Infinity
    hold.slots.pump()
    if (result._tag === "Right") {
      hold.renewals++
      if (more && hold.lease.invocations === before) hold.upstreamSpent = true
      if (wanted > held && hold.lease.slots <= held) hold.growRefusedAt = hold.now()
      return true
    }
    const error = result.left
    if (error._tag === "AdmissionError") {
      hold.revoked = true
      return false
    }
    hold.unreported = true
    yield* Effect.logWarning(`jitbox: renewing the lease of session '${hold.sessionId}' failed: ${error.message}`)
    yield* Effect.sleep(hold.retryMs)
    return true
  })

/** How long the renewer may sleep before it must look again. */
const nextLook = (hold: LeaseHold): number => {
  const t = hold.now()
  const { lease, slots } = hold
  let delay = Math.max(0, hold.renewAt() - t)
  if (slots.waiting() > 0 && lease.slots < hold.most) delay = Math.min(delay, Math.max(0, hold.growRefusedAt + hold.retryMs - t))
  // slots held are renewed before the coordinator gives them back
  delay = Math.min(delay, Math.max(0, hold.slotsDueAt() - t))
  // while it holds slots, it looks every retryMs whether they are still used
  if (lease.slots > 0) delay = Math.min(delay, Math.max(1, lease.slots > slots.running() ? hold.lastUsed + hold.retryMs - t : hold.retryMs))
  return delay
}

/** One step: waits until something is wanted or due, then renews if it is; answers whether to go on. */
const step = (hold: LeaseHold, client: CoordinatorClient): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    if (hold.expired()) return false
    const delay = nextLook(hold)
    if (!hold.wantsRenewal() && delay > 0) yield* Effect.race(Effect.sleep(delay), Queue.take(hold.wake))
    // what a call nudges from now on is seen by the next step
    hold.looked()
    if (hold.expired()) return false
    if (hold.now() < hold.renewAt() && !hold.wantsRenewal()) return true
    return yield* renewOnce(hold, client)
  })

/**
 * Forks the renewer in the scope; it is interruptible even when the admission is made inside an
 * uninterruptible region (a session activating).
 */
export const fork = (hold: LeaseHold, client: CoordinatorClient): Effect.Effect<void, never, Scope.Scope> =>
  Effect.asVoid(Effect.forkScoped(Effect.interruptible(Effect.repeat(step(hold, client), { while: (goOn) => goOn }))))
