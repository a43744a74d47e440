/**
 * Host-owned execution profiles (JT-PRF) and the effective policy of a request under one.
 *
 * A profile is a named `JitPolicy` ceiling plus the host fields the runtime maps: `location`
 * (a worker pool), `credentialName` (a secret the worker host holds under that name and puts in
 * the environment of the children that run this profile's code, as a variable of that name; never
 * in a message, a record or an event) and `sandboxNodeId` (one named worker, serialized access,
 * JT-HOST-04). `principals`, when present, lists who may admit sessions under the profile (the
 * coordinator refuses others `NotAllowed`): what keeps a profile's credential to the principals
 * listed.
 * The effective policy is the request intersected with the profile (JT-PRF-01): languages
 * intersect, booleans AND (`requireRootCoordinator` OR), limits take the minimum. A request that
 * explicitly asks for more than the profile allows is refused with a `ConfigError` naming the
 * field (`policy.<field>`): a model-written definition never widens the host's ceiling (JT-PRF-02).
 * Fields the request leaves out take JT-POL's defaults, then the intersection.
 *
 * @since 0.1.0
 */
import { HarnessError, JitPolicy } from "@jitbox/core"
import * as Fs from "node:fs"

/** @since 0.1.0 @category models */
export interface ExecutionProfile {
  readonly name: string
  readonly policy: JitPolicy.JitPolicy
  readonly location?: string | undefined
  readonly credentialName?: string | undefined
  readonly sandboxNodeId?: string | undefined
  /**
   * The principals (NATS users asking the coordinator) that may admit sessions under this
   * profile; absent: any. A profile with a `credentialName` lists them so the credential reaches
   * only their sessions.
   */
  readonly principals?: ReadonlyArray<string> | undefined
}

/** What a host writes (in code or in a profiles file). @since 0.1.0 @category models */
export interface ExecutionProfileInput {
  readonly name: string
  readonly policy?: JitPolicy.JitPolicyInput | undefined
  readonly location?: string | undefined
  readonly credentialName?: string | undefined
  readonly sandboxNodeId?: string | undefined
  /**
   * The principals (NATS users asking the coordinator) that may admit sessions under this
   * profile; absent: any. A profile with a `credentialName` lists them so the credential reaches
   * only their sessions.
   */
  readonly principals?: ReadonlyArray<string> | undefined
}

const profileName = /^[A-Za-z0-9_-]{1,64}$/

const optionalText = (value: unknown, option: string): string | undefined => {
  if (value === undefined) return undefined
  if (typeof value !== "string" || value.length === 0 || value.length > 256) {
    throw new HarnessError.ConfigError({ option, detail: `expected a non-empty string of at most 256 characters, got ${JSON.stringify(value)}` })
  }
  return value
}

const variableName = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/

/** Variables the sandbox sets itself (or the interpreters read for their own setup): a credential may not take their name. */
const reservedVariable = /^(PATH|HOME|TMPDIR|LANG|LC_[A-Z_]*|LD_[A-Z_]*|NODE_[A-Z_]*|PYTHON[A-Z_]*|BASH_[A-Z_]*|ENV|IFS|SHELLOPTS|JB_[A-Z_]*|JITBOX_[A-Z_]*)$/

const credential = (value: unknown, option: string): string | undefined => {
  const name = optionalText(value, option)
  if (name === undefined) return undefined
  if (!variableName.test(name) || reservedVariable.test(name)) {
    throw new HarnessError.ConfigError({
      option,
      detail: `expected an environment variable name (letters, digits, "_"; not one the sandbox sets such as PATH, HOME, LD_*, NODE_*, PYTHON*, JITBOX_*), got ${JSON.stringify(name)}`
    })
  }
  return name
}

/**
 * Checks a profile: its name is a subject-safe token and its policy is in range (a `ConfigError`
 * naming `profiles.<name>.<field>` otherwise).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (input: ExecutionProfileInput): ExecutionProfile => {
  if (typeof input?.name !== "string" || !profileName.test(input.name)) {
    throw new HarnessError.ConfigError({ option: "profiles.name", detail: `expected 1-64 ASCII letters, digits, "_" or "-", got ${JSON.stringify(input?.name)}` })
  }
  let policy: JitPolicy.JitPolicy
  try {
    policy = JitPolicy.make(input.policy ?? {})
  } catch (error) {
    if (error instanceof HarnessError.ConfigError) {
      throw new HarnessError.ConfigError({ option: `profiles.${input.name}.policy`, detail: error.detail })
    }
    throw error
  }
  return {
    name: input.name,
    policy,
    location: optionalText(input.location, `profiles.${input.name}.location`),
    credentialName: credential(input.credentialName, `profiles.${input.name}.credentialName`),
    sandboxNodeId: optionalText(input.sandboxNodeId, `profiles.${input.name}.sandboxNodeId`),
    ...(input.principals === undefined ? {} : { principals: principalList(input.principals, `profiles.${input.name}.principals`) })
  }
}

const principalToken = /^[A-Za-z0-9_-]{1,128}$/

const principalList = (value: unknown, option: string): ReadonlyArray<string> => {
  if (!Array.isArray(value) || value.some((name) => typeof name !== "string" || !principalToken.test(name))) {
    throw new HarnessError.ConfigError({
      option,
      detail: `expected an array of principals (NATS user names: 1-128 ASCII letters, digits, "_" or "-"), got ${JSON.stringify(value)}`
    })
  }
  return [...new Set(value as ReadonlyArray<string>)]
}

/**
 * Profiles from a JSON file `{ "profiles": [ { "name": …, "policy": { … }, "location": … } ] }`;
 * an unreadable file, bad JSON or a duplicate name is a `ConfigError` naming `profilesFile`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromFile = (path: string): ReadonlyArray<ExecutionProfile> => {
  let parsed: unknown
  try {
    parsed = JSON.parse(Fs.readFileSync(path, "utf8"))
  } catch (cause) {
    throw new HarnessError.ConfigError({ option: "profilesFile", detail: `${path}: ${cause instanceof Error ? cause.message : String(cause)}` })
  }
  const list = (parsed as { profiles?: unknown })?.profiles
  if (!Array.isArray(list)) {
    throw new HarnessError.ConfigError({ option: "profilesFile", detail: `${path}: expected { "profiles": [ … ] }` })
  }
  return all(list as Array<ExecutionProfileInput>)
}

/** Checks a list of profiles; names must be unique. @since 0.1.0 @category constructors */
export const all = (inputs: ReadonlyArray<ExecutionProfileInput>): ReadonlyArray<ExecutionProfile> => {
  const profiles = inputs.map(make)
  const seen = new Set<string>()
  for (const profile of profiles) {
    if (seen.has(profile.name)) throw new HarnessError.ConfigError({ option: "profiles.name", detail: `the profile '${profile.name}' is defined twice` })
    seen.add(profile.name)
  }
  return profiles
}

