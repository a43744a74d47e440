import { describe, expect, it } from "@effect/vitest"
import { JitHarness } from "../src/JitHarness.js"
import type { JitToolEvent } from "../src/JitToolEvent.js"
import { tool } from "../src/Tool.js"
import {
  add,
  codeTool,
  deferred,
  flush,
  makeHarness,
  recordEvents,
  rejection,
  twiceJsSource,
  withTwice
} from "./fixtures.js"

const recurseSource = `
export const recurse = tool({
  description: "Calls itself n more times and returns the depth it reached.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { n: { type: "integer", minimum: 0 } }, required: ["n"] }
}, async ({ n }: { n: number }, context) => n === 0 ? context.depth : await harness.callTool("recurse", { n: n - 1 }))
`

const names = (events: ReadonlyArray<JitToolEvent>) =>
  events.map((event) => `${event.name === "jit_tool_started" ? "+" : "-"}${(event.payload as { tool_name: string }).tool_name}`)

describe("composition (CON-05..23, D-24)", () => {
  it("twice composes add and returns 42 (CON-05, CON-22, D-25)", async () => {
    const harness = await withTwice()
    expect(await harness.callTool("twice", { value: 21 })).toBe(42)
  })

  it("JavaScript code tools compose the same way (D-24)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "twice", language: "javascript", source: twiceJsSource })
    expect(harness.definition("twice").language).toBe("javascript")
    expect(await harness.callTool("twice", { value: 21 })).toBe(42)
  })

  it("the nested record names its caller and has a fresh call id of its own (PRF-05, D-10, AMB-18)", async () => {
    const harness = await withTwice()
    await harness.callTool("twice", { value: 1 }, { callId: "model-1" })
    await harness.callTool("twice", { value: 2 }, { callId: "model-2" })
    const calls = harness.profile().calls.filter((call) => call.tool_name !== "create_tool")
    expect(calls.map((call) => [call.tool_name, call.caller_tool_name])).toEqual([
      ["add", "twice"],
      ["twice", null],
      ["add", "twice"],
      ["twice", null]
    ])
    expect(calls[1]!.call_id).toBe("model-2")
    expect(calls[3]!.call_id).toBe("model-1")
    const ids = harness.profile().calls.map((call) => call.call_id)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it("handlers get a context with callTool, callId, depth and signal (D-24)", async () => {
    const harness = makeHarness()
    const source = codeTool(
      "introspect",
      `({ callId: context.callId, depth: context.depth, toolName: context.toolName, signal: context.signal instanceof AbortSignal ? (context.signal.aborted ? "aborted" : "present") : "none", sum: await context.callTool("add", { left: 1, right: 2 }) })`
    )
    await harness.createTool({ entrypoint: "introspect", source })
    const controller = new AbortController()
    expect(await harness.callTool("introspect", {}, { callId: "c-1", signal: controller.signal })).toEqual({
      callId: "c-1",
      depth: 1,
      toolName: "introspect",
      signal: "present",
      sum: 3
    })
    const nested = await harness.callTool("introspect", {})
    expect(nested).toMatchObject({ signal: "present", depth: 1 })
  })

  it("nested calls go through argument validation (CON-07, CON-20, STS-03)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "sloppy", source: codeTool("sloppy", `await harness.callTool("add", { left: "1", right: 2 })`) })
    const error = await rejection(harness.callTool("sloppy", {}))
    expect(error).toMatchObject({ _tag: "ValidationError", name: "add" })
    const [nested, outer] = harness.profile().calls
    expect(nested).toMatchObject({ tool_name: "add", status: "failed", error_type: "ValidationError", caller_tool_name: "sloppy" })
    expect(outer).toMatchObject({ tool_name: "sloppy", status: "failed", error_type: "ValidationError" })
  })

  it("nested calls use the current registration: an update between calls is seen (CON-07, UNL-08)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "dep", source: codeTool("dep", `"v1"`) })
    await harness.createTool({ entrypoint: "caller", source: codeTool("caller", `await harness.callTool("dep", {})`) })
    expect(await harness.callTool("caller", {})).toBe("v1")
    await harness.updateTool({ name: "dep", source: codeTool("dep", `"v2"`) })
    expect(await harness.callTool("caller", {})).toBe("v2")
    harness.bindBaseTools({ add: tool({ description: "Adds, badly.", guidelines: "Use in tests.", parameters: { type: "object" } }, () => -1) })
    await harness.createTool({ entrypoint: "sum", source: codeTool("sum", `await harness.callTool("add", { left: 1, right: 1 })`) })
    expect(await harness.callTool("sum", {})).toBe(-1)
  })

  it("an exception in a dependency propagates to the outer tool (CON-09, STS-03)", async () => {
    const harness = makeHarness()
    const dep = codeTool(
      "dep",
      `(() => { throw new Boom("boom: " + args.why) })()`,
      `class Boom extends Error { constructor(message: string) { super(message); this.name = "Boom" } }`
    )
    await harness.createTool({ entrypoint: "dep", source: dep })
    await harness.createTool({ entrypoint: "outer", source: codeTool("outer", `await harness.callTool("dep", { why: "disk" })`) })
    const error = await rejection(harness.callTool("outer", {}))
    expect(error).toBeInstanceOf(Error)
    expect([error.name, error.message]).toEqual(["Boom", "boom: disk"])
    expect(harness.profile().calls.slice(0, 2)).toMatchObject([
      { tool_name: "dep", status: "failed", error_type: "Boom", caller_tool_name: "outer" },
      { tool_name: "outer", status: "failed", error_type: "Boom", caller_tool_name: null }
    ])
    expect(harness.toolErrors().errors.map((entry) => [entry.tool_name, entry.caller_tool_name, entry.message])).toEqual([
      ["outer", null, "boom: disk"],
      ["dep", "outer", "boom: disk"]
    ])
  })

  it("an exception the outer tool catches does not fail it (CON-09)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "dep", source: codeTool("dep", `(() => { throw new Error("nope") })()`) })
    await harness.createTool({
      entrypoint: "outer",
      source: codeTool("outer", `await harness.callTool("dep", {}).catch((error: Error) => "recovered from " + error.message)`)
    })
    expect(await harness.callTool("outer", {})).toBe("recovered from nope")
    expect(harness.profile().calls.slice(0, 2).map((call) => [call.tool_name, call.status])).toEqual([
      ["dep", "failed"],
      ["outer", "completed"]
    ])
  })

  it("only the outer result comes back; nested results stay in code (CON-10, CON-17)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "big", source: codeTool("big", `"x".repeat(10_000)`) })
    await harness.createTool({ entrypoint: "outer", source: codeTool("outer", `({ length: (await harness.callTool("big", {}) as string).length })`) })
    expect(await harness.callTool("outer", {})).toEqual({ length: 10_000 })
    expect(harness.profile("outer").calls[0]!.output_chars).toBe(JSON.stringify({ length: 10_000 }).length)
  })

  it("a dependency returns a native value, not JSON text (CON-08)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "dep", source: codeTool("dep", `({ list: [1, 2], nested: { ok: true } })`) })
    await harness.createTool({
      entrypoint: "outer",
      source: codeTool("outer", `await harness.callTool("dep", {}).then((v: any) => [typeof v, Array.isArray(v.list), v.nested.ok])`)
    })
    expect(await harness.callTool("outer", {})).toEqual(["object", true, true])
  })

  it("an unloaded dependency raises an explicit error naming it; the call is rejected (CON-19, UNL-03, EVT-10, ERR-27)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "dep", source: codeTool("dep", `"ok"`) })
    await harness.createTool({ entrypoint: "outer", source: codeTool("outer", `await harness.callTool("dep", {})`) })
    await harness.unloadTool("dep")
    expect(harness.listTools().find((entry) => entry.name === "outer")?.state).toBe("loaded")
    const events = recordEvents(harness)
    const error = await rejection(harness.callTool("outer", {}))
    expect(error).toMatchObject({ _tag: "ToolRejected", reason: "Unloaded", name: "dep" })
    expect(error.message).toContain("'dep'")
    const [rejected, outer] = harness.profile().calls
    expect(rejected).toMatchObject({ tool_name: "dep", status: "rejected", error_type: "ToolRejected", caller_tool_name: "outer", origin: "code" })
    expect(outer).toMatchObject({ tool_name: "outer", status: "failed", error_type: "ToolRejected" })
    const retained = harness.toolErrors("dep").errors
    expect(retained).toHaveLength(1)
    expect(retained[0]).toMatchObject({ status: "rejected", caller_tool_name: "outer", last_call_id: rejected!.call_id })
    expect(retained[0]!.message).toBe(error.message)
    const seen = await events.stop()
    expect(names(seen)).toEqual(["+outer", "-outer"])
    expect(seen[1]!.payload).toMatchObject({ success: false, error_type: "ToolRejected" })
  })

  it("the 33rd nested level is rejected by the default maxCallDepth of 32, with no event pair (CON-14, STS-05, EVT-10)", async () => {
    const harness = makeHarness()
    expect(harness.maxCallDepth).toBe(32)
    await harness.createTool({ entrypoint: "recurse", source: recurseSource })
    expect(await harness.callTool("recurse", { n: 31 })).toBe(32)

    const events = recordEvents(harness)
    const error = await rejection(harness.callTool("recurse", { n: 32 }))
    expect(error).toMatchObject({ _tag: "ToolRejected", reason: "DepthExceeded", name: "recurse" })
    const calls = harness.profile("recurse", { limit: 33 }).calls
    const deepest = calls[0]!
    expect(deepest).toMatchObject({ status: "rejected", error_type: "ToolRejected", caller_tool_name: "recurse" })
    expect(calls.slice(1).every((call) => call.status === "failed" && call.error_type === "ToolRejected")).toBe(true)
    expect(calls).toHaveLength(33)
    const seen = await events.stop()
    expect(seen.filter((event) => event.name === "jit_tool_started")).toHaveLength(32)
    expect(seen.filter((event) => event.name === "jit_tool_completed")).toHaveLength(32)
    expect(seen.some((event) => (event.payload as { tool_call_id?: string }).tool_call_id === deepest.call_id)).toBe(false)
    // The rejection propagates unchanged through the 32 levels above it, so the cache keeps one
    // entry (same tool, type and message; ERR-05) seen 33 times, last by the outermost call.
    const retained = harness.toolErrors("recurse").errors
    expect(retained).toHaveLength(1)
    expect(retained[0]).toMatchObject({ error_type: "ToolRejected", occurrences: 33, last_call_id: calls[32]!.call_id, caller_tool_name: null })
    expect(retained[0]!.message).toBe(error.message)
  })

  it("maxCallDepth is configurable (CON-14)", async () => {
    const harness = makeHarness({ maxCallDepth: 3 })
    await harness.createTool({ entrypoint: "recurse", source: recurseSource })
    expect(await harness.callTool("recurse", { n: 2 })).toBe(3)
    expect(await rejection(harness.callTool("recurse", { n: 3 }))).toMatchObject({ reason: "DepthExceeded" })
    const single = new JitHarness({ tools: [add], maxCallDepth: 1 })
    await single.createTool({ entrypoint: "recurse", source: recurseSource })
    expect(await single.callTool("recurse", { n: 0 })).toBe(1)
    expect(await rejection(single.callTool("recurse", { n: 1 }))).toMatchObject({ reason: "DepthExceeded" })
  })

  it("harness.callTool at module load is refused and leaves no record (MEAS-12, AMB-12)", async () => {
    const harness = makeHarness()
    const source = `
const early = await harness.callTool("add", { left: 1, right: 1 })
export const eager = tool({ description: "Calls at load.", guidelines: "Use in tests." }, async () => early)
`
    const error = await rejection(harness.createTool({ entrypoint: "eager", source }))
    expect(error).toMatchObject({ _tag: "PackageError", reason: "ActivationError", name: "eager" })
    expect(error.message).toContain("outside a tool invocation")
    expect(harness.profile("add").total_calls).toBe(0)
    expect(harness.listTools().map((entry) => entry.name)).toEqual(["add"])
  })

  it("interleaved compositions keep their own callers (AsyncLocalStorage per invocation)", async () => {
    const gate = deferred<void>()
    const wait = tool({ name: "wait", description: "Waits for the test.", guidelines: "Use in tests." }, () => gate.promise.then(() => "opened"))
    const harness = new JitHarness({ tools: [add, wait] })
    await harness.createTool({ entrypoint: "first", source: codeTool("first", `[await harness.callTool("wait"), await harness.callTool("add", { left: 1, right: 1 })]`) })
    await harness.createTool({ entrypoint: "second", source: codeTool("second", `await harness.callTool("add", { left: 2, right: 2 })`) })
    const pending = harness.callTool("first", {})
    await flush()
    expect(await harness.callTool("second", {})).toBe(4)
    gate.resolve()
    expect(await pending).toEqual(["opened", 2])
    const adds = harness.profile("add").calls.map((call) => [call.caller_tool_name, call.input_chars])
    expect(adds).toEqual([["first", 20], ["second", 20]])
  })
})

