/**
 * The lease a session holds (the session side of `LeasedAdmission`): the lease as last granted,
 * what was spent of it, the concurrency slots it hands out, and the questions the spending and
 * the renewer ask of it: whether it expired (by the context's `Clock`), how many invocations are
 * left, and whether to ask the coordinator for more invocations, for more slots or for fewer.
 *
 * It is plain mutable state read on every call; `wake` is how a call tells the renewer to look now
 * (a call waits for a slot, or invocations run low), once until the renewer looks.
 */
import { type JitPolicy, Slots } from "@jitbox/core"
import * as Queue from "effect/Queue"
import type { Admitted, Lease } from "../CoordinatorProtocol.js"
import type { SessionId } from "../Ids.js"

export class LeaseHold {
  lease: Lease
  /** When the coordinator last answered with the lease (its slots are kept from then until `slotsUntil`). */
  leasedAt: number
  /** The coordinator no longer knows the lease: nothing more is spent, and there is nothing to release. */
  revoked = false
  /** The coordinator has no more invocations to add to this lease. */
  upstreamSpent: boolean
  /** Renewals the coordinator granted. */
  renewals = 0
  /** What the lease has spent (from what the coordinator says it had spent, when it resumed a live lease). */
  readonly spent: { invocations: number; tools: number; repairs: number }
  /** A tool version was created since the coordinator was last told what the lease spent. */
  unreported = false
  readonly policy: JitPolicy.JitPolicy
  readonly consent: boolean
  /** The execution profile the session was admitted under (none for a profile pinned to a worker). */
  readonly profile: string | undefined
  /** Invocations left at which the renewer asks for more. */
  readonly lowWater: number
  /** The most slots the policy lets one session hold. */
  readonly most: number
  /** When a slot was last taken or given back. */
  lastUsed: number
  /** When the coordinator last had no slot to add. */
  growRefusedAt = -Infinity
  /**
   * While a renewal that gives slots back is in flight, no call takes more than it keeps: a call
   * taking one meanwhile would run on a slot the coordinator already counts as free.
   */
  shrinkingTo = Infinity
  readonly slots: Slots.Slots

  constructor(
    readonly sessionId: SessionId,
    admitted: Admitted,
    readonly retryMs: number,
    readonly now: () => number,
    readonly wake: Queue.Queue<void>
  ) {
    this.lease = admitted.lease
    this.spent = { ...(admitted.spent ?? { invocations: 0, tools: 0, repairs: 0 }) }
    this.leasedAt = now()
    this.policy = admitted.policy
    this.consent = admitted.deploymentConsent
    this.profile = admitted.capability.executionProfile
    // A lease holding the whole invocation budget has nothing more to ask for; nor has one granted
    // none with consent (the coordinator grants at least one while any is left).
    this.upstreamSpent = this.lease.invocations >= this.policy.maximumInvocations || (this.consent && this.lease.invocations === 0)
    this.lowWater = Math.max(1, Math.ceil(this.lease.invocations / 2))
    this.most = this.policy.maximumConcurrentInvocations
    this.lastUsed = now()
    // a call waiting for a slot wakes the renewer only when the lease could hold more slots
    this.slots = Slots.make(() => Math.min(this.lease.slots, this.shrinkingTo), () => {
      if (this.lease.slots < this.most) this.nudge()
    })
  }

  /** Set by `nudge` until the renewer looks: a call that runs low while it is set adds nothing. */
  nudged = false

  /** Tells the renewer to look now (once until it looks: not once per call). */
  readonly nudge = (): void => {
    if (this.nudged) return
    this.nudged = true
    Queue.unsafeOffer(this.wake, undefined)
  }

  /** The renewer looks now: the next nudge wakes it again. */
  readonly looked = (): void => {
    this.nudged = false
  }

  readonly expired = (): boolean => this.revoked || this.now() >= this.lease.expiresAt

  readonly left = (): number => this.lease.invocations - this.spent.invocations

  /** A renewal is due this long before the lease runs out: a quarter of its lifetime. */
  readonly renewAt = (): number => this.lease.expiresAt - this.lease.lifetimeSeconds * 250

  readonly needsMore = (): boolean => this.consent && !this.upstreamSpent && this.left() <= this.lowWater

  readonly wantsSlots = (): boolean =>
    this.consent && this.slots.waiting() > 0 && this.lease.slots < this.most && this.now() - this.growRefusedAt >= this.retryMs

  readonly wantsShrink = (): boolean =>
    this.slots.waiting() === 0 && this.lease.slots > this.slots.running() && this.now() - this.lastUsed >= this.retryMs

  /**
   * When the slots held must be renewed: two thirds of the way to `slotsUntil`, after which the
   * coordinator gives them back to the profile; never while none are held.
   */
  readonly slotsDueAt = (): number =>
    this.lease.slots === 0 || this.lease.slotsUntil === undefined ? Infinity : this.leasedAt + (this.lease.slotsUntil - this.leasedAt) * 2 / 3

  /** Whether to ask the coordinator now, whenever the renewal itself is due (a version created is reported at once). */
  readonly wantsRenewal = (): boolean => this.unreported || this.needsMore() || this.wantsSlots() || this.wantsShrink() || this.now() >= this.slotsDueAt()
}
