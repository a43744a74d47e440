import { describe, expect, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import * as fc from "fast-check"
import { z } from "zod"
import { z as z3 } from "zod/v3"
import { ToolDefinitionError } from "../src/HarnessError.js"
import { JitHarness } from "../src/JitHarness.js"
import { isToolDefinition, tool, ToolDefinition } from "../src/Tool.js"
import { ToolExecutionMode } from "../src/ToolOrigin.js"
import { codeTool, makeHarness, rejection } from "./fixtures.js"

const spec = { description: "Add two integers, with an optional label.", guidelines: "Use for integer addition." }
const handler = ({ left, right }: { left: number; right: number }) => left + right

/** One argument contract written four ways (CON-04, X-01, X-02). */
const definitions = {
  effect: tool({
    ...spec,
    name: "add_effect",
    parameters: Schema.Struct({ left: Schema.Int, right: Schema.Int, label: Schema.optional(Schema.String) })
  }, handler),
  zod4: tool({
    ...spec,
    name: "add_zod4",
    parameters: z.object({ left: z.number().int(), right: z.number().int(), label: z.string().optional() })
  }, handler),
  zod3: tool({
    ...spec,
    name: "add_zod3",
    parameters: z3.object({ left: z3.number().int(), right: z3.number().int(), label: z3.string().optional() })
  }, handler),
  jsonSchema: tool({
    ...spec,
    name: "add_json",
    parameters: {
      type: "object",
      properties: { left: { type: "integer" }, right: { type: "integer" }, label: { type: "string" } },
      required: ["left", "right"],
      additionalProperties: false
    }
  }, handler)
}

const fixedCases: ReadonlyArray<readonly [string, unknown, boolean]> = [
  ["both integers", { left: 1, right: 2 }, true],
  ["with the optional label", { left: -4, right: 0, label: "sum" }, true],
  ["a missing required field", { left: 1 }, false],
  ["a string for an integer", { left: "1", right: 2 }, false],
  ["a fraction for an integer", { left: 1.5, right: 2 }, false],
  ["null for an integer", { left: null, right: 2 }, false],
  ["a number for the string label", { left: 1, right: 2, label: 3 }, false],
  ["an undeclared argument", { left: 1, right: 2, extra: true }, false],
  ["an array instead of an object", [1, 2], false],
  ["null instead of an object", null, false]
]

const accepts = (definition: ToolDefinition, args: unknown) => definition.validate(args) === undefined

describe("tool definitions (CON-01..04, X-01..04)", () => {
  it.each(fixedCases)("effect Schema, zod 4, zod 3 and JSON Schema agree on %s (CON-04, X-02)", async (_, args, valid) => {
    const harness = new JitHarness({ tools: Object.values(definitions) })
    for (const definition of Object.values(definitions)) {
      expect(accepts(definition, args), definition.name).toBe(valid)
      const outcome = await harness.callTool(definition.name!, args).then(
        (result) => ({ ok: true, result }),
        (error) => ({ ok: false, tag: error._tag })
      )
      expect(outcome, definition.name).toEqual(valid ? { ok: true, result: handler(args as never) } : { ok: false, tag: "ValidationError" })
    }
  })

  it("the four schema sources accept and reject the same random arguments (CON-04, X-02)", () => {
    const value = fc.oneof(
      { arbitrary: fc.integer(), weight: 8 },
      // Within the safe-integer range: zod 4 writes its safe-integer bounds into the schema, the
      // other three renderings say only "integer", so beyond 2^53 they differ by design.
      fc.double({ noNaN: true, min: -(2 ** 52), max: 2 ** 52 }),
      fc.string(),
      fc.constant(null),
      fc.boolean(),
      fc.array(fc.integer(), { maxLength: 2 })
    )
    const args = fc.oneof(
      fc.record(
        { left: value, right: value, label: value, extra: value },
        { requiredKeys: [] }
      ),
      value
    )
    fc.assert(
      fc.property(args, (candidate) => {
        const verdicts = Object.values(definitions).map((definition) => accepts(definition, candidate))
        expect(new Set(verdicts).size).toBe(1)
      }),
      { numRuns: 500 }
    )
  })

  it("rejects a missing or blank description at definition time (CON-04)", () => {
    for (const description of [undefined, "", "   "]) {
      const thrown = (() => {
        try {
          tool({ description, guidelines: "Use it." } as never, () => 1)
        } catch (error) {
          return error
        }
      })()
      expect(thrown).toBeInstanceOf(ToolDefinitionError)
      expect((thrown as ToolDefinitionError).reason).toBe("MissingDescription")
    }
  })

  it("rejects empty guidelines at definition time (CON-04)", () => {
    for (const guidelines of [undefined, "", " \n "]) {
      expect(() => tool({ description: "A tool.", guidelines } as never, () => 1)).toThrowError(
        expect.objectContaining({ _tag: "ToolDefinitionError", reason: "EmptyGuidelines" })
      )
    }
  })

  it("rejects parameters that are not an object of named arguments (CON-04)", () => {
    for (const parameters of [Schema.String, z.string(), z3.array(z3.number()), { type: "array" }]) {
      expect(() => tool({ description: "A tool.", guidelines: "Use it.", parameters } as never, () => 1)).toThrowError(
        expect.objectContaining({ _tag: "ToolDefinitionError", reason: "InvalidParameters" })
      )
    }
  })

  it("rejects an invalid name and a missing handler", () => {
    expect(() => tool({ name: "two words", description: "A tool.", guidelines: "Use it." }, () => 1)).toThrowError(
      expect.objectContaining({ _tag: "ToolDefinitionError", reason: "InvalidName" })
    )
    expect(() => tool({ description: "A tool.", guidelines: "Use it." }, undefined as never)).toThrowError(
      expect.objectContaining({ _tag: "ToolDefinitionError" })
    )
  })

  it("normalises every schema source to plain JSON Schema without $schema (X-02)", () => {
    for (const definition of Object.values(definitions)) {
      expect(definition.parameters).not.toHaveProperty("$schema")
      expect(definition.parameters.type).toBe("object")
      expect(JSON.parse(JSON.stringify(definition.parameters))).toEqual(definition.parameters)
    }
  })

  it("keeps execution mode and defaults it to parallel (D-23)", () => {
    expect(definitions.effect.executionMode).toBe("parallel")
    const serial = tool({ description: "A tool.", guidelines: "Use it.", executionMode: ToolExecutionMode.Serial }, () => 1)
    expect(serial.executionMode).toBe("serial")
    expect(() => tool({ description: "A tool.", guidelines: "Use it.", executionMode: "sometimes" as never }, () => 1)).toThrowError(
      expect.objectContaining({ _tag: "ToolDefinitionError" })
    )
  })

  it("a code module sees tool, ToolExecutionMode and harness without importing them (CON-01, X-03)", async () => {
    const harness = makeHarness()
    const source = `
export const probe = tool({
  description: "Reports what module scope holds.",
  guidelines: "Use in tests.",
  executionMode: ToolExecutionMode.Serial
}, async () => [typeof tool, ToolExecutionMode.Parallel, typeof harness.callTool])
`
    await harness.createTool({ entrypoint: "probe", source })
    expect(await harness.callTool("probe")).toEqual(["function", "parallel", "function"])
    expect(harness.definition("probe").execution_mode).toBe("serial")
  })

  it("a code module may hold imports, helpers and classes; the entry point is a named export (CON-02, CON-03, X-04)", async () => {
    const harness = makeHarness()
    const source = `
import { createHash } from "node:crypto"
class Counter { n = 0; next() { return ++this.n } }
const counter = new Counter()
function digest(text: string): string { return createHash("sha256").update(text).digest("hex").slice(0, 8) }
export const other = 1
export const hashed = tool({
  description: "Hashes its input.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }
}, async ({ text }: { text: string }) => ({ digest: digest(text), n: counter.next() }))
`
    expect(await harness.createTool({ entrypoint: "hashed", source })).toEqual({ name: "hashed", status: "loaded" })
    expect(await harness.callTool("hashed", { text: "abc" })).toEqual({ digest: "ba7816bf", n: 1 })
  })

  it("a code tool's tool(...) that breaks the contract fails create_tool with ToolDefinitionError (CON-04)", async () => {
    const harness = makeHarness()
    const emptyGuidelines = `export const bad = tool({ description: "A tool.", guidelines: "" }, async () => 1)`
    const error = await rejection(harness.callTool("create_tool", { entrypoint: "bad", source: emptyGuidelines }))
    expect(error).toMatchObject({ _tag: "ToolDefinitionError", reason: "EmptyGuidelines" })
    const noDescription = `export const bad = tool({ guidelines: "Use it." } as any, async () => 1)`
    expect(await rejection(harness.createTool({ entrypoint: "bad", source: noDescription }))).toMatchObject({
      _tag: "ToolDefinitionError",
      reason: "MissingDescription"
    })
    expect(harness.listTools().map((entry) => entry.name)).toEqual(["add"])
  })

  it("code tools are ordinary function tools with their own schema (KIND-05)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "echo", source: codeTool("echo", "args") })
    const definition = harness.modelTools().find((entry) => entry.name === "echo")
    expect(definition).toMatchObject({ origin: "code", description: "Tool echo.", guidelines: "Use in tests.", executionMode: "parallel" })
    expect(definition?.parameters).toEqual({ type: "object", properties: {} })
  })

  it("kind defaults to code and accepts text; anything else is refused (KIND-01, KIND-02)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "echo", source: codeTool("echo", "args") })
    await harness.createTool({ kind: "text", name: "steps", description: "Steps.", source: "# Steps" })
    expect(harness.listTools().map(({ name, origin }) => [name, origin])).toEqual([["add", "base"], ["echo", "code"], ["steps", "text"]])
    const error = await rejection(harness.callTool("create_tool", { kind: "python", entrypoint: "x", source: "" }))
    expect(error._tag).toBe("ValidationError")
    expect(await rejection(harness.createTool({ kind: "skill" as never, name: "x", source: "" }))).toMatchObject({
      _tag: "InvalidToolRequest",
      reason: "FieldNotAllowed"
    })
  })

  it("is a ToolDefinition the harness recognises; other values are refused as base tools", () => {
    expect(isToolDefinition(definitions.zod3)).toBe(true)
    expect(isToolDefinition({ name: "add", handler: () => 1 })).toBe(false)
    expect(() => new JitHarness({ tools: [{ name: "fake" } as never] })).toThrowError(expect.objectContaining({ _tag: "ConfigError" }))
    expect(() => new JitHarness({ tools: [tool({ description: "No name.", guidelines: "Use it." }, () => 1)] })).toThrowError(
      expect.objectContaining({ _tag: "ConfigError" })
    )
  })
})