describe("cancellation (D-22, STS-04, ERR-15, MEAS-06, MEAS-10)", () => {
  const hangingHarness = () => {
    const started = deferred<AbortSignal | undefined>()
    const hang = tool({ name: "hang", description: "Never returns by itself.", guidelines: "Use in tests." }, (_args, context) => {
      started.resolve(context.signal)
      return new Promise(() => {})
    })
    return { harness: new JitHarness({ tools: [add, hang] }), started }
  }

  it("aborting the signal fires the handler's signal and records cancelled, not an error", async () => {
    const { harness, started } = hangingHarness()
    const controller = new AbortController()
    const pending = harness.callTool("hang", {}, { signal: controller.signal, callId: "c-9" })
    const signal = await started.promise
    expect(signal?.aborted).toBe(false)
    controller.abort()
    expect(signal?.aborted).toBe(true)
    expect(await rejection(pending)).toMatchObject({ _tag: "ToolCancelled", name: "hang", callId: "c-9" })
    expect(harness.profile("hang").calls[0]).toMatchObject({ call_id: "c-9", status: "cancelled", output_chars: null, error_type: "ToolCancelled" })
    expect(harness.profileStats("hang")).toMatchObject({ cancelled_count: 1, average_output_chars: null })
    expect(harness.toolErrors().retained_errors).toBe(0)
  })

  it("the signal reaches a nested dependency; both attempts are cancelled and the pair says so", async () => {
    const { harness, started } = hangingHarness()
    await harness.createTool({ entrypoint: "outer", source: codeTool("outer", `await harness.callTool("hang", {})`) })
    const events = recordEvents(harness)
    const controller = new AbortController()
    const pending = harness.callTool("outer", {}, { signal: controller.signal })
    const signal = await started.promise
    controller.abort(new Error("user stopped"))
    expect(signal?.aborted).toBe(true)
    expect(await rejection(pending)).toMatchObject({ _tag: "ToolCancelled", name: "outer" })
    expect(harness.profile().calls.slice(0, 2).map((call) => [call.tool_name, call.status, call.caller_tool_name])).toEqual([
      ["hang", "cancelled", "outer"],
      ["outer", "cancelled", null]
    ])
    expect(harness.toolErrors().retained_errors).toBe(0)
    const seen = await events.stop()
    expect(names(seen)).toEqual(["+outer", "-outer"])
    expect(seen[1]!.payload).toMatchObject({ success: false, error_type: "ToolCancelled" })
  })

  it("a code tool's own handler sees the abort", async () => {
    const harness = makeHarness()
    const source = codeTool(
      "listener",
      `await new Promise((resolve) => context.signal!.addEventListener("abort", () => resolve("saw " + String(context.signal!.reason))))`
    )
    await harness.createTool({ entrypoint: "listener", source })
    const controller = new AbortController()
    const pending = harness.callTool("listener", {}, { signal: controller.signal })
    await flush()
    controller.abort("stop")
    expect(await rejection(pending)).toMatchObject({ _tag: "ToolCancelled" })
    expect(harness.profile("listener").calls[0]!.status).toBe("cancelled")
  })
})
