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
import type * as ParseResult from "effect/ParseResult"
import * as ParseIssues from "./ParseIssues.js"
import * as Schema from "effect/Schema"
import { ConfigError } from "./HarnessError.js"
import type { CodeLanguage } from "./ToolOrigin.js"

const policyLanguages = ["Python", "PowerShell", "Bash", "C#", "JavaScript"] as const

const shown = (actual: unknown): string => {
  try {
    return JSON.stringify(actual) ?? String(actual)
  } catch {
    return String(actual)
  }
}

/** A message for every failure of a schema, in place of effect's (a union of literals lists each member). */
const says = (expected: string) => ({
  message: (issue: ParseResult.ParseIssue) => ({ message: `expected ${expected}, got ${shown(issue.actual)}`, override: true })
})

/**
 * The languages 003 names. TypeScript is not one of them: it runs as JavaScript.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PolicyLanguage = Schema.Literal(...policyLanguages).annotations(
  says(`one of ${policyLanguages.map((language) => JSON.stringify(language)).join(", ")} (JavaScript covers TypeScript)`)
)

/** @since 0.1.0 @category models */
export type PolicyLanguage = Schema.Schema.Type<typeof PolicyLanguage>

const int = (min: number, max: number) =>
  Schema.Number.pipe(Schema.int(), Schema.between(min, max)).annotations(says(`an integer from ${min} to ${max}`))

const bool = Schema.Boolean.annotations(says("true or false"))

const languages = Schema.Array(PolicyLanguage).annotations({
  // only when the value is not an array at all; an element's own failure keeps its message
  message: (issue) => `expected a list of languages such as ["Python"], got ${shown(issue.actual)}`
}).pipe(
  Schema.minItems(1, { message: (issue) => `expected at least one language, got ${shown(issue.actual)}` }),
  Schema.maxItems(5),
  Schema.filter((languages) => new Set(languages).size === languages.length, {
    message: (issue) => `each language may appear only once, got ${shown(issue.actual)}`
  })
)

const sharedCatalogLevels = ["off", "load", "publish"] as const

/**
 * What the model may do with the namespace's shared catalog (a jitbox extension of the policy):
 * nothing (`off`), search and load approved tools (`load`), and publish its own (`publish`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const SharedCatalogAccess = Schema.Literal(...sharedCatalogLevels)

/** @since 0.1.0 @category models */
export type SharedCatalogAccess = typeof SharedCatalogAccess.Type

const sharedCatalogAccess = SharedCatalogAccess.annotations(says(`one of ${sharedCatalogLevels.map((level) => JSON.stringify(level)).join(", ")}`))

/** @since 0.1.0 @category schemas */
export const JitPolicy = Schema.Struct({
  allowedLanguages: Schema.optionalWith(languages, { default: () => ["Python"] as const }),
  allowLongRunning: Schema.optionalWith(bool, { default: () => false }),
  allowPremium: Schema.optionalWith(bool, { default: () => false }),
  requireRootCoordinator: Schema.optionalWith(bool, { default: () => true }),
  allowAsyncOperations: Schema.optionalWith(bool, { default: () => false }),
  returnExecutionErrors: Schema.optionalWith(bool, { default: () => false }),
  maximumInvocations: Schema.optionalWith(int(1, 6_400), { default: () => 16 }),
  maximumConcurrentInvocations: Schema.optionalWith(int(1, 8), { default: () => 2 }),
  maximumRuntimeEnvironments: Schema.optionalWith(int(1, 16), { default: () => 2 }),
  maximumRepairs: Schema.optionalWith(int(0, 8), { default: () => 1 }),
  shortInvocationTimeoutSeconds: Schema.optionalWith(int(1, 224), { default: () => 200 }),
  provisioningTimeoutSeconds: Schema.optionalWith(int(1, 7_200), { default: () => 1_800 }),
  leaseLifetimeSeconds: Schema.optionalWith(int(30, 21_600), { default: () => 3_600 }),
  maximumTools: Schema.optionalWith(int(1, 16), { default: () => 8 }),
  invocationTimeoutSeconds: Schema.optionalWith(int(225, 3_600), { default: () => 1_800 }),
  sharedCatalog: Schema.optionalWith(sharedCatalogAccess, { default: () => "off" as const })
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

const decode = Schema.decodeUnknownEither(JitPolicy, { onExcessProperty: "error", errors: "all" })

/**
 * One clause per field: an optional field's union with `undefined` adds "Expected undefined" for
 * every mistake, which says nothing the field's own clause does not.
 */
const clauses = (error: ParseResult.ParseError): string => ParseIssues.describe(error, { root: "(policy)", all: true, limit: Infinity })

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
    throw new ConfigError({ option: "policy", detail: clauses(result.left) })
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
    invocationTimeoutSeconds: min("invocationTimeoutSeconds"),
    sharedCatalog: sharedCatalogLevels[Math.min(sharedCatalogLevels.indexOf(ceiling.sharedCatalog), sharedCatalogLevels.indexOf(request.sharedCatalog))]!
  }
}

/**
 * The jitbox languages each 003 language runs as: JavaScript as JavaScript and TypeScript;
 * C# as csharp (Mono); PowerShell has no runner here (D-02). The one place the two vocabularies meet.
 *
 * @since 0.1.0
 * @category constants
 */
export const codeLanguagesOf: { readonly [L in PolicyLanguage]: ReadonlyArray<CodeLanguage> } = {
  JavaScript: ["javascript", "typescript"],
  Python: ["python"],
  Bash: ["bash"],
  PowerShell: [],
  "C#": ["csharp"]
}

/** The 003 language a jitbox language runs as (JS and TS both count as JavaScript). @since 0.1.0 @category getters */
export const policyLanguage = (language: CodeLanguage): PolicyLanguage =>
  policyLanguages.find((candidate) => codeLanguagesOf[candidate].includes(language)) ?? "JavaScript"

/** The jitbox languages a list of 003 languages runs as. @since 0.1.0 @category getters */
export const codeLanguages = (languages: ReadonlyArray<PolicyLanguage>): ReadonlyArray<CodeLanguage> =>
  languages.flatMap((language) => codeLanguagesOf[language])
