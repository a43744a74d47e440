import { describe, expect, it } from "@effect/vitest"
import { JitHarness, type Middleware } from "../src/JitHarness.js"
import { multimodal } from "../src/Measure.js"
import { tool } from "../src/Tool.js"
import { add, codeTool, makeHarness, makeHarnessWithUnbound, modeOptions, recordEvents, rejection, withTwice } from "./fixtures.js"

const open = { type: "object" } as const

const echo = tool({ name: "echo", description: "Returns what it is given.", guidelines: "Use in tests.", parameters: open }, (args: any) => args.value)

const failing = tool(
  { name: "explode", description: "Always throws.", guidelines: "Use in tests.", parameters: open },
  () => {
    throw new RangeError("out of range: 12345")
  }
)

const lastRecord = (harness: JitHarness, name: string) => harness.profile(name).calls[0]

describe("dispatch of base tools", () => {
  it("calls a base tool and records one completed attempt with origin base (PRF-01, ORG-02, STS-01)", async () => {
    const harness = makeHarness()
    expect(await harness.callTool("add", { left: 20, right: 22 }, { callId: "model-call-1" })).toBe(42)
    const { calls, stats } = harness.profile("add")
    expect(calls).toEqual([{
      call_id: "model-call-1",
      tool_name: "add",
      origin: "base",
      status: "completed",
      duration_ms: calls[0]!.duration_ms,
      input_chars: JSON.stringify({ left: 20, right: 22 }).length,
      output_chars: 2,
      caller_tool_name: null,
      error_type: null
    }])
    expect(calls[0]!.duration_ms).toBeGreaterThanOrEqual(0)
    expect(stats[0]).toMatchObject({ tool_name: "add", origin: "base", call_count: 1, completed_count: 1 })
  })

  it("accepts base tools as a record keyed by name", async () => {
    const harness = new JitHarness({ tools: { plus: add, echo } })
    expect(await harness.callTool("plus", { left: 1, right: 2 })).toBe(3)
    expect(harness.listTools().map((entry) => entry.name)).toEqual(["plus", "echo"])
  })

  it("an unknown name is ToolNotFound and leaves no record, error or event (MEAS-12, EVT-11, ORG-06)", async () => {
    const harness = makeHarness()
    const events = recordEvents(harness)
    const error = await rejection(harness.callTool("nope", {}))
    expect(error).toMatchObject({ _tag: "ToolNotFound", name: "nope" })
    expect(harness.profile().total_calls).toBe(0)
    expect(harness.profile().stats).toEqual([])
    expect(harness.toolErrors().total_matches).toBe(0)
    expect(await events.stop()).toEqual([])
  })

  it("ToolNotFound suggests the nearest of the session's tool names: by edit distance, case ignored, at most three, none when nothing is close", async () => {
    const harness = await withTwice()
    for (const name of ["twise", "tiwce", "addd", "twice"]) await harness.createTool({ kind: "text", name: `${name}_notes`, source: "# Notes", description: "Notes." })
    const suggested = async (name: string, call: () => Promise<unknown>) => {
      const error = await rejection(call())
      expect(error).toMatchObject({ _tag: "ToolNotFound", name })
      return { suggestions: (error as { suggestions?: ReadonlyArray<string> }).suggestions, message: (error as Error).message }
    }
    expect(await suggested("twcie", () => harness.callTool("twcie", {}))).toEqual({
      suggestions: ["twice"],
      message: "no tool named 'twcie' exists in this harness; did you mean 'twice'?"
    })
    expect((await suggested("Add", () => harness.callTool("Add", {}))).suggestions).toEqual(["add"])
    // nearest first, ties by name, at most three
    expect((await suggested("twise_note", () => harness.updateTool({ name: "twise_note", source: "x" }))).suggestions).toEqual([
      "twise_notes",
      "twice_notes",
      "tiwce_notes"
    ])
    expect((await suggested("list_tool", () => harness.callTool("inspect_tool", { name: "list_tool" }))).suggestions).toEqual(["list_tools", "load_tool"])
    expect(await suggested("zzzzzz", () => harness.unloadTool("zzzzzz"))).toEqual({
      suggestions: undefined,
      message: "no tool named 'zzzzzz' exists in this harness"
    })
  })

  it("invalid arguments are a failed attempt with error_type ValidationError (D-11, STS-03)", async () => {
    const harness = makeHarness()
    const error = await rejection(harness.callTool("add", { left: "one", right: 2 }))
    expect(error).toMatchObject({ _tag: "ValidationError", name: "add" })
    expect(lastRecord(harness, "add")).toMatchObject({ status: "failed", error_type: "ValidationError" })
    expect(harness.toolErrors("add").errors[0]).toMatchObject({ error_type: "ValidationError", status: "failed" })
  })

  it("a throwing handler rejects with what it threw and is recorded as failed (STS-03, MEAS-06)", async () => {
    const harness = new JitHarness({ tools: [failing] })
    const error = await rejection(harness.callTool("explode", {}))
    expect(error).toBeInstanceOf(RangeError)
    expect(error.message).toBe("out of range: 12345")
    expect(lastRecord(harness, "explode")).toMatchObject({
      status: "failed",
      error_type: "RangeError",
      output_chars: "out of range: 12345".length
    })
  })

  it("adopts base tools bound after construction and rebinding replaces the handler (BASE-02, LIFE-08)", async () => {
    const harness = makeHarness()
    harness.bindBaseTools([echo])
    expect(await harness.callTool("echo", { value: "a" })).toBe("a")
    harness.bindBaseTools({ echo: tool({ description: "Shouts.", guidelines: "Use in tests.", parameters: open }, (args: any) => `${args.value}!`) })
    expect(await harness.callTool("echo", { value: "a" })).toBe("a!")
    expect(harness.definition("echo").description).toBe("Shouts.")
  })

  it("a base name without binding is unbound; calling it is rejected MissingBinding (STS-05, SNAP-15, D-09)", async () => {
    const harness = await makeHarnessWithUnbound(["ghost"])
    expect(harness.listTools().find((entry) => entry.name === "ghost")).toEqual({
      name: "ghost",
      origin: "base",
      state: "unbound",
      description: null
    })
    expect(harness.modelTools().map((entry) => entry.name)).not.toContain("ghost")
    const events = recordEvents(harness)
    const error = await rejection(harness.callTool("ghost", {}))
    expect(error).toMatchObject({ _tag: "ToolRejected", reason: "MissingBinding", name: "ghost" })
    expect(lastRecord(harness, "ghost")).toMatchObject({ status: "rejected", error_type: "ToolRejected", origin: "base" })
    expect(harness.toolErrors("ghost").errors[0]).toMatchObject({ status: "rejected", message: error.message })
    expect(await events.stop()).toEqual([])
  })

  it("a base tool cannot be updated or read as source in either mode (BASE-11, BASE-17, MGMT-14, MGMT-21)", async () => {
    for (const manageBaseTools of [true, false]) {
      const harness = makeHarness({ manageBaseTools })
      expect(await rejection(harness.callTool("update_tool", { name: "add", source: "export const add = 1" }))).toMatchObject({
        _tag: "NameConflict",
        reason: "BaseTool"
      })
      expect(await rejection(harness.callTool("read_tool_source", { name: "add" }))).toMatchObject({
        _tag: "InvalidToolRequest",
        reason: "NoSource"
      })
      expect(harness.listTools()[0]).toMatchObject({ name: "add", origin: "base", state: "loaded" })
    }
  })
})

