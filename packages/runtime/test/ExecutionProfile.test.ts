/**
 * Every policy property under a host profile: its default, both ends of its range, one value
 * outside (a ConfigError naming the field), and the intersection with a narrower profile, where
 * asking for more than the profile is refused naming the field (JT-PRF-01/02).
 */
import { HarnessError } from "@jitbox/core"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import * as ExecutionProfile from "../src/ExecutionProfile.js"

const widest = ExecutionProfile.make({
  name: "widest",
  policy: {
    allowedLanguages: ["Python", "PowerShell", "Bash", "C#", "JavaScript"],
    allowLongRunning: true,
    allowPremium: true,
    requireRootCoordinator: false,
    allowAsyncOperations: true,
    returnExecutionErrors: true,
    maximumInvocations: 6_400,
    maximumConcurrentInvocations: 8,
    maximumRuntimeEnvironments: 16,
    maximumRepairs: 8,
    shortInvocationTimeoutSeconds: 224,
    provisioningTimeoutSeconds: 7_200,
    leaseLifetimeSeconds: 21_600,
    maximumTools: 16,
    invocationTimeoutSeconds: 3_600
  }
})

const refused = (f: () => unknown): HarnessError.ConfigError => {
  try {
    f()
  } catch (error) {
    expect(error).toBeInstanceOf(HarnessError.ConfigError)
    return error as HarnessError.ConfigError
  }
  throw new Error("expected a ConfigError")
}

interface NumericCase {
  readonly field: string
  readonly fallback: number
  readonly min: number
  readonly max: number
  /** Other fields the ends need (concurrency may not exceed invocations). */
  readonly with?: Record<string, number>
}

const numeric: ReadonlyArray<NumericCase> = [
  { field: "maximumInvocations", fallback: 16, min: 1, max: 6_400, with: { maximumConcurrentInvocations: 1 } },
  { field: "maximumConcurrentInvocations", fallback: 2, min: 1, max: 8 },
  { field: "maximumRuntimeEnvironments", fallback: 2, min: 1, max: 16 },
  { field: "maximumRepairs", fallback: 1, min: 0, max: 8 },
  { field: "shortInvocationTimeoutSeconds", fallback: 200, min: 1, max: 224 },
  { field: "provisioningTimeoutSeconds", fallback: 1_800, min: 1, max: 7_200 },
  { field: "leaseLifetimeSeconds", fallback: 3_600, min: 30, max: 21_600 },
  { field: "maximumTools", fallback: 8, min: 1, max: 16 },
  { field: "invocationTimeoutSeconds", fallback: 1_800, min: 225, max: 3_600 }
]

const permissions = ["allowLongRunning", "allowPremium", "allowAsyncOperations", "returnExecutionErrors"] as const

describe("ExecutionProfile.effectivePolicy under the widest profile", () => {
  for (const { field, fallback, max, min, with: extra } of numeric) {
    it(`${field}: left out, the profile's own (not the default ${fallback}); ends ${min} and ${max}, ${max + 1} refused`, () => {
      const get = (policy: object) => (policy as Record<string, number>)[field]
      expect(get(ExecutionProfile.effectivePolicy(widest, {}))).toBe(get(widest.policy))
      expect(get(ExecutionProfile.effectivePolicy(widest, {}))).not.toBe(fallback)
      expect(get(ExecutionProfile.effectivePolicy(widest, { ...extra, [field]: min }))).toBe(min)
      expect(get(ExecutionProfile.effectivePolicy(widest, { [field]: max }))).toBe(max)
      expect(refused(() => ExecutionProfile.effectivePolicy(widest, { [field]: max + 1 })).option).toBe(`policy.${field}`)
      expect(refused(() => ExecutionProfile.effectivePolicy(widest, { [field]: min - 1 })).option).toBe(`policy.${field}`)
    })
  }

  for (const field of permissions) {
    it(`${field}: left out, the profile's own (true); both values, a non-boolean refused`, () => {
      expect(ExecutionProfile.effectivePolicy(widest, {})[field]).toBe(true)
      expect(ExecutionProfile.effectivePolicy(widest, { [field]: true })[field]).toBe(true)
      expect(ExecutionProfile.effectivePolicy(widest, { [field]: false })[field]).toBe(false)
      expect(refused(() => ExecutionProfile.effectivePolicy(widest, { [field]: "yes" } as never)).option).toBe(`policy.${field}`)
    })
  }

  it("requireRootCoordinator: left out, the profile's own (false); both values, a non-boolean refused", () => {
    expect(ExecutionProfile.effectivePolicy(widest, {}).requireRootCoordinator).toBe(false)
    expect(ExecutionProfile.effectivePolicy(widest, { requireRootCoordinator: false }).requireRootCoordinator).toBe(false)
    expect(ExecutionProfile.effectivePolicy(widest, { requireRootCoordinator: true }).requireRootCoordinator).toBe(true)
    expect(refused(() => ExecutionProfile.effectivePolicy(widest, { requireRootCoordinator: 1 } as never)).option).toBe("policy.requireRootCoordinator")
  })

  it("allowedLanguages: left out, the profile's five; one and five languages, none, six or a duplicate refused", () => {
    expect(ExecutionProfile.effectivePolicy(widest, {}).allowedLanguages).toEqual(["Python", "PowerShell", "Bash", "C#", "JavaScript"])
    expect(ExecutionProfile.effectivePolicy(widest, { allowedLanguages: ["Bash"] }).allowedLanguages).toEqual(["Bash"])
    const five = ["Python", "PowerShell", "Bash", "C#", "JavaScript"] as const
    expect(ExecutionProfile.effectivePolicy(widest, { allowedLanguages: five }).allowedLanguages).toEqual(five)
    expect(refused(() => ExecutionProfile.effectivePolicy(widest, { allowedLanguages: [] })).option).toBe("policy.allowedLanguages")
    expect(refused(() => ExecutionProfile.effectivePolicy(widest, { allowedLanguages: [...five, "Python"] })).option).toBe("policy.allowedLanguages")
    expect(refused(() => ExecutionProfile.effectivePolicy(widest, { allowedLanguages: ["Cobol"] } as never)).option).toBe("policy.allowedLanguages")
  })
})

