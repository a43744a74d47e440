/**
 * What a policy lets one session spend (JT-POL-10..14, JT-CFG-06, D-20): tool versions, repairs,
 * invocations (examples included), concurrent invocations, and the timeout of each call. The
 * harness asks; the layer decides. `local` keeps the counts in this process for the harness's
 * lifetime; `unlimited` is a harness without a policy (D-21: no budgets); a coordinator can lease
 * the same budgets to sessions in other processes.
 *
 * The members the dispatch path calls (`trySpendInvocation`, `acquire`) stay synchronous or
 * Promise-based: they run once per code call.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type ConfigError, PolicyViolation } from "./HarnessError.js"
import * as JitPolicy from "./JitPolicy.js"
import type { CodeLanguage } from "./ToolOrigin.js"
import * as Slots from "./Slots.js"

/** A new version asking to be counted. @since 0.1.0 @category models */
export interface VersionRequest {
  readonly name: string
  readonly language: CodeLanguage
  readonly duration: "short" | "long"
  /** Whether it replaces a version (a repair). */
  readonly repair: boolean
  /** Example invocations it will run before it is installed. */
  readonly examples: number
}

/** What has been spent so far. @since 0.1.0 @category models */
export interface Usage {
  readonly versions: number
  readonly repairs: number
  readonly invocations: number
  readonly running: number
  readonly waiting: number
}

/** Frees a concurrency slot; calling it twice frees it once. @since 0.1.0 @category models */
export type Release = Slots.Release

/**
 * What a runner in another process hands on with each message so that its receiver can check the
 * session was admitted: the lease's id now, and where the lease's profile runs code (a worker
 * pool, `location`, or one pinned worker, `sandboxNodeId`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Grant {
  readonly id: string
  readonly location?: string | undefined
  readonly sandboxNodeId?: string | undefined
}

/** @since 0.1.0 @category models */
export interface AdmissionShape {
  /** The effective policy; `undefined` when nothing is budgeted. */
  readonly policy: JitPolicy.JitPolicy | undefined
  /** Throws `PolicyViolation` unless the version (language, duration, budgets, examples) is allowed. */
  readonly checkVersion: (request: VersionRequest) => void
  /** Counts a version that was installed. */
  readonly commitVersion: (repair: boolean) => void
  /** Spends one invocation if one is left. */
  readonly trySpendInvocation: () => boolean
  /** Why `trySpendInvocation` refuses when the reason is not a spent budget (no consent, an expired lease…). */
  readonly refusal?: (() => string | undefined) | undefined
  /**
   * Waits for a concurrency slot. Rejects with the signal's reason when `signal` aborts while the
   * call waits: an abandoned call never takes a slot later.
   */
  readonly acquire: (signal: AbortSignal | undefined) => Promise<Release>
  /** The wall-clock bound of one call in seconds: the short timeout, or the long one (JT-CTR-02); `null` for none. */
  readonly timeoutSeconds: (duration: "short" | "long") => number | null
  readonly usage: () => Usage
  /** The lease the session holds now, when a coordinator admitted it (read at each message a remote runner sends). */
  readonly grant?: (() => Grant | undefined) | undefined
}

/** @since 0.1.0 @category tags */
export class Admission extends Context.Tag("@jitbox/core/Admission")<Admission, AdmissionShape>() {}

const noRelease: Release = () => {}
const freeSlot = Promise.resolve(noRelease)

/**
 * No policy: nothing is budgeted, every call is admitted at once and runs without a timeout.
 *
 * @since 0.1.0
 * @category constructors
 */
export const unlimited = (): AdmissionShape => {
  let invocations = 0
  let versions = 0
  let repairs = 0
  return {
    policy: undefined,
    checkVersion: () => {},
    commitVersion: (repair) => {
      versions++
      if (repair) repairs++
    },
    trySpendInvocation: () => {
      invocations++
      return true
    },
    acquire: () => freeSlot,
    timeoutSeconds: () => null,
    usage: () => ({ versions, repairs, invocations, running: 0, waiting: 0 })
  }
}


/**
 * Budgets of one policy kept in this process, for the lifetime of the harness that owns them.
 *
 * @since 0.1.0
 * @category constructors
 */
export const local = (policy: JitPolicy.JitPolicy): AdmissionShape => {
  let versions = 0
  let repairs = 0
  let invocations = 0
  const slots = Slots.make(() => policy.maximumConcurrentInvocations)

  const violation = (name: string, reason: PolicyViolation["reason"], detail: string) =>
    new PolicyViolation({ name, reason, detail })

  return {
    policy,
    checkVersion: ({ duration, examples, language, name, repair }) => {
      if (duration === "long" && !policy.allowLongRunning) {
        throw violation(name, "LongRunningNotAllowed", `'${name}' expects long invocations and the policy does not allow long-running tools`)
      }
      const needed = JitPolicy.policyLanguage(language)
      if (!policy.allowedLanguages.includes(needed)) {
        throw violation(name, "LanguageNotAllowed", `the policy allows ${policy.allowedLanguages.join(", ")}; '${name}' is ${needed}`)
      }
      if (versions >= policy.maximumTools) {
        throw violation(name, "ToolBudgetExhausted", `the policy allows ${policy.maximumTools} tool versions and all are used`)
      }
      if (repair && repairs >= policy.maximumRepairs) {
        throw violation(name, "RepairBudgetExhausted", `the policy allows ${policy.maximumRepairs} replacement versions and all are used`)
      }
      if (invocations + examples > policy.maximumInvocations) {
        throw violation(
          name,
          "InvocationBudgetExhausted",
          `running ${examples} examples needs more than the ${policy.maximumInvocations - invocations} invocations left`
        )
      }
    },
    commitVersion: (repair) => {
      versions++
      if (repair) repairs++
    },
    trySpendInvocation: () => {
      if (invocations >= policy.maximumInvocations) return false
      invocations++
      return true
    },
    acquire: slots.acquire,
    timeoutSeconds: (duration) => duration === "long" ? policy.invocationTimeoutSeconds : policy.shortInvocationTimeoutSeconds,
    usage: () => ({ versions, repairs, invocations, running: slots.running(), waiting: slots.waiting() })
  }
}

/**
 * Admits nothing: every version is refused with `PolicyViolation` (`reason`, `detail`) and no code
 * call runs. For a session whose policy requires an admission it does not have (D-19:
 * `requireRootCoordinator` with no coordinator).
 *
 * @since 0.1.0
 * @category constructors
 */
export const refusing = (policy: JitPolicy.JitPolicy, reason: PolicyViolation["reason"], detail: string): AdmissionShape => ({
  policy,
  checkVersion: ({ name }) => {
    throw new PolicyViolation({ name, reason, detail })
  },
  commitVersion: () => {},
  trySpendInvocation: () => false,
  refusal: () => detail,
  acquire: () => freeSlot,
  timeoutSeconds: (duration) => duration === "long" ? policy.invocationTimeoutSeconds : policy.shortInvocationTimeoutSeconds,
  usage: () => ({ versions: 0, repairs: 0, invocations: 0, running: 0, waiting: 0 })
})

/** A bad policy fails the layer with `ConfigError`. @since 0.1.0 @category layers */
export const layerLocal = (policy: JitPolicy.JitPolicyInput): Layer.Layer<Admission, ConfigError> =>
  Layer.effect(Admission, Effect.try({ try: () => local(JitPolicy.make(policy)), catch: (error) => error as ConfigError }))

/** @since 0.1.0 @category layers */
export const layerUnlimited: Layer.Layer<Admission> = Layer.sync(Admission, unlimited)
