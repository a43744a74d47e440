import { Ajv, type ValidateFunction } from "ajv"
import { describe, expect, it } from "vitest"
import type { JsonSchema } from "../src/JsonSchema.js"
import {
  inspectionToolNames,
  isManagementToolName,
  type ManagementTool,
  managementToolNames,
  managementTools
} from "../src/ManagementTools.js"

const controlLoop = ["create_tool", "update_tool", "unload_tool", "load_tool", "list_tools", "inspect_tool"]
const inspectionTier = [
  "read_tool_source",
  "read_tool_schema",
  "inspect_tool_stats",
  "inspect_tool_calls",
  "inspect_tool_errors"
]

const ajv = new Ajv({ strict: false })
const validators = new Map<string, ValidateFunction>(
  managementTools.map((tool) => [tool.name, ajv.compile(tool.parameters)])
)
const accepts = (name: string, args: unknown): boolean => {
  const validate = validators.get(name)
  if (validate === undefined) throw new Error(`no validator for ${name}`)
  return validate(args)
}
const tool = (name: string): ManagementTool => {
  const found = managementTools.find((t) => t.name === name)
  if (found === undefined) throw new Error(`no tool ${name}`)
  return found
}
const properties = (name: string): Record<string, JsonSchema> =>
  tool(name).parameters["properties"] as Record<string, JsonSchema>

/** Every (sub)schema object and every key path inside a schema. */
const walk = (value: unknown, visit: (node: Record<string, unknown>, path: string) => void, path = "$"): void => {
  if (Array.isArray(value)) value.forEach((item, i) => walk(item, visit, `${path}[${i}]`))
  else if (typeof value === "object" && value !== null) {
    visit(value as Record<string, unknown>, path)
    for (const [key, child] of Object.entries(value)) walk(child, visit, `${path}.${key}`)
  }
}

const minimalCalls: Record<string, unknown> = {
  create_tool: { source: "export const twice = tool({}, async () => 42)" },
  update_tool: { name: "twice" },
  unload_tool: { name: "twice" },
  load_tool: { name: "twice" },
  list_tools: {},
  inspect_tool: { name: "twice" },
  read_tool_source: { name: "twice" },
  read_tool_schema: { name: "twice" },
  inspect_tool_stats: { name: "twice" },
  inspect_tool_calls: { name: "twice" },
  inspect_tool_errors: {}
}

const requiredFields: Record<string, ReadonlyArray<string>> = {
  create_tool: ["source"],
  update_tool: ["name"],
  unload_tool: ["name"],
  load_tool: ["name"],
  list_tools: [],
  inspect_tool: ["name"],
  read_tool_source: ["name"],
  read_tool_schema: ["name"],
  inspect_tool_stats: ["name"],
  inspect_tool_calls: ["name"],
  inspect_tool_errors: []
}