describe("manageBaseTools (BASE-01..17, UNL-14)", () => {
  it("defaults to true: a base tool can be unloaded, is then rejected and recorded, and loads again (BASE-01, UNL-14)", async () => {
    const harness = makeHarness()
    expect(harness.manageBaseTools).toBe(true)
    expect(await harness.callTool("unload_tool", { name: "add" })).toEqual({ name: "add", status: "unloaded" })
    expect(harness.listTools()[0]).toMatchObject({ name: "add", state: "unloaded" })
    expect(harness.modelTools().map((entry) => entry.name)).not.toContain("add")
    const error = await rejection(harness.callTool("add", { left: 1, right: 2 }))
    expect(error).toMatchObject({ _tag: "ToolRejected", reason: "Unloaded", name: "add" })
    expect(error.message).toContain("'add'")
    expect(lastRecord(harness, "add")).toMatchObject({ status: "rejected", origin: "base", error_type: "ToolRejected" })
    expect(harness.toolErrors("add").errors[0]).toMatchObject({ status: "rejected", error_type: "ToolRejected" })
    expect(await harness.callTool("load_tool", { name: "add" })).toEqual({ name: "add", status: "loaded" })
    expect(await harness.callTool("add", { left: 1, right: 2 })).toBe(3)
  })

  it("with false, unload_tool and load_tool reject base names and nothing changes (BASE-04, BASE-06, UNL-14)", async () => {
    const harness = makeHarness({ manageBaseTools: false })
    for (const management of ["unload_tool", "load_tool"]) {
      expect(await rejection(harness.callTool(management, { name: "add" }))).toMatchObject({
        _tag: "InvalidToolRequest",
        reason: "BaseToolNotManaged",
        name: "add"
      })
    }
    expect(harness.listTools()[0]).toMatchObject({ name: "add", state: "loaded" })
    expect(await harness.callTool("add", { left: 1, right: 2 })).toBe(3)
    expect(lastRecord(harness, "unload_tool")).toMatchObject({ status: "failed", origin: "management" })
  })

  it("with false, base calls leave no records and no errors, even when they fail (BASE-07, PRF-19, ERR-26)", async () => {
    const harness = new JitHarness({ tools: [add, failing], manageBaseTools: false })
    expect(await harness.callTool("add", { left: 1, right: 2 })).toBe(3)
    await rejection(harness.callTool("add", { left: "x" }))
    await rejection(harness.callTool("explode", {}))
    expect(harness.profile().total_calls).toBe(0)
    expect(harness.profileStats("add").call_count).toBe(0)
    expect(harness.toolErrors().retained_errors).toBe(0)
  })

  it("with false, code tools still compose base tools with validation, and code and management calls are profiled (BASE-08, BASE-09)", async () => {
    const harness = await withTwice({ manageBaseTools: false })
    expect(await harness.callTool("twice", { value: 21 })).toBe(42)
    await harness.createTool({ entrypoint: "bad", source: codeTool("bad", `await context.callTool("add", { left: "x", right: 1 })`) })
    const error = await rejection(harness.callTool("bad", {}))
    expect(error._tag).toBe("ValidationError")
    expect(harness.profile().calls.map((call) => [call.tool_name, call.status])).toEqual([
      ["bad", "failed"],
      ["twice", "completed"],
      ["create_tool", "completed"]
    ])
    expect(harness.toolErrors().errors.map((entry) => [entry.tool_name, entry.error_type])).toEqual([["bad", "ValidationError"]])
  })

  it("with false, a parent's duration still includes the time spent in its base dependency (BASE-10, MEAS-08, MEAS-09)", async () => {
    let inChild = 0
    const slow = tool({ name: "slow", description: "Busy for a while.", guidelines: "Use in tests.", parameters: open }, () => {
      const started = performance.now()
      while (performance.now() - started < 15) {
        // busy: the child's own work, measured from inside
      }
      inChild = performance.now() - started
      return "done"
    })
    const harness = new JitHarness({ tools: [slow], manageBaseTools: false })
    await harness.createTool({ entrypoint: "parent", source: codeTool("parent", `await context.callTool("slow", {})`) })
    expect(await harness.callTool("parent", {})).toBe("done")
    expect(lastRecord(harness, "parent")!.duration_ms).toBeGreaterThanOrEqual(inChild)
    expect(inChild).toBeGreaterThanOrEqual(15)
  })

  it("with false, base unload marks are not enforced (BASE-14)", async () => {
    const harness = await JitHarness.fromSnapshot(
      { format_version: 1, tools: [], text_tools: [], base_tools: ["add"], unloaded_tools: ["add"] },
      { ...modeOptions(), tools: [add], manageBaseTools: false }
    )
    expect(harness.snapshot().unloaded_tools).toEqual(["add"])
    expect(harness.listTools()[0]).toMatchObject({ name: "add", state: "loaded" })
    expect(await harness.callTool("add", { left: 2, right: 2 })).toBe(4)
  })

  it("a direct call to the application's handler bypasses the harness: not counted, not blocked by unload (BASE-16, PRF-19)", async () => {
    const harness = makeHarness()
    await harness.unloadTool("add")
    expect(await add.handler({ left: 2, right: 3 }, undefined as never)).toBe(5)
    expect(harness.profile().total_calls).toBe(0)
  })

  it("base tools emit no events, model-called or nested (EVT-05, D-10)", async () => {
    const harness = await withTwice()
    const events = recordEvents(harness)
    await harness.callTool("add", { left: 1, right: 1 })
    await harness.callTool("twice", { value: 1 })
    expect((await events.stop()).map((event) => [event.name, (event.payload as { tool_name?: string }).tool_name])).toEqual([
      ["jit_tool_started", "twice"],
      ["jit_tool_completed", "twice"]
    ])
  })
})