describe("ExecutionProfile.effectivePolicy under a narrower profile (the intersection)", () => {
  const narrow = ExecutionProfile.make({
    name: "narrow",
    policy: {
      allowedLanguages: ["Python", "JavaScript"],
      maximumInvocations: 10,
      maximumConcurrentInvocations: 1,
      maximumRuntimeEnvironments: 1,
      maximumRepairs: 0,
      shortInvocationTimeoutSeconds: 30,
      provisioningTimeoutSeconds: 60,
      leaseLifetimeSeconds: 120,
      maximumTools: 3,
      invocationTimeoutSeconds: 300
    }
  })

  it("a request that leaves everything out gets the profile's ceiling: it never has to restate it", () => {
    expect(ExecutionProfile.effectivePolicy(narrow, {})).toEqual(narrow.policy)
    expect(ExecutionProfile.effectivePolicy(narrow, {})).toEqual({
      allowedLanguages: ["Python", "JavaScript"],
      allowLongRunning: false,
      allowPremium: false,
      requireRootCoordinator: true,
      allowAsyncOperations: false,
      returnExecutionErrors: false,
      maximumInvocations: 10,
      maximumConcurrentInvocations: 1,
      maximumRuntimeEnvironments: 1,
      maximumRepairs: 0,
      shortInvocationTimeoutSeconds: 30,
      provisioningTimeoutSeconds: 60,
      leaseLifetimeSeconds: 120,
      maximumTools: 3,
      invocationTimeoutSeconds: 300,
      sharedCatalog: "off"
    })
  })

  it("a profile decides how far its sessions' models reach the shared catalog; a request narrows it and never widens it", () => {
    const loading = ExecutionProfile.make({ name: "agents", policy: { sharedCatalog: "load" } })
    expect(ExecutionProfile.effectivePolicy(loading, {}).sharedCatalog).toBe("load")
    expect(ExecutionProfile.effectivePolicy(loading, { sharedCatalog: "off" }).sharedCatalog).toBe("off")
    expect(() => ExecutionProfile.effectivePolicy(loading, { sharedCatalog: "publish" })).toThrow(/policy\.sharedCatalog.*"publish", more than its "load"/)
  })

  it("a request narrowing maximumInvocations below the profile's concurrency narrows the concurrency with it", () => {
    const policy = ExecutionProfile.effectivePolicy(widest, { maximumInvocations: 3 })
    expect(policy.maximumInvocations).toBe(3)
    expect(policy.maximumConcurrentInvocations).toBe(3)
    expect(policy.allowedLanguages).toEqual(widest.policy.allowedLanguages)
  })

  it("a request within the profile keeps its own values", () => {
    const policy = ExecutionProfile.effectivePolicy(narrow, { allowedLanguages: ["JavaScript"], maximumInvocations: 4, leaseLifetimeSeconds: 30 })
    expect(policy.allowedLanguages).toEqual(["JavaScript"])
    expect(policy.maximumInvocations).toBe(4)
    expect(policy.leaseLifetimeSeconds).toBe(30)
  })

  for (const { field } of numeric) {
    it(`asking for more ${field} than the profile is refused naming the field`, () => {
      const ceiling = (narrow.policy as unknown as Record<string, number>)[field]!
      const error = refused(() => ExecutionProfile.effectivePolicy(narrow, { [field]: ceiling + 1 }))
      expect(error.option).toBe(`policy.${field}`)
      expect(error.detail).toContain("narrow")
    })
  }

  for (const field of permissions) {
    it(`asking for ${field} the profile withholds is refused naming the field`, () => {
      expect(refused(() => ExecutionProfile.effectivePolicy(narrow, { [field]: true })).option).toBe(`policy.${field}`)
    })
  }

  it("a language outside the profile, or dropping requireRootCoordinator, is refused naming the field", () => {
    expect(refused(() => ExecutionProfile.effectivePolicy(narrow, { allowedLanguages: ["Python", "Bash"] })).option).toBe("policy.allowedLanguages")
    expect(refused(() => ExecutionProfile.effectivePolicy(narrow, { requireRootCoordinator: false })).option).toBe("policy.requireRootCoordinator")
  })

  it("a profile out of range, or a bad name, is a ConfigError naming it", () => {
    expect(refused(() => ExecutionProfile.make({ name: "p", policy: { maximumTools: 17 } })).option).toBe("profiles.p.policy")
    expect(refused(() => ExecutionProfile.make({ name: "a.b" })).option).toBe("profiles.name")
    expect(refused(() => ExecutionProfile.all([{ name: "p" }, { name: "p" }])).option).toBe("profiles.name")
  })

  it("principals, when given, are NATS user names (subject tokens); absent, any principal may admit", () => {
    expect(ExecutionProfile.make({ name: "p", principals: ["sessions", "app-1", "sessions"] }).principals).toEqual(["sessions", "app-1"])
    expect(ExecutionProfile.make({ name: "p" }).principals).toBeUndefined()
    expect(ExecutionProfile.make({ name: "p", principals: [] }).principals).toEqual([])
    for (const principals of [["a.b"], ["*"], [""], "sessions", [1]]) {
      expect(refused(() => ExecutionProfile.make({ name: "p", principals: principals as never })).option).toBe("profiles.p.principals")
    }
  })

  it("a credentialName is an environment variable name the sandbox does not set itself", () => {
    expect(ExecutionProfile.make({ name: "p", credentialName: "SERVICE_TOKEN" }).credentialName).toBe("SERVICE_TOKEN")
    expect(ExecutionProfile.make({ name: "p", credentialName: "_x1" }).credentialName).toBe("_x1")
    for (const name of ["PATH", "HOME", "LD_PRELOAD", "NODE_OPTIONS", "PYTHONPATH", "BASH_ENV", "JITBOX_SANDBOX_CHILD", "JB_PKG", "1TOKEN", "A-B", "A B", "", "X".repeat(129)]) {
      expect(refused(() => ExecutionProfile.make({ name: "p", credentialName: name })).option, name).toBe("profiles.p.credentialName")
    }
  })
})

describe("ExecutionProfile.fromFile", () => {
  it("reads a host's profiles; a bad file is a ConfigError naming profilesFile", () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "jitbox-profiles-"))
    try {
      const file = Path.join(dir, "profiles.json")
      Fs.writeFileSync(file, JSON.stringify({ profiles: [{ name: "gpu", location: "gpu-pool", credentialName: "GPU_TOKEN", policy: { maximumTools: 4 } }] }))
      const [gpu] = ExecutionProfile.fromFile(file)
      expect(gpu).toMatchObject({ name: "gpu", location: "gpu-pool", credentialName: "GPU_TOKEN" })
      expect(gpu!.policy.maximumTools).toBe(4)
      Fs.writeFileSync(file, "{ not json")
      expect(refused(() => ExecutionProfile.fromFile(file)).option).toBe("profilesFile")
      Fs.writeFileSync(file, JSON.stringify({ profile: [] }))
      expect(refused(() => ExecutionProfile.fromFile(file)).option).toBe("profilesFile")
      expect(refused(() => ExecutionProfile.fromFile(Path.join(dir, "missing.json"))).option).toBe("profilesFile")
    } finally {
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
