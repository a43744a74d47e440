/**
 * C# tools through the whole harness, sandboxed: created with create_tool and from a contract,
 * called, composed C# → Python → base tool with depth and callers recorded, cancelled, and kept
 * across a snapshot and its restore.
 */
import { afterAll, describe, expect, it } from "vitest"
import { JitHarness, type JitHarnessOptions } from "@jitbox/core"
import { SandboxRunner } from "@jitbox/sandbox"
import { add } from "../packages/core/test/fixtures.js"

const runner = SandboxRunner.make({ shortTimeoutSeconds: 30, activationTimeoutSeconds: 30, maximumRuntimeEnvironments: 4 })
afterAll(() => runner.close())

const options = (): JitHarnessOptions => ({
  tools: [add],
  codeExecution: "sandboxed",
  runners: [runner],
  policy: { allowedLanguages: ["C#", "Python"] }
})

/** `octo` (C#) asks `quad` (Python), which asks the base tool `add` twice over. */
const octo = `using System.Collections.Generic;
using Jitbox;

public static class Octo {
  public const string Description = "Eight times the value, through quad.";
  public const string Guidelines = "Use to multiply an integer by eight.";
  public const string Parameters = "{\\"type\\": \\"object\\", \\"properties\\": {\\"value\\": {\\"type\\": \\"integer\\"}}, \\"required\\": [\\"value\\"]}";

  public static string Run(string inputJson) {
    var value = (long)((Dictionary<string, object>)Json.Parse(inputJson))["value"];
    var quad = (long)Json.Parse(Harness.CallTool("quad", Json.Write(new Dictionary<string, object> { { "value", value } })));
    return Json.Write(2 * quad);
  }
}
`

const quad = [
  "@tool(guidelines='Use to multiply an integer by four.')",
  "def quad(value: int) -> int:",
  '    """Four times the value."""',
  "    twice = harness.call_tool_sync('add', left=value, right=value)",
  "    return harness.call_tool_sync('add', left=twice, right=twice)",
  ""
].join("\n")

const spin = `public static class Spin {
  public static string Run(string inputJson) {
    while (inputJson.Contains("forever")) { }
    return "\\"done\\"";
  }
}
`

const failure = async (promise: Promise<unknown>) => {
  try {
    await promise
  } catch (error) {
    return error as { _tag: string; reason?: string; message: string; path?: string; detail?: string }
  }
  throw new Error("expected a failure")
}

describe("C# tools (sandboxed)", () => {
  it("C# → Python → base tool, with depth, callers and records; metadata from the entry type", async () => {
    const harness = new JitHarness(options())
    await harness.createTool({ language: "python", entrypoint: "quad", source: quad })
    await harness.createTool({ language: "csharp", entrypoint: "Octo", name: "octo", source: octo })
    expect(await harness.callTool("octo", { value: 5 })).toBe(40)
    expect(harness.profile("quad").calls[0]?.caller_tool_name).toBe("octo")
    expect(harness.profile("add").calls.map((call) => call.caller_tool_name)).toEqual(["quad", "quad"])
    expect(harness.definition("octo")).toMatchObject({ language: "csharp", description: "Eight times the value, through quad." })
    const invalid = await failure(harness.callTool("octo", { value: "five" }))
    expect(invalid._tag).toBe("ValidationError")
    await harness.release()
  })

  it("a compile error fails create_tool with the file, line and column; nothing is installed", async () => {
    const harness = new JitHarness(options())
    const error = await failure(harness.createTool({
      language: "csharp",
      entrypoint: "Broken",
      source: "public static class Broken {\n  public static string Run(string inputJson) { return inputJson }\n}\n",
      guidelines: "Use in tests."
    }))
    expect([error._tag, error.reason, error.path]).toEqual(["PackageError", "CompileError", "Tool.cs"])
    expect(error.message).toContain("Tool.cs:2:64: error CS1525")
    expect(harness.listTools().map((t) => t.name)).not.toContain("Broken")
    await harness.release()
  })

  it("a C# contract (v2) runs its examples before it is ready, and its one Run(string) is the entry point", async () => {
    const harness = new JitHarness(options())
    const ack = await harness.createToolFromContract({
      toolSpecification: "Double the number n.",
      toolCodeLanguage: "C#",
      toolCode: "using System.Collections.Generic;\npublic static class Doubler {\n  public static string Run(string inputJson) {\n    var n = (long)((Dictionary<string, object>)Jitbox.Json.Parse(inputJson))[\"n\"];\n    return \"{\\\"doubled\\\": \" + (2 * n) + \"}\";\n  }\n}\n",
      toolExpectedDuration: "short",
      inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
      outputSchema: { type: "object" },
      examples: [{ input: { n: 2 }, expectedOutput: { doubled: 4 } }]
    }, { contractVersion: 2, name: "doubler" })
    expect(ack.status).toBe("loaded")
    expect(await harness.callTool("doubler", { n: 21 })).toEqual({ doubled: 42 })
    await harness.release()
  })

  it("a cancelled C# call is recorded cancelled and the tool keeps serving", async () => {
    const harness = new JitHarness(options())
    await harness.createTool({ language: "csharp", entrypoint: "Spin", name: "spin", source: spin, description: "Spins.", guidelines: "Use in tests." })
    const controller = new AbortController()
    const pending = failure(harness.callTool("spin", { forever: true }, { signal: controller.signal }))
    setTimeout(() => controller.abort(), 200)
    expect((await pending)._tag).toBe("ToolCancelled")
    expect(harness.profile("spin").calls[0]?.status).toBe("cancelled")
    expect(await harness.callTool("spin", {})).toBe("done")
    await harness.release()
  })

  it("a snapshot keeps C# tools; its restore compiles and runs them again", async () => {
    const harness = new JitHarness(options())
    await harness.createTool({ language: "python", entrypoint: "quad", source: quad })
    await harness.createTool({ language: "csharp", entrypoint: "Octo", name: "octo", source: octo })
    const snapshot = harness.snapshot()
    expect(snapshot.tools.find((t) => t.name === "octo")).toMatchObject({ language: "csharp", entrypoint: "Octo" })
    await harness.release()
    const restored = await JitHarness.fromSnapshot(snapshot, options())
    expect(await restored.callTool("octo", { value: 1 })).toBe(8)
    expect(restored.snapshot()).toEqual(snapshot)
    await restored.release()
  })
})
