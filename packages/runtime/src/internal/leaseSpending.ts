/**
 * The per-call half of a leased admission: core's `Admission` checks and spending over the lease
 * a session holds. A version is checked against the policy (consent, JT-CFG-05; long-running,
 * languages) and against what the lease has left; invocations and slots are spent locally,
 * never waiting on the coordinator (running low wakes the renewer). A lease that expired spends
 * nothing more; a budget that is spent stays spent.
 *
 * Plain synchronous and Promise code: it runs on every call.
 */
import { type Admission, HarnessError, JitPolicy } from "@jitbox/core"
import type { LeaseHold } from "./leaseHold.js"

const noConsent =
  "the session was admitted without deploymentConsent (JT-CFG-05, the host's consent to run model-written code: `jitbox sessions --deployment-consent`): no model-written code runs"

/** Where the effective policy comes from, for a refusal to name. */
const decidedBy = (hold: LeaseHold): string =>
  ` (the effective policy: execution profile '${hold.profile ?? "?"}' of the coordinator's --profiles file, narrowed by the host's request policy, \`jitbox sessions --policy\`)`

const violation = (name: string, reason: HarnessError.PolicyViolation["reason"], detail: string) =>
  new HarnessError.PolicyViolation({ name, reason, detail })

/** Throws the `PolicyViolation` that refuses the version, if any. */
const checkVersion = (hold: LeaseHold, { duration, examples, language, name, repair }: Admission.VersionRequest): void => {
  const { lease, policy, spent } = hold
  if (!hold.consent) throw violation(name, "ConsentRequired", noConsent)
  if (hold.expired()) throw violation(name, "LeaseExpired", `the lease '${lease.id}' of session '${hold.sessionId}' expired`)
  if (duration === "long" && !policy.allowLongRunning) {
    throw violation(name, "LongRunningNotAllowed", `'${name}' expects long invocations and the policy does not allow long-running tools${decidedBy(hold)}`)
  }
  const needed = JitPolicy.policyLanguage(language)
  if (!policy.allowedLanguages.includes(needed)) {
    throw violation(name, "LanguageNotAllowed", `the policy allows ${policy.allowedLanguages.join(", ")}; '${name}' is ${needed}${decidedBy(hold)}`)
  }
  if (spent.tools >= lease.tools) throw violation(name, "ToolBudgetExhausted", `the lease allows ${lease.tools} tool versions and all are used`)
  if (repair && spent.repairs >= lease.repairs) {
    throw violation(name, "RepairBudgetExhausted", `the lease allows ${lease.repairs} replacement versions and all are used`)
  }
  if (examples > hold.left()) {
    throw violation(name, "InvocationBudgetExhausted", `running ${examples} examples needs more than the ${hold.left()} invocations the lease has left`)
  }
}

const trySpendInvocation = (hold: LeaseHold): boolean => {
  if (!hold.consent || hold.expired() || hold.left() <= 0) {
    hold.nudge()
    return false
  }
  hold.spent.invocations++
  if (hold.needsMore()) hold.nudge()
  return true
}

/** Why no invocation is spent when the reason is not a spent budget. */
const refusal = (hold: LeaseHold): string | undefined =>
  !hold.consent
    ? noConsent
    : hold.expired()
    ? `the lease '${hold.lease.id}' of session '${hold.sessionId}' expired`
    : !hold.upstreamSpent && hold.left() <= 0
    ? `the ${hold.lease.invocations} invocations granted so far to the lease of session '${hold.sessionId}' are spent; more are being asked for`
    : undefined

/** Waits for a slot of the lease, noting when slots are taken and given back (the renewer gives idle ones back). */
const acquire = (hold: LeaseHold, signal: AbortSignal | undefined): Promise<Admission.Release> =>
  hold.slots.acquire(signal).then((release) => {
    hold.lastUsed = hold.now()
    return () => {
      hold.lastUsed = hold.now()
      release()
    }
  })

/** Core's `Admission` over the lease. */
export const admission = (hold: LeaseHold): Admission.AdmissionShape => ({
  policy: hold.policy,
  checkVersion: (request) => checkVersion(hold, request),
  commitVersion: (repair) => {
    hold.spent.tools++
    if (repair) hold.spent.repairs++
    hold.unreported = true
    hold.nudge()
  },
  trySpendInvocation: () => trySpendInvocation(hold),
  refusal: () => refusal(hold),
  acquire: (signal) => acquire(hold, signal),
  timeoutSeconds: (duration) => duration === "long" ? hold.policy.invocationTimeoutSeconds : hold.policy.shortInvocationTimeoutSeconds,
  usage: () => {
    const { spent, slots } = hold
    return { versions: spent.tools, repairs: spent.repairs, invocations: spent.invocations, running: slots.running(), waiting: slots.waiting() }
  }
})
