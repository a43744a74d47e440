/**
 * What a policy lets one harness spend (JT-POL-10..14, JT-CFG-06, D-20): tool versions, repairs,
 * invocations (examples included) and concurrent invocations. Counts are for the harness's
 * lifetime; the concurrency bound makes a call wait for a free slot rather than fail.
 *
 * @since 0.1.0
 */
import { PolicyViolation } from "./HarnessError.js"
import * as JitPolicy from "./JitPolicy.js"
import type { CodeLanguage } from "./ToolOrigin.js"

/** @since 0.1.0 @category models */
export class PolicyBudget {
  versions = 0
  repairs = 0
  invocations = 0
  private running = 0
  private readonly waiting: Array<() => void> = []

  constructor(readonly policy: JitPolicy.JitPolicy) {}

  checkLanguage(name: string, language: CodeLanguage): void {
    const needed = JitPolicy.policyLanguage(language)
    if (!this.policy.allowedLanguages.includes(needed)) {
      throw new PolicyViolation({
        name,
        reason: "LanguageNotAllowed",
        detail: `the policy allows ${this.policy.allowedLanguages.join(", ")}; '${name}' is ${needed}`
      })
    }
  }

  /** Throws unless a new version (a repair too when it replaces one) and its examples fit the budgets. */
  checkVersion(name: string, repair: boolean, examples: number): void {
    if (this.versions >= this.policy.maximumTools) {
      throw new PolicyViolation({
        name,
        reason: "ToolBudgetExhausted",
        detail: `the policy allows ${this.policy.maximumTools} tool versions and all are used`
      })
    }
    if (repair && this.repairs >= this.policy.maximumRepairs) {
      throw new PolicyViolation({
        name,
        reason: "RepairBudgetExhausted",
        detail: `the policy allows ${this.policy.maximumRepairs} replacement versions and all are used`
      })
    }
    if (this.invocations + examples > this.policy.maximumInvocations) {
      throw new PolicyViolation({
        name,
        reason: "InvocationBudgetExhausted",
        detail: `running ${examples} examples needs more than the ${this.policy.maximumInvocations - this.invocations} invocations left`
      })
    }
  }

  /** Counts a version that was accepted. */
  commitVersion(repair: boolean): void {
    this.versions++
    if (repair) this.repairs++
  }

  /** Whether one more invocation fits the budget; spends it if so. */
  trySpendInvocation(): boolean {
    if (this.invocations >= this.policy.maximumInvocations) return false
    this.invocations++
    return true
  }

  /** Waits for a concurrency slot; the returned function frees it. */
  async acquire(): Promise<() => void> {
    if (this.running >= this.policy.maximumConcurrentInvocations) {
      await new Promise<void>((resolve) => this.waiting.push(resolve))
    } else {
      this.running++
    }
    let released = false
    return () => {
      if (released) return
      released = true
      const next = this.waiting.shift()
      if (next === undefined) this.running--
      else next()
    }
  }

  /** The wall-clock bound of one call: the short timeout, or for a long tool the long one (JT-CTR-02). */
  timeoutSeconds(duration: "short" | "long"): number {
    return duration === "long" ? this.policy.invocationTimeoutSeconds : this.policy.shortInvocationTimeoutSeconds
  }

  checkDuration(name: string, duration: "short" | "long"): void {
    if (duration === "long" && !this.policy.allowLongRunning) {
      throw new PolicyViolation({
        name,
        reason: "LongRunningNotAllowed",
        detail: `'${name}' expects long invocations and the policy does not allow long-running tools`
      })
    }
  }
}
