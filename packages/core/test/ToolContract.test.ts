import { describe, expect, it } from "vitest"
import { rejection as failure } from "./fixtures.js"
import { JitHarness, ToolContract } from "../src/index.js"

const v1 = {
  toolSpecification: "Double the number n.",
  toolCodeLanguage: "JavaScript",
  toolCode: "module.exports = async function(toolInput) { return { doubled: toolInput.n * 2 } }",
  toolExpectedDuration: "short"
}

const v2 = {
  ...v1,
  inputSchema: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
  outputSchema: { type: "object", properties: { doubled: { type: "number" } }, required: ["doubled"] },
  examples: [{ input: { n: 2 }, expectedOutput: { doubled: 4 } }]
}


describe("tool contracts (JT-CTR, JT-LIM, D-20)", () => {
  it("v1 requires exactly four string fields (JT-CTR-01)", () => {
    expect(() => ToolContract.decode(1, v1)).not.toThrow()
    expect(() => ToolContract.decode(1, { ...v1, extra: "x" })).toThrow(/extra/)
    const { toolCode: _, ...missing } = v1
    expect(() => ToolContract.decode(1, missing)).toThrow(/toolCode/)
    expect(() => ToolContract.decode(1, { ...v1, toolExpectedDuration: 30 })).toThrow(/toolExpectedDuration/)
    expect(() => ToolContract.decode(1, { ...v1, toolExpectedDuration: "medium" })).toThrow(/toolExpectedDuration/)
  })

  it("v2 requires object input schemas, local references only, and 1–8 examples (JT-CTR-08/11)", () => {
    expect(() => ToolContract.decode(2, v2)).not.toThrow()
    expect(() => ToolContract.decode(2, { ...v2, inputSchema: { type: "array" } })).toThrow(/object/)
    expect(() =>
      ToolContract.decode(2, { ...v2, inputSchema: { type: "object", properties: { a: { $ref: "https://example.com/s.json" } } } })
    ).toThrow(/remote reference/)
    expect(() => ToolContract.decode(2, { ...v2, examples: [] })).toThrow(/examples/)
    expect(() => ToolContract.decode(2, { ...v2, examples: Array.from({ length: 9 }, () => v2.examples[0]) })).toThrow(/examples/)
  })

  it("limits toolCode to 128 KiB of UTF-8 (JT-LIM-01)", () => {
    const code = `module.exports = async () => "${"é".repeat(65_540)}"`
    expect(Buffer.byteLength(code)).toBeGreaterThan(131_072)
    expect(() => ToolContract.decode(1, { ...v1, toolCode: code })).toThrow(/131072 bytes/)
  })

  it("creates a JavaScript tool whose entry is module.exports (JT-CTR-04) and answers its tool_id", async () => {
    const harness = new JitHarness()
    const created = await harness.createToolFromContract(v1)
    expect(created.tool_id).toMatch(/^v_[0-9a-f]{20}$/)
    expect(await harness.callTool(created.name, { n: 21 })).toEqual({ doubled: 42 })
    expect(harness.definition(created.name).description).toBe(v1.toolSpecification)
  })

  it("runs v2 examples before the tool is ready and refuses one whose output differs (JT-CTR-10, D-20)", async () => {
    const harness = new JitHarness()
    const wrong = await failure(
      harness.createToolFromContract({ ...v2, examples: [{ input: { n: 2 }, expectedOutput: { doubled: 5 } }] }, {
        contractVersion: 2,
        name: "doubler"
      })
    )
    expect(wrong._tag).toBe("PackageError")
    expect(wrong.reason).toBe("ExampleFailed")
    expect(harness.listTools()).toEqual([])
    const created = await harness.createToolFromContract(
      { ...v2, examples: [{ input: { n: 2 }, expectedOutput: { doubled: 4 } }, { input: { n: 0 }, expectedOutput: { doubled: 0 } }] },
      { contractVersion: 2, name: "doubler" }
    )
    expect(created.name).toBe("doubler")
  })

  it("compares example outputs by JSON deep equality, key order ignored", async () => {
    const harness = new JitHarness()
    const created = await harness.createToolFromContract(
      {
        ...v2,
        toolCode: "module.exports = async () => ({ b: 2, doubled: 4, a: [1, { y: 2, x: 1 }] })",
        outputSchema: { type: "object" },
        examples: [{ input: { n: 2 }, expectedOutput: { a: [1, { x: 1, y: 2 }], doubled: 4, b: 2 } }]
      },
      { contractVersion: 2 }
    )
    expect(created.status).toBe("loaded")
  })

  it("rejects expected outputs that break the output schema", async () => {
    const harness = new JitHarness()
    const error = await failure(
      harness.createToolFromContract({ ...v2, examples: [{ input: { n: 1 }, expectedOutput: { doubled: "two" } }] }, { contractVersion: 2 })
    )
    expect(error.message).toMatch(/outputSchema/)
  })

  it("replacesToolId makes an immutable replacement with a new id, counted as a repair (JT-CTR-09)", async () => {
    const harness = new JitHarness({ policy: { allowedLanguages: ["JavaScript"], maximumRepairs: 1, maximumTools: 3 } })
    const first = await harness.createToolFromContract(v2, { contractVersion: 2 })
    const second = await harness.createToolFromContract(
      { ...v2, toolCode: "module.exports = async (input) => ({ doubled: input.n + input.n })", replacesToolId: first.tool_id },
      { contractVersion: 2 }
    )
    expect(second.name).toBe(first.name)
    expect(second.tool_id).not.toBe(first.tool_id)
    expect(harness.admission.usage().repairs).toBe(1)
    const again = await failure(
      harness.createToolFromContract({ ...v2, replacesToolId: second.tool_id, toolCode: "module.exports = async () => ({ doubled: 4 })" }, {
        contractVersion: 2
      })
    )
    expect(again.reason).toBe("RepairBudgetExhausted")
    expect((await failure(harness.createToolFromContract({ ...v2, replacesToolId: "v_unknown" }, { contractVersion: 2 })))._tag).toBe(
      "InvalidToolRequest"
    )
  })

  it("has no runner for PowerShell on this host (D-02)", async () => {
    const harness = new JitHarness()
    const error = await failure(harness.createToolFromContract({ ...v1, toolCodeLanguage: "PowerShell" }))
    expect(error.reason).toBe("NoRunner")
    expect(error.message).toContain("no runner for PowerShell on this host")
  })

  it("wraps C# toolCode so the one public type with a static Run(string) is the entry point", () => {
    const contract = ToolContract.decode(1, { ...v1, toolCodeLanguage: "C#", toolCode: "public static class Doubler { public static string Run(string inputJson) { return inputJson; } }" })
    const request = ToolContract.toCreateRequest(contract, "doubler")
    expect(request.language).toBe("csharp")
    expect(request.entrypoint).toBe("jitbox_contract")
    expect(request.source).toContain("public static class Doubler")
    expect(request.source).toContain("public static class jitbox_contract { public static string Run(string inputJson) { return Jitbox.Contract.Run(inputJson); } }")
    expect(request.guidelines).toBe(v1.toolSpecification)
  })

  it("refuses a long tool unless the policy allows long-running tools (JT-CTR-02)", async () => {
    const strict = new JitHarness({ policy: { allowedLanguages: ["JavaScript"] } })
    expect((await failure(strict.createToolFromContract({ ...v1, toolExpectedDuration: "long" }))).reason).toBe("LongRunningNotAllowed")
    const open = new JitHarness({ policy: { allowedLanguages: ["JavaScript"], allowLongRunning: true } })
    expect((await open.createToolFromContract({ ...v1, toolExpectedDuration: "long" })).status).toBe("loaded")
  })
})
