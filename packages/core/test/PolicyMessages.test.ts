/**
 * A policy mistake is one readable clause per field: a language outside 003's list names the
 * allowed values (and says that JavaScript covers TypeScript) instead of dumping a union, and no
 * field adds "Expected undefined" for its optional form.
 */
import { describe, expect, it } from "vitest"
import { HarnessError, JitHarness, JitPolicy } from "../src/index.js"

const configError = (input: unknown): HarnessError.ConfigError => {
  try {
    JitPolicy.make(input as never)
  } catch (error) {
    expect(error).toBeInstanceOf(HarnessError.ConfigError)
    return error as HarnessError.ConfigError
  }
  throw new Error("expected a ConfigError")
}

const allowed = `"Python", "PowerShell", "Bash", "C#", "JavaScript"`

describe("policy errors are readable", () => {
  it("TypeScript is refused with the allowed values, saying that JavaScript covers it", () => {
    const error = configError({ allowedLanguages: ["TypeScript"] })
    expect(error.option).toBe("policy")
    expect(error.message).toBe(
      `policy: allowedLanguages.0: expected one of ${allowed} (JavaScript covers TypeScript), got "TypeScript"`
    )
  })

  it.each([
    ["a lower-case name", ["python"], `allowedLanguages.0: expected one of ${allowed} (JavaScript covers TypeScript), got "python"`],
    ["an unknown language in second place", ["Python", "Ruby"], `allowedLanguages.1: expected one of ${allowed} (JavaScript covers TypeScript), got "Ruby"`],
    ["a single name instead of a list", "Python", `allowedLanguages: expected a list of languages such as ["Python"], got "Python"`],
    ["an empty list", [], `allowedLanguages: expected at least one language, got []`],
    ["a language twice", ["Python", "Python"], `allowedLanguages: each language may appear only once, got ["Python","Python"]`]
  ])("allowedLanguages with %s is one clause", (_, allowedLanguages, detail) => {
    expect(configError({ allowedLanguages }).detail).toBe(detail)
  })

  it.each([
    ["allowLongRunning", "yes", `allowLongRunning: expected true or false, got "yes"`],
    ["returnExecutionErrors", 1, `returnExecutionErrors: expected true or false, got 1`],
    ["maximumTools", 99, `maximumTools: expected an integer from 1 to 16, got 99`],
    ["maximumTools", 1.5, `maximumTools: expected an integer from 1 to 16, got 1.5`],
    ["maximumRepairs", "2", `maximumRepairs: expected an integer from 0 to 8, got "2"`],
    ["leaseLifetimeSeconds", 29, `leaseLifetimeSeconds: expected an integer from 30 to 21600, got 29`]
  ])("%s = %j is one clause", (field, value, detail) => {
    expect(configError({ [field]: value }).detail).toBe(detail)
  })

  it("several mistakes give one clause each, all of them, never 'Expected undefined'", () => {
    const error = configError({ allowedLanguages: ["TypeScript"], allowPremium: "no", maximumTools: 0 })
    expect(error.detail).not.toMatch(/undefined/)
    expect(error.detail.split("; ")).toEqual([
      `allowedLanguages.0: expected one of ${allowed} (JavaScript covers TypeScript), got "TypeScript"`,
      `allowPremium: expected true or false, got "no"`,
      `maximumTools: expected an integer from 1 to 16, got 0`
    ])
  })

  it("the harness reports the same ConfigError", () => {
    expect(() => new JitHarness({ policy: { allowedLanguages: ["TypeScript" as never] } })).toThrow(
      /allowedLanguages\.0: expected one of .*"JavaScript" \(JavaScript covers TypeScript\), got "TypeScript"/
    )
  })
})