describe("measurements (MEAS-01..07, MEAS-13)", () => {
  const harness = new JitHarness({ tools: [echo, failing] })
  const measured = async (value: unknown) => {
    await harness.callTool("echo", { value })
    return lastRecord(harness, "echo")!
  }

  it("input is the code points of the compact JSON of the arguments (MEAS-01, MEAS-04)", async () => {
    const args = { value: "😀 é", nested: { list: [1, 2] } }
    await harness.callTool("echo", args)
    expect(lastRecord(harness, "echo")!.input_chars).toBe(Array.from(JSON.stringify(args)).length)
    expect(lastRecord(harness, "echo")!.input_chars).toBeLessThan(JSON.stringify(args).length)
  })

  it("text output counts plain code points, structured output compact JSON (MEAS-02)", async () => {
    expect((await measured("𝔘𝔘x")).output_chars).toBe(3)
    expect((await measured({ a: "𝔘", b: [1, null] })).output_chars).toBe(Array.from(JSON.stringify({ a: "𝔘", b: [1, null] })).length)
    expect((await measured(42)).output_chars).toBe(2)
  })

  it("multimodal output counts text blocks only (MEAS-03)", async () => {
    const result = multimodal([
      { type: "text", text: "caption" },
      { type: "image", data: "A".repeat(5000), mimeType: "image/png" },
      { type: "image", url: "https://example.com/a-very-long-url.png" },
      { type: "text", text: "😀" }
    ])
    expect((await measured(result)).output_chars).toBe(8)
  })

  it("a missing measurement is null, never 0 (MEAS-05)", async () => {
    expect((await measured(undefined)).output_chars).toBeNull()
    await harness.callTool("echo", { value: "x", big: 10n })
    expect(lastRecord(harness, "echo")!.input_chars).toBeNull()
    expect((await measured("")).output_chars).toBe(0)
  })

  it("an error's output measure is the length of its message (MEAS-06)", async () => {
    await rejection(harness.callTool("explode", {}))
    expect(lastRecord(harness, "explode")!.output_chars).toBe("out of range: 12345".length)
  })

  it("measuring stops at 8,000 code points (MEAS-07)", async () => {
    expect((await measured("😀".repeat(12_000))).output_chars).toBe(8_000)
    expect((await measured("x".repeat(7_999))).output_chars).toBe(7_999)
    await harness.callTool("echo", { value: "y".repeat(20_000) })
    expect(lastRecord(harness, "echo")!.input_chars).toBe(8_000)
    expect((await measured(Array.from({ length: 3000 }, (_, i) => i))).output_chars).toBe(8_000)
  })

  it("durations are milliseconds (MEAS-13)", async () => {
    const before = performance.now()
    await harness.callTool("echo", { value: 1 })
    const elapsed = performance.now() - before
    const record = lastRecord(harness, "echo")!
    expect(record.duration_ms).toBeGreaterThanOrEqual(0)
    expect(record.duration_ms).toBeLessThanOrEqual(elapsed)
  })
})