describe("ManagementTools", () => {
  it("defines exactly the eleven management tools in order (MGMT-01)", () => {
    expect(managementTools.map((t) => t.name)).toEqual([...controlLoop, ...inspectionTier])
    expect([...managementToolNames]).toEqual([...controlLoop, ...inspectionTier])
    expect(managementToolNames.size).toBe(11)
  })

  it("puts the last five in the inspection tier and the rest in the control loop (MGMT-16)", () => {
    expect(managementTools.filter((t) => t.tier === "control").map((t) => t.name)).toEqual(controlLoop)
    expect(managementTools.filter((t) => t.tier === "inspection").map((t) => t.name)).toEqual(inspectionTier)
    expect([...inspectionToolNames]).toEqual(inspectionTier)
  })

  it("recognises reserved names only", () => {
    for (const name of managementToolNames) expect(isManagementToolName(name)).toBe(true)
    expect(isManagementToolName("twice")).toBe(false)
    expect(isManagementToolName("inspect_tools")).toBe(false)
  })

  it("gives every tool a non-empty description", () => {
    for (const t of managementTools) expect(t.description.trim().length).toBeGreaterThan(10)
  })

  it("is immutable", () => {
    expect(Object.isFrozen(managementTools)).toBe(true)
    expect(() => {
      ;(tool("list_tools").parameters as Record<string, unknown>)["type"] = "array"
    }).toThrow(TypeError)
    expect(tool("list_tools").parameters["type"]).toBe("object")
  })

  it("writes compact schemas: no title, anyOf, oneOf or $schema anywhere (EXP-14)", () => {
    for (const t of managementTools) {
      walk(t.parameters, (node, path) => {
        for (const banned of ["title", "anyOf", "oneOf", "$schema"]) {
          if (banned in node && !path.endsWith(".properties")) throw new Error(`${t.name} ${path} has ${banned}`)
        }
      })
    }
  })

  it("types every object schema as an object and every integer with a minimum", () => {
    for (const t of managementTools) {
      expect(t.parameters["type"]).toBe("object")
      walk(t.parameters, (node, path) => {
        if (path.endsWith(".properties")) return
        if ("properties" in node || "additionalProperties" in node) expect(node["type"], `${t.name} ${path}`).toBe("object")
        if (node["type"] === "integer") expect(typeof node["minimum"], `${t.name} ${path}`).toBe("number")
      })
    }
  })

  it("compiles every schema with ajv, also in strict mode", () => {
    const strict = new Ajv()
    for (const t of managementTools) expect(() => strict.compile(t.parameters), t.name).not.toThrow()
  })

  it("accepts a minimal valid call of every tool", () => {
    for (const t of managementTools) expect(accepts(t.name, minimalCalls[t.name]), t.name).toBe(true)
  })

  it("rejects a call missing any required field", () => {
    for (const t of managementTools) {
      expect(t.parameters["required"] ?? [], t.name).toEqual(requiredFields[t.name])
      for (const field of requiredFields[t.name] ?? []) {
        const args = { ...(minimalCalls[t.name] as object) } as Record<string, unknown>
        delete args[field]
        expect(accepts(t.name, args), `${t.name} without ${field}`).toBe(false)
      }
    }
  })

  it("bounds limit to 1–100 wherever it appears (BUD-02, BUD-04)", () => {
    const withLimit = managementTools.filter((t) => "limit" in properties(t.name)).map((t) => t.name)
    expect(withLimit).toEqual(["list_tools", "inspect_tool_calls", "inspect_tool_errors"])
    for (const name of withLimit) {
      const call = (limit: unknown) => accepts(name, { ...(minimalCalls[name] as object), limit })
      expect(call(1), name).toBe(true)
      expect(call(100), name).toBe(true)
      expect(call(0), name).toBe(false)
      expect(call(101), name).toBe(false)
      expect(call(2.5), name).toBe(false)
      expect(call("5"), name).toBe(false)
    }
  })

  it("bounds max_chars to 1–4,000 wherever it appears (BUD-03, BUD-04)", () => {
    const withMaxChars = managementTools.filter((t) => "max_chars" in properties(t.name)).map((t) => t.name)
    expect(withMaxChars).toEqual(["read_tool_source", "read_tool_schema", "inspect_tool_errors"])
    for (const name of withMaxChars) {
      const call = (max_chars: unknown) => accepts(name, { ...(minimalCalls[name] as object), max_chars })
      expect(call(1), name).toBe(true)
      expect(call(4000), name).toBe(true)
      expect(call(0), name).toBe(false)
      expect(call(4001), name).toBe(false)
    }
  })

  it("rejects negative and fractional offsets", () => {
    const withOffset = managementTools.filter((t) => "offset" in properties(t.name)).map((t) => t.name)
    expect(withOffset).toEqual([
      "list_tools",
      "read_tool_source",
      "read_tool_schema",
      "inspect_tool_calls",
      "inspect_tool_errors"
    ])
    for (const name of withOffset) {
      const call = (offset: unknown) => accepts(name, { ...(minimalCalls[name] as object), offset })
      expect(call(0), name).toBe(true)
      expect(call(123456), name).toBe(true)
      expect(call(-1), name).toBe(false)
      expect(call(0.5), name).toBe(false)
    }
  })

  it("declares the default page sizes (BUD-12)", () => {
    const defaultOf = (name: string, field: string) => properties(name)[field]?.["default"]
    expect(defaultOf("list_tools", "limit")).toBe(20)
    expect(defaultOf("inspect_tool_calls", "limit")).toBe(5)
    expect(defaultOf("inspect_tool_errors", "limit")).toBe(3)
    expect(defaultOf("inspect_tool_errors", "max_chars")).toBe(512)
    expect(defaultOf("read_tool_source", "max_chars")).toBe(2000)
    expect(defaultOf("read_tool_schema", "max_chars")).toBe(2000)
  })

  it("accepts a full code creation and a text creation (MGMT-02, TXT-02)", () => {
    expect(accepts("create_tool", {
      source: "import { summarize } from \"./batch.js\"\nexport const summarize_files = tool({}, summarize)",
      kind: "code",
      name: "summarize_files",
      entrypoint: "summarize_files",
      language: "typescript",
      files: { "batch.ts": "export const summarize = async () => \"\"", "parsers/index.ts": "" },
      examples: [{ input: { paths: [] }, expected_output: "" }, { input: {}, expected_output: null }]
    })).toBe(true)
    expect(accepts("create_tool", {
      kind: "text",
      name: "investigate_test_failure",
      description: "Use when a test fails and the cause is not yet known.",
      source: "# Investigate a failing test\n"
    })).toBe(true)
    expect(accepts("create_tool", {
      source: "cat",
      language: "bash",
      name: "echo_json",
      description: "Echo the arguments.",
      guidelines: "Use to echo.",
      parameters: { type: "object", properties: {} }
    })).toBe(true)
  })

  it("rejects unknown kinds and languages and malformed files", () => {
    expect(accepts("create_tool", { source: "x", kind: "python" })).toBe(false)
    expect(accepts("create_tool", { source: "x", language: "ruby" })).toBe(false)
    expect(accepts("create_tool", { source: "x", files: { "a.ts": 1 } })).toBe(false)
    expect(accepts("create_tool", { source: "x", files: ["a.ts"] })).toBe(false)
    expect(accepts("create_tool", { source: 1 })).toBe(false)
  })

  it("takes 1–8 examples, each with input and expected_output (D-20)", () => {
    const example = { input: { value: 21 }, expected_output: 42 }
    for (const name of ["create_tool", "update_tool"]) {
      const call = (examples: unknown) => accepts(name, { ...(minimalCalls[name] as object), examples })
      expect(call([example]), name).toBe(true)
      expect(call(Array.from({ length: 8 }, () => example)), name).toBe(true)
      expect(call([]), name).toBe(false)
      expect(call(Array.from({ length: 9 }, () => example)), name).toBe(false)
      expect(call([{ input: { value: 21 } }]), name).toBe(false)
      expect(call([{ expected_output: 42 }]), name).toBe(false)
      expect(call([{ input: 21, expected_output: 42 }]), name).toBe(false)
    }
  })

  it("updates text tools through markdown or source and deletes files through remove (D-13, MGMT-03)", () => {
    expect(accepts("update_tool", { name: "guide", markdown: "# New", description: "hint" })).toBe(true)
    expect(accepts("update_tool", { name: "guide", source: "# New" })).toBe(true)
    expect(accepts("update_tool", { name: "pkg", files: { "a.ts": "" }, remove: ["b.ts"] })).toBe(true)
    expect(accepts("update_tool", { name: "pkg", remove: "b.ts" })).toBe(false)
    expect(accepts("update_tool", { name: "pkg", remove: [1] })).toBe(false)
  })

  it("takes an optional path on read_tool_source and an optional name filter on inspect_tool_errors", () => {
    expect(accepts("read_tool_source", { name: "summarize_files", path: "batch.ts" })).toBe(true)
    expect(accepts("read_tool_source", { name: "summarize_files", path: 3 })).toBe(false)
    expect(accepts("inspect_tool_errors", { name: "twice", limit: 1, max_chars: 4000 })).toBe(true)
  })

  it("never names an inspection tool in a control-tool definition (EXP-07)", () => {
    const inspectionName = new RegExp(`\\b(${inspectionTier.join("|")})\\b`)
    for (const t of managementTools.filter((t) => t.tier === "control")) {
      expect(JSON.stringify(t), t.name).not.toMatch(inspectionName)
    }
  })
})