type Field = keyof JitPolicy.JitPolicy

/** Core's range errors name the policy; this names the first field at fault (`policy.<field>`). */
const named = <A>(f: () => A): A => {
  try {
    return f()
  } catch (error) {
    const field = error instanceof HarnessError.ConfigError ? /^([A-Za-z]+)(?:\.\d+)?: /.exec(error.detail)?.[1] : undefined
    if (field !== undefined) throw new HarnessError.ConfigError({ option: `policy.${field}`, detail: error instanceof HarnessError.ConfigError ? error.detail : "" })
    throw error
  }
}

const numericFields: ReadonlyArray<Field> = [
  "maximumInvocations",
  "maximumConcurrentInvocations",
  "maximumRuntimeEnvironments",
  "maximumRepairs",
  "shortInvocationTimeoutSeconds",
  "provisioningTimeoutSeconds",
  "leaseLifetimeSeconds",
  "maximumTools",
  "invocationTimeoutSeconds"
]

const permissions: ReadonlyArray<Field> = ["allowLongRunning", "allowPremium", "allowAsyncOperations", "returnExecutionErrors"]

const widens = (profile: ExecutionProfile, field: string, detail: string) =>
  new HarnessError.ConfigError({ option: `policy.${field}`, detail: `${detail}; the profile '${profile.name}' does not allow it (JT-PRF-02)` })

/**
 * The effective policy of `request` under `profile` (JT-PRF-01/02): the request narrows the
 * profile, and every field it leaves out is the profile's own (a request never has to restate its
 * profile). Throws `ConfigError` naming `policy.<field>` when a value is out of its JT-POL range or
 * asks for more than the profile.
 *
 * @since 0.1.0
 * @category combinators
 */
export const effectivePolicy = (profile: ExecutionProfile, request: JitPolicy.JitPolicyInput = {}): JitPolicy.JitPolicy => {
  const ceiling = profile.policy
  const given = request as Record<string, unknown>
  // a request narrowing maximumInvocations alone narrows the concurrency it bounds too
  const concurrency = typeof given.maximumInvocations === "number" && given.maximumConcurrentInvocations === undefined
    ? { maximumConcurrentInvocations: Math.max(1, Math.min(ceiling.maximumConcurrentInvocations, given.maximumInvocations)) }
    : {}
  const requested = named(() => JitPolicy.make({ ...ceiling, ...concurrency, ...request }))
  if (given.allowedLanguages !== undefined) {
    const outside = requested.allowedLanguages.filter((language) => !ceiling.allowedLanguages.includes(language))
    if (outside.length > 0) throw widens(profile, "allowedLanguages", `the request asks for ${outside.join(", ")}; the profile allows ${ceiling.allowedLanguages.join(", ")}`)
  }
  for (const field of permissions) {
    if (given[field] === true && !ceiling[field]) throw widens(profile, field, "the request asks for true")
  }
  const catalogLevels = JitPolicy.SharedCatalogAccess.literals
  if (typeof given.sharedCatalog === "string" && catalogLevels.indexOf(requested.sharedCatalog) > catalogLevels.indexOf(ceiling.sharedCatalog)) {
    throw widens(profile, "sharedCatalog", `the request asks for "${requested.sharedCatalog}", more than its "${ceiling.sharedCatalog}"`)
  }
  if (given.requireRootCoordinator === false && ceiling.requireRootCoordinator) {
    throw widens(profile, "requireRootCoordinator", "the request asks for false")
  }
  for (const field of numericFields) {
    const value = given[field]
    if (typeof value === "number" && value > (ceiling[field] as number)) {
      throw widens(profile, field, `the request asks for ${value}, more than its ${ceiling[field] as number}`)
    }
  }
  return named(() => JitPolicy.intersect(ceiling, requested))
}