describe("middleware (CON-07, MEAS-11)", () => {
  it("runs around model calls and nested calls, in order, with the call's facts", async () => {
    const seen: Array<string> = []
    const log: Middleware = (call, next) => {
      seen.push(`${call.name}@${call.depth}<${call.callerToolName ?? "-"}:${call.origin}`)
      return next()
    }
    const harness = await withTwice({ middleware: [log] })
    seen.length = 0
    expect(await harness.callTool("twice", { value: 2 })).toBe(4)
    expect(seen).toEqual(["twice@1<-:code", "add@2<twice:base"])
  })

  it("can transform results and arguments' outcome on the nested path", async () => {
    const plusOne: Middleware = async (call, next) => {
      const result = await next()
      return call.name === "add" ? (result as number) + 1 : result
    }
    const harness = await withTwice({ middleware: [plusOne] })
    expect(await harness.callTool("twice", { value: 2 })).toBe(5)
  })

  it("a middleware failure after the handler returned leaves the record completed and nothing cached (STS-02, ERR-17)", async () => {
    const late: Middleware = async (call, next) => {
      const result = await next()
      if (call.name === "twice") throw new Error("hook failed after the tool ran")
      return result
    }
    const harness = await withTwice({ middleware: [late] })
    const events = recordEvents(harness)
    expect(await rejection(harness.callTool("twice", { value: 1 }))).toMatchObject({ message: "hook failed after the tool ran" })
    expect(harness.profile().calls.slice(0, 2).map((call) => [call.tool_name, call.status])).toEqual([
      ["add", "completed"],
      ["twice", "completed"]
    ])
    expect(harness.toolErrors().retained_errors).toBe(0)
    expect((await events.stop()).map((event) => event.payload)).toMatchObject([{ tool_name: "twice" }, { tool_name: "twice", success: true }])
  })

  it("a result that cannot be serialised is still completed, with no output measure (STS-02, MEAS-05)", async () => {
    const harness = new JitHarness({ tools: [echo] })
    expect(await harness.callTool("echo", { value: 1 })).toBe(1)
    const weird = tool({ name: "weird", description: "Returns a BigInt.", guidelines: "Use in tests." }, () => ({ n: 1n }))
    harness.bindBaseTools([weird])
    expect(await harness.callTool("weird")).toEqual({ n: 1n })
    expect(harness.profile("weird").calls[0]).toMatchObject({ status: "completed", output_chars: null })
  })

  it("time spent in middleware before dispatch is not part of the duration (MEAS-08)", async () => {
    let spent = 0
    const slow: Middleware = (_call, next) => {
      const started = performance.now()
      while (performance.now() - started < 10) {
        // busy: middleware work outside the dispatch boundary
      }
      spent = performance.now() - started
      return next()
    }
    const harness = makeHarness({ middleware: [slow] })
    const before = performance.now()
    await harness.callTool("add", { left: 1, right: 1 })
    const elapsed = performance.now() - before
    // The attempt's interval and the middleware's are disjoint parts of the whole call.
    expect(harness.profile("add").calls[0]!.duration_ms).toBeLessThanOrEqual(elapsed - spent)
    expect(spent).toBeGreaterThanOrEqual(10)
  })

  it("a short-circuit makes no record, because the tool never ran (MEAS-11)", async () => {
    const block: Middleware = (call, next) => (call.name === "add" ? Promise.resolve("blocked") : next())
    const harness = makeHarness({ middleware: [block] })
    expect(await harness.callTool("add", { left: 1, right: 2 })).toBe("blocked")
    expect(harness.profile("add").total_calls).toBe(0)
    expect(harness.profileStats("add").call_count).toBe(0)
  })
})
