import { describe, expect, it } from "vitest"
import {
  countTokens,
  exposureTokens,
  inContext,
  payload,
  referenceTable,
  responsesTargets,
  tokenTable
} from "../../../benchmarks/tokenCount.js"
import { chatCompletionsTools, responsesTools } from "../../../benchmarks/wireTools.js"
import { exposureFor } from "../src/Exposure.js"
import { inspectionToolNames } from "../src/ManagementTools.js"

// A size regression test on deterministic data: the definitions and the instruction block are
// constants, so their token count only changes when their text does.
describe("token budget (EXP-09, D-12)", () => {
  const table = tokenTable()

  it("counts cl100k_base tokens", () => {
    expect(countTokens("Hello, world!")).toBe(4)
    expect(countTokens("The quick brown fox jumps over the lazy dog.")).toBe(10)
  })

  it.each(["always", "deferred", "hidden"] as const)("stays within the Responses target in %s mode", (mode) => {
    expect(table.responses[mode]).toBeLessThanOrEqual(responsesTargets[mode])
  })

  it.each(["always", "deferred", "hidden"] as const)("beats the reference figures in %s mode", (mode) => {
    expect(table.responses[mode]).toBeLessThan(referenceTable.responses[mode])
    expect(table.chat_completions[mode]).toBeLessThan(referenceTable.chat_completions[mode])
  })

  it("saves by deferring on Responses only, and by hiding everywhere (EXP-11, EXP-12)", () => {
    expect(table.responses.deferred).toBeLessThan(table.responses.always)
    expect(table.responses.hidden).toBeLessThan(table.responses.deferred)
    expect(table.chat_completions.deferred).toBe(table.chat_completions.always)
    expect(table.chat_completions.hidden).toBeLessThan(table.chat_completions.always)
  })

  it("counts exactly the in-context tools plus the instruction block", () => {
    const { instructions, tools } = payload("deferred", "responses")
    expect(exposureTokens("deferred", "responses")).toBe(
      countTokens(JSON.stringify(inContext(tools))) + countTokens(instructions)
    )
    expect(inContext(tools).map((t) => t["name"] ?? t["type"])).toEqual([
      "create_tool",
      "update_tool",
      "unload_tool",
      "load_tool",
      "list_tools",
      "inspect_tool",
      "tool_search"
    ])
  })
})

describe("wire rendering", () => {
  it("renders Responses tools flat, deferring the inspection tier behind one tool_search entry", () => {
    const tools = responsesTools(exposureFor("deferred", "responses").tools)
    expect(tools.filter((t) => t["type"] === "tool_search")).toEqual([{ type: "tool_search" }])
    expect(tools.at(-1)).toEqual({ type: "tool_search" })
    for (const t of tools.filter((t) => t["type"] === "function")) {
      expect(t["strict"]).toBe(false)
      expect(t["defer_loading"]).toBe(inspectionToolNames.has(String(t["name"])) ? true : undefined)
      expect(Object.keys(t).slice(0, 5)).toEqual(["type", "name", "description", "parameters", "strict"])
    }
  })

  it("adds no tool_search entry when nothing is deferred", () => {
    for (const mode of ["always", "hidden"] as const) {
      const tools = responsesTools(exposureFor(mode, "responses").tools)
      expect(tools.some((t) => t["type"] === "tool_search" || "defer_loading" in t)).toBe(false)
    }
  })

  it("renders Chat Completions tools nested under function, never deferred", () => {
    const exposed = exposureFor("deferred", "chat_completions").tools
    const tools = chatCompletionsTools(exposed)
    expect(tools).toHaveLength(11)
    expect(tools[0]).toEqual({
      type: "function",
      function: { name: "create_tool", description: exposed[0]?.description, parameters: exposed[0]?.parameters }
    })
    expect(JSON.stringify(tools)).not.toMatch(/defer_loading|tool_search/)
  })
})
