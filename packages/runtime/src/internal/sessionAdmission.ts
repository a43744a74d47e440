/**
 * How a session is admitted when it activates (D-19): with the host's `admission`, a lease from
 * the namespace's root coordinator (`LeasedAdmission`), kept in the host's map of admissions
 * while the session's scope is open (`Sessions.leases` reads it); without one, a refusal of every
 * new version when the policy requires a root coordinator (`RootCoordinatorRequired`), or none,
 * and the harness's own policy decides.
 */
import { Admission, HarnessError, JitPolicy } from "@jitbox/core"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as CoordinatorProtocol from "../CoordinatorProtocol.js"
import type * as Ids from "../Ids.js"
import * as LeasedAdmission from "../LeasedAdmission.js"
import type * as SessionActor from "../SessionActor.js"
import type * as Sessions from "../Sessions.js"
import type * as Transport from "../Transport.js"

/** The decoded policy when it requires a root coordinator and no admission is configured; a bad policy throws `ConfigError`. */
export const requiresRootCoordinator = (options: Sessions.SessionsOptions): JitPolicy.JitPolicy | undefined => {
  const input = options.harness?.policy
  if (options.admission !== undefined || input === undefined) return undefined
  const policy = JitPolicy.make(input)
  return policy.requireRootCoordinator ? policy : undefined
}

/** A coordinator's refusal as the error an activation fails with. */
const notAdmitted = (sessionId: Ids.SessionId) => (error: CoordinatorProtocol.CoordinatorError): SessionActor.ActivationError =>
  error._tag === "AdmissionError" || error._tag === "LedgerError"
    ? new HarnessError.PolicyViolation({ name: sessionId, reason: "NotAdmitted", detail: `the coordinator did not admit session '${sessionId}': ${error.message}` })
    : error

/** The refusal of a session whose policy requires a root coordinator when none admits it. */
const refusal = (policy: JitPolicy.JitPolicy, sessionId: Ids.SessionId): Admission.AdmissionShape =>
  Admission.refusing(
    policy,
    "RootCoordinatorRequired",
    `the policy requires a root coordinator (requireRootCoordinator) and no coordinator admitted session '${sessionId}': host it with an admission, or set requireRootCoordinator to false`
  )

/** The session's lease, in `admissions` until the scope closes. */
const leased = (
  options: Sessions.SessionsOptions,
  admission: Sessions.SessionAdmission,
  admissions: Map<Ids.SessionId, LeasedAdmission.LeasedAdmission>,
  sessionId: Ids.SessionId
): Effect.Effect<LeasedAdmission.LeasedAdmission, SessionActor.ActivationError, Scope.Scope | Transport.Transport> =>
  Effect.gen(function*() {
    const lease = yield* LeasedAdmission.make({
      prefix: options.prefix,
      principal: admission.principal,
      sessionId,
      profile: admission.profile,
      policy: admission.policy ?? options.harness?.policy,
      deploymentConsent: admission.deploymentConsent,
      task: admission.task,
      contractVersion: admission.contractVersion,
      instructions: admission.instructions,
      timeoutMs: admission.timeoutMs,
      retryMs: admission.retryMs
    }).pipe(Effect.mapError(notAdmitted(sessionId)))
    yield* Effect.acquireRelease(Effect.sync(() => admissions.set(sessionId, lease)), () =>
      Effect.sync(() => {
        if (admissions.get(sessionId) === lease) admissions.delete(sessionId)
      }))
    return lease
  })

/**
 * The admission of each session of a host: its coordinator lease, a refusal (D-19), or none (the
 * harness's own policy). `rootRequired` is `requiresRootCoordinator(options)`.
 */
export const admissionOf = (
  options: Sessions.SessionsOptions,
  rootRequired: JitPolicy.JitPolicy | undefined,
  admissions: Map<Ids.SessionId, LeasedAdmission.LeasedAdmission>
) =>
(sessionId: Ids.SessionId): Effect.Effect<Admission.AdmissionShape | undefined, SessionActor.ActivationError, Scope.Scope | Transport.Transport> => {
  const admission = options.admission
  if (admission !== undefined) return leased(options, admission, admissions, sessionId)
  return Effect.succeed(rootRequired === undefined ? undefined : refusal(rootRequired, sessionId))
}
