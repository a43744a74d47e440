/**
 * The core harness's composition and package behaviour, run against both execution modes: trusted
 * (in-process) and sandboxed (each code package in a child process of @jitbox/sandbox). The same
 * assertions hold for both; cross-language composition (Python → TypeScript → base tool) needs the
 * sandbox.
 */
import { afterAll, describe, expect, it } from "vitest"
import { JitHarness, type JitHarnessOptions, tool } from "@jitbox/core"
import { SandboxRunner } from "@jitbox/sandbox"

const add = tool({
  name: "add",
  description: "Add two integers.",
  guidelines: "Use for integer addition.",
  parameters: { type: "object", properties: { left: { type: "integer" }, right: { type: "integer" } }, required: ["left", "right"] }
}, ({ left, right }: { left: number; right: number }) => left + right)

const twice = `export const twice = tool({
  description: "Add the same integer twice.",
  guidelines: "Use to add an integer to itself.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }) => await harness.callTool("add", { left: value, right: value }))`

const runner = SandboxRunner.make({ shortTimeoutSeconds: 30, maximumRuntimeEnvironments: 4 })
afterAll(() => runner.close())

const modes: ReadonlyArray<readonly [string, () => JitHarnessOptions]> = [
  ["trusted", () => ({})],
  ["sandboxed", () => ({ codeExecution: "sandboxed", runners: [runner] })]
]

const failure = async (promise: Promise<unknown>) => {
  try {
    await promise
  } catch (error) {
    return error as { _tag: string; reason?: string; message: string; path?: string }
  }
  throw new Error("expected a failure")
}

describe.each(modes)("%s execution", (_mode, options) => {
  const make = (extra: JitHarnessOptions = {}) => new JitHarness({ tools: [add], ...options(), ...extra })

  it("composes a base tool through the dispatch path, with caller and fresh call ids (CON-05, CON-18)", async () => {
    const harness = make()
    await harness.createTool({ entrypoint: "twice", source: twice })
    expect(await harness.callTool("twice", { value: 21 }, { callId: "outer" })).toBe(42)
    const [nested] = harness.profile("add").calls
    expect(nested?.caller_tool_name).toBe("twice")
    expect(nested?.call_id).not.toBe("outer")
    expect(harness.profile("twice").calls[0]?.call_id).toBe("outer")
    await harness.release()
  })

  it("validates nested arguments and propagates the dependency's failure (CON-09, CON-20)", async () => {
    const harness = make()
    await harness.createTool({
      entrypoint: "broken",
      source: `export const broken = tool({ description: "Send bad arguments.", guidelines: "Use in tests." },
        async () => await harness.callTool("add", { left: "one", right: 2 }))`
    })
    await failure(harness.callTool("broken", {}))
    expect(harness.profile("add").calls[0]).toMatchObject({ status: "failed", error_type: "ValidationError", caller_tool_name: "broken" })
    expect(harness.profile("broken").calls[0]?.status).toBe("failed")
    await harness.release()
  })

  it("rejects an unloaded dependency explicitly and recovers when it is loaded (CON-19, UNL-03)", async () => {
    const harness = make()
    await harness.createTool({ entrypoint: "twice", source: twice })
    await harness.createTool({
      entrypoint: "quad",
      source: `export const quad = tool({ description: "Four times.", guidelines: "Use to quadruple.",
        parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] } },
        async ({ value }) => 2 * await harness.callTool("twice", { value }))`
    })
    await harness.unloadTool("twice")
    const error = await failure(harness.callTool("quad", { value: 1 }))
    expect(error.message).toContain("twice")
    expect(harness.profile("twice").calls[0]?.status).toBe("rejected")
    await harness.loadTool("twice")
    expect(await harness.callTool("quad", { value: 5 })).toBe(20)
    await harness.release()
  })

  it("bounds composition depth (CON-14)", async () => {
    const harness = make({ maxCallDepth: 3 })
    await harness.createTool({
      entrypoint: "dive",
      source: `export const dive = tool({ description: "Recurse.", guidelines: "Use in tests.",
        parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } },
        async ({ n }) => n === 0 ? "bottom" : await harness.callTool("dive", { n: n - 1 }))`
    })
    expect(await harness.callTool("dive", { n: 2 })).toBe("bottom")
    await failure(harness.callTool("dive", { n: 3 }))
    expect(harness.profile("dive").calls.filter((call) => call.status === "rejected")).toHaveLength(1)
    await harness.release()
  })

  it("loads multi-file packages with sub-folders and keeps state per version (PKG-01..03, PKG-11)", async () => {
    const harness = make()
    await harness.createTool({
      entrypoint: "counter",
      source: `import { step } from "./lib/step"
let count = 0
export const counter = tool({ description: "Count calls.", guidelines: "Use in tests." }, () => (count += step))`,
      files: { "lib/step.ts": "export const step = 1" }
    })
    expect(await harness.callTool("counter")).toBe(1)
    expect(await harness.callTool("counter")).toBe(2)
    await harness.updateTool({ name: "counter", files: { "lib/step.ts": "export const step = 10" } })
    expect(await harness.callTool("counter")).toBe(10)
    await harness.release()
  })

  it("surfaces load errors at create time and keeps the previous version (PKG-09, PKG-10)", async () => {
    const harness = make()
    await harness.createTool({ entrypoint: "twice", source: twice })
    const syntax = await failure(harness.updateTool({ name: "twice", files: { "lib/bad.ts": "export const = 1" }, source: `import "./lib/bad"\n${twice}` }))
    expect([syntax._tag, syntax.reason]).toEqual(["PackageError", "CompileError"])
    const missing = await failure(harness.updateTool({ name: "twice", source: `import { x } from "./nowhere"\nvoid x\n${twice}` }))
    expect([missing._tag, missing.reason]).toEqual(["PackageError", "ImportError"])
    const entry = await failure(harness.updateTool({ name: "twice", entrypoint: "thrice" }))
    expect(entry.reason).toBe("MissingEntrypoint")
    expect(await harness.callTool("twice", { value: 4 })).toBe(8)
    await harness.release()
  })

  it("cancels a running call when the caller aborts (D-22)", async () => {
    const harness = make()
    await harness.createTool({
      entrypoint: "wait",
      source: `export const wait = tool({ description: "Wait.", guidelines: "Use in tests." },
        () => new Promise((resolve) => setTimeout(() => resolve("late"), 10_000)))`
    })
    const controller = new AbortController()
    const pending = failure(harness.callTool("wait", {}, { signal: controller.signal }))
    setTimeout(() => controller.abort(), 200)
    expect((await pending)._tag).toBe("ToolCancelled")
    expect(harness.profile("wait").calls[0]?.status).toBe("cancelled")
    await harness.release()
  })
})

