/**
 * Core's `Admission` for one session, with budgets leased from the root coordinator.
 *
 * The session is admitted once (`coordinator.<principal>.admit`, as `principal`, the NATS user
 * the host connects as; default `default`), and renewed and released as the same principal: the
 * coordinator refuses any other (`NotOwner`). The lease it gets says how many tool
 * versions, repairs and invocations it may spend and how many concurrency slots of its profile
 * it holds. Spending is local: `trySpendInvocation` and `acquire` never wait on the coordinator.
 * A background fiber renews the lease before it runs out (a quarter of `leaseLifetimeSeconds`
 * ahead), asks for more invocations when few are left, for slots when calls wait (again every
 * `retryMs` while the profile has none free), and gives its slots back once no call has used one
 * for `retryMs`, so an idle session never holds a profile's concurrency from the others. A lease
 * that reached `expiresAt` (by the context's `Clock`) spends nothing more; a budget that is spent
 * stays spent. Without `deploymentConsent` (JT-CFG-05) no version is accepted and no code call
 * runs. Closing the scope releases the lease, reporting what was spent; a release the
 * coordinator does not confirm is logged as such (JT-HOST-06), never assumed.
 *
 * The parts, in `internal/`: `leaseHold` (the lease held and what was spent of it), `leaseSpending`
 * (the per-call checks and spending), `leaseRenewal` (the background renewer) and `leaseRelease`
 * (the release on close).
 *
 * @since 0.1.0
 */
import { Admission } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as CoordinatorClient from "./CoordinatorClient.js"
import type * as CoordinatorProtocol from "./CoordinatorProtocol.js"
import * as Ids from "./Ids.js"
import { LeaseHold } from "./internal/leaseHold.js"
import * as LeaseRelease from "./internal/leaseRelease.js"
import * as LeaseRenewal from "./internal/leaseRenewal.js"
import * as LeaseSpending from "./internal/leaseSpending.js"
import type * as Transport from "./Transport.js"

/** @since 0.1.0 @category models */
export type LeasedAdmissionOptions = CoordinatorProtocol.AdmitRequest & CoordinatorClient.Address & CoordinatorClient.Asker & LeaseTimings

/** @since 0.1.0 @category models */
export interface LeaseTimings {
  /** How long one coordinator request may take (default 10 000 ms). */
  readonly timeoutMs?: number | undefined
  /** How often a session retries a renewal that failed, or asks for slots while calls wait (default 1 000 ms, by the `Clock`). */
  readonly retryMs?: number | undefined
}

/** @since 0.1.0 @category models */
export interface LeasedAdmission extends Admission.AdmissionShape {
  readonly capability: CoordinatorProtocol.CapabilityDescriptor
  readonly deploymentConsent: boolean
  /** The worker pool of the session's profile (`location`), when it names one. */
  readonly location: string | undefined
  /** The lease as last granted. */
  readonly lease: () => CoordinatorProtocol.Lease
  /** Whether the lease ran out (or the coordinator no longer knows it): nothing more is spent. */
  readonly expired: () => boolean
  /** Renewals the coordinator granted. */
  readonly renewals: () => number
}

/**
 * Admits the session and keeps its lease until the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: LeasedAdmissionOptions
): Effect.Effect<LeasedAdmission, CoordinatorProtocol.CoordinatorError, Transport.Transport | Scope.Scope> =>
  Effect.gen(function*() {
    if (options.principal !== undefined) yield* Ids.decode(Ids.Principal, "principal")(options.principal)
    const client = yield* CoordinatorClient.make(options)
    const clock = yield* Effect.clock
    const admitted = yield* client.admit(options)
    const wake = yield* Queue.sliding<void>(1)
    const hold = new LeaseHold(options.sessionId, admitted, options.retryMs ?? 1_000, () => clock.unsafeCurrentTimeMillis(), wake)
    yield* LeaseRelease.onClose(hold, client)
    yield* LeaseRenewal.fork(hold, client)
    // one grant per lease id, read on every call: a runner keeps the route it built for it
    let grant: Admission.Grant = { id: hold.lease.id, location: admitted.location, sandboxNodeId: admitted.capability.sandboxNodeId }
    return {
      ...LeaseSpending.admission(hold),
      capability: admitted.capability,
      deploymentConsent: hold.consent,
      location: admitted.location,
      lease: () => hold.lease,
      grant: () => grant.id === hold.lease.id ? grant : (grant = { ...grant, id: hold.lease.id }),
      expired: hold.expired,
      renewals: () => hold.renewals
    }
  })

/**
 * The harness's `Admission` from a coordinator lease.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: LeasedAdmissionOptions): Layer.Layer<Admission.Admission, CoordinatorProtocol.CoordinatorError, Transport.Transport> =>
  Layer.scoped(Admission.Admission, make(options))
