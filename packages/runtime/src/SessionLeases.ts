/**
 * The leases the sessions of one `Sessions` host hold now, read only (`Sessions.leases`): for a
 * gauge of the budgets left (`@jitbox/otel`'s `Metrics.watchLeases`) and for operators. It is a
 * view, not a registry: what a worker checks travels with each message, read from the session's
 * own `Admission` (core's `CallHost.grant`), so two hosts in one process never see each other's
 * leases.
 *
 * @since 0.1.0
 */
import type * as LeasedAdmission from "./LeasedAdmission.js"

/** One session's lease, as the host holds it now. @since 0.1.0 @category models */
export interface SessionLease {
  /** The lease's id now (a session admitted again gets a new one). */
  readonly leaseId: () => string
  /** The worker pool of the session's profile. */
  readonly location: string | undefined
  /** The one worker the session's profile pins its code to. */
  readonly sandboxNodeId: string | undefined
  /** Invocations the lease has left now (granted minus spent); for gauges. */
  readonly invocationsLeft?: (() => number) | undefined
}

/** @since 0.1.0 @category models */
export interface SessionLeasesShape {
  readonly get: (sessionId: string) => SessionLease | undefined
  /** Every lease held now, by session id. */
  readonly entries: () => ReadonlyArray<readonly [string, SessionLease]>
}

/** The lease of one admitted session. @since 0.1.0 @category constructors */
export const ofAdmission = (admission: LeasedAdmission.LeasedAdmission): SessionLease => ({
  leaseId: () => admission.lease().id,
  location: admission.location,
  sandboxNodeId: admission.capability.sandboxNodeId,
  invocationsLeft: () => Math.max(0, admission.lease().invocations - admission.usage().invocations)
})

/**
 * The view of `admissions` (the host's live admissions by session id, which the host keeps).
 *
 * @since 0.1.0
 * @category constructors
 */
export const view = (admissions: ReadonlyMap<string, LeasedAdmission.LeasedAdmission>): SessionLeasesShape => ({
  get: (sessionId) => {
    const admission = admissions.get(sessionId)
    return admission === undefined ? undefined : ofAdmission(admission)
  },
  entries: () => [...admissions].map(([sessionId, admission]) => [sessionId, ofAdmission(admission)] as const)
})