describe("cross-language composition (sandboxed)", () => {
  it("Python → TypeScript → base tool, with depth, callers and records (XS-05, D-24)", async () => {
    const harness = new JitHarness({ tools: [add], codeExecution: "sandboxed", runners: [runner] })
    await harness.createTool({ entrypoint: "twice", source: twice })
    await harness.createTool({
      language: "python",
      entrypoint: "quad",
      source: [
        "@tool(guidelines='Use to multiply an integer by four.')",
        "async def quad(value: int) -> int:",
        '    """Four times the value, through twice."""',
        "    return 2 * await harness.call_tool('twice', value=value)",
        ""
      ].join("\n")
    })
    expect(await harness.callTool("quad", { value: 5 })).toBe(20)
    expect(harness.profile("twice").calls[0]?.caller_tool_name).toBe("quad")
    expect(harness.profile("add").calls[0]?.caller_tool_name).toBe("twice")
    expect(harness.profileStats("quad").completed_count).toBe(1)
    expect(harness.definition("quad")).toMatchObject({ language: "python", description: "Four times the value, through twice." })
    await harness.release()
  })

  it("a Python tool's own exception keeps its Python type name in the record and the error cache", async () => {
    const harness = new JitHarness({ codeExecution: "sandboxed", runners: [runner] })
    await harness.createTool({
      language: "python",
      entrypoint: "fail",
      source: ["@tool(guidelines='Use in tests.')", "def fail() -> int:", '    """Always fails."""', "    raise ValueError('no good')", ""].join("\n")
    })
    await failure(harness.callTool("fail", {}))
    expect(harness.profile("fail").calls[0]?.error_type).toBe("ValueError")
    expect(harness.toolErrors("fail").errors[0]).toMatchObject({ error_type: "ValueError", message: "no good" })
    await harness.release()
  })

  it("a sandboxed harness has no trusted runner: JavaScript runs in a child", async () => {
    const harness = new JitHarness({ codeExecution: "sandboxed", runners: [runner] })
    await harness.createTool({
      entrypoint: "pid",
      source: `export const pid = tool({ description: "Report the process id.", guidelines: "Use in tests." }, () => process.pid)`
    })
    expect(await harness.callTool("pid")).not.toBe(process.pid)
    await harness.release()
  })
})
