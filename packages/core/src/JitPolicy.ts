/**
 * The execution policy of reference 003 (JT-POL-*, JT-CFG-06/07/08, JT-PRF-01): which languages may
 * run, the budgets of tool versions, invocations, concurrency, environments and repairs, and the
 * timeouts. An effect Schema checks every range; `intersect` narrows a request by a host profile
 * (languages intersect, booleans AND, limits take the minimum), so a model-written definition can
 * never widen what the host allows. A harness without a policy has no budgets (D-21).
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { ConfigError } from "./HarnessError.js"
import type { CodeLanguage } from "./ToolOrigin.js"

/** The languages 003 names. @since 0.1.0 @category schemas */
export const PolicyLanguage = Schema.Literal("Python", "PowerShell", "Bash", "C#", "JavaScript")

/** @since 0.1.0 @category models */
export type PolicyLanguage = Schema.Schema.Type<typeof PolicyLanguage>

const int = (min: number, max: number) => Schema.Int.pipe(Schema.between(min, max))

/** @since 0.1.0 @category schemas */
export const JitPolicy = Schema.Struct({
  allowedLanguages: Schema.optionalWith(
    Schema.Array(PolicyLanguage).pipe(
      Schema.minItems(1),
      Schema.maxItems(5),
      Schema.filter((languages) => new Set(languages).size === languages.length || "allowedLanguages must be unique")
    ),
    { default: () => ["Python"] as const }
  ),
  allowLongRunning: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  allowPremium: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  requireRootCoordinator: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  allowAsyncOperations: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  returnExecutionErrors: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  maximumInvocations: Schema.optionalWith(int(1, 6_400), { default: () => 16 }),
  maximumConcurrentInvocations: Schema.optionalWith(int(1, 8), { default: () => 2 }),
  maximumRuntimeEnvironments: Schema.optionalWith(int(1, 16), { default: () => 2 }),
  maximumRepairs: Schema.optionalWith(int(0, 8), { default: () => 1 }),
  shortInvocationTimeoutSeconds: Schema.optionalWith(int(1, 224), { default: () => 200 }),
  provisioningTimeoutSeconds: Schema.optionalWith(int(1, 7_200), { default: () => 1_800 }),
  leaseLifetimeSeconds: Schema.optionalWith(int(30, 21_600), { default: () => 3_600 }),
  maximumTools: Schema.optionalWith(int(1, 16), { default: () => 8 }),
  invocationTimeoutSeconds: Schema.optionalWith(int(225, 3_600), { default: () => 1_800 })
}).pipe(
  Schema.filter((policy) =>
    policy.maximumConcurrentInvocations <= policy.maximumInvocations ||
    "maximumConcurrentInvocations cannot exceed maximumInvocations"
  )
)

/** @since 0.1.0 @category models */
export interface JitPolicy extends Schema.Schema.Type<typeof JitPolicy> {}

/** @since 0.1.0 @category models */
export type JitPolicyInput = Schema.Schema.Encoded<typeof JitPolicy>

const decode = Schema.decodeUnknownEither(JitPolicy, { onExcessProperty: "error" })

/**
 * A policy with 003's "newly configured" defaults for what is left out; a value out of range is a
 * `ConfigError` naming the field.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (input: JitPolicyInput = {}): JitPolicy => {
  const result = decode(input)
  if (Either.isLeft(result)) {
    throw new ConfigError({
      option: "policy",
      detail: ParseResult.ArrayFormatter.formatErrorSync(result.left)
        .map((issue) => `${issue.path.join(".") || "(policy)"}: ${issue.message}`)
        .join("; ")
    })
  }
  return result.right
}

/**
 * The effective policy: `request` narrowed by a host `ceiling` (JT-PRF-01/02).
 *
 * @since 0.1.0
 * @category combinators
 */
export const intersect = (ceiling: JitPolicy, request: JitPolicy): JitPolicy => {
  const languages = request.allowedLanguages.filter((language) => ceiling.allowedLanguages.includes(language))
  if (languages.length === 0) {
    throw new ConfigError({ option: "policy.allowedLanguages", detail: "no requested language is allowed by the profile" })
  }
  const min = (key: keyof JitPolicy) => Math.min(ceiling[key] as number, request[key] as number)
  const maximumInvocations = min("maximumInvocations")
  return {
    allowedLanguages: languages,
    allowLongRunning: ceiling.allowLongRunning && request.allowLongRunning,
    allowPremium: ceiling.allowPremium && request.allowPremium,
    requireRootCoordinator: ceiling.requireRootCoordinator || request.requireRootCoordinator,
    allowAsyncOperations: ceiling.allowAsyncOperations && request.allowAsyncOperations,
    returnExecutionErrors: ceiling.returnExecutionErrors && request.returnExecutionErrors,
    maximumInvocations,
    maximumConcurrentInvocations: Math.min(min("maximumConcurrentInvocations"), maximumInvocations),
    maximumRuntimeEnvironments: min("maximumRuntimeEnvironments"),
    maximumRepairs: min("maximumRepairs"),
    shortInvocationTimeoutSeconds: min("shortInvocationTimeoutSeconds"),
    provisioningTimeoutSeconds: min("provisioningTimeoutSeconds"),
    leaseLifetimeSeconds: min("leaseLifetimeSeconds"),
    maximumTools: min("maximumTools"),
    invocationTimeoutSeconds: min("invocationTimeoutSeconds")
  }
}

/** The 003 language a jitbox language runs as (JS and TS both count as JavaScript). @since 0.1.0 @category getters */
export const policyLanguage = (language: CodeLanguage): PolicyLanguage =>
  language === "python" ? "Python" : language === "bash" ? "Bash" : "JavaScript"
