import { describe, expect, it } from "@effect/vitest"
import { JitHarness } from "../src/JitHarness.js"
import * as JitHarnessProfile from "../src/JitHarnessProfile.js"
import { Profiler } from "../src/Profiler.js"
import { tool } from "../src/Tool.js"
import { add, codeTool, deferred, flush, makeHarness, rejection, withTwice } from "./fixtures.js"

const open = { type: "object" } as const
const echo = tool({ name: "echo", description: "Echo.", guidelines: "Use in tests.", parameters: open }, (args: any) => args.value)

const ids = (harness: JitHarness, name?: string) => harness.profile(name, { limit: 1000 }).calls.map((call) => call.call_id)

describe("the call window (PRF-08, PRF-10, PRF-15, AMB-13)", () => {
  it("keeps the newest callCapacity records and evicts the oldest first; aggregates keep counting (PRF-08, PRF-10)", async () => {
    const harness = makeHarness({ callCapacity: 3 })
    for (let i = 1; i <= 5; i++) await harness.callTool("add", { left: i, right: i }, { callId: `c${i}` })
    expect(ids(harness)).toEqual(["c5", "c4", "c3"])
    const report = harness.profile()
    expect(report).toMatchObject({ total_calls: 3, call_capacity: 3, next_offset: null })
    expect(harness.profileStats("add")).toMatchObject({ call_count: 5, completed_count: 5 })
    expect(harness.profileStats("add").average_input_chars).toBe(JSON.stringify({ left: 1, right: 1 }).length)
  })

  it("orders the window by dispatch, not by finish: a long call that ends last is the oldest (AMB-13)", async () => {
    const gate = deferred<string>()
    const wait = tool({ name: "wait", description: "Waits.", guidelines: "Use in tests." }, () => gate.promise)
    const harness = new JitHarness({ tools: [add, wait], callCapacity: 2 })
    const slow = harness.callTool("wait", {}, { callId: "slow" })
    await harness.callTool("add", { left: 1, right: 1 }, { callId: "fast1" })
    await harness.callTool("add", { left: 1, right: 1 }, { callId: "fast2" })
    expect(ids(harness)).toEqual(["fast2", "fast1"])
    gate.resolve("done")
    await slow
    expect(ids(harness)).toEqual(["fast2", "fast1"])
    expect(harness.profileStats("wait")).toMatchObject({ call_count: 1, completed_count: 1 })
  })

  it("an in-flight call has no record until it ends (PRF-14)", async () => {
    const gate = deferred<string>()
    const wait = tool({ name: "wait", description: "Waits.", guidelines: "Use in tests." }, () => gate.promise)
    const harness = new JitHarness({ tools: [wait] })
    const pending = harness.callTool("wait", {})
    await flush()
    expect(harness.profile("wait").total_calls).toBe(0)
    expect(harness.profileStats("wait").call_count).toBe(0)
    gate.resolve("done")
    await pending
    expect(harness.profile("wait").total_calls).toBe(1)
  })

  it("pages records with offset, limit (default 100) and next_offset; aggregates cover the whole lifetime (PRF-03, PRF-15)", async () => {
    const harness = makeHarness()
    for (let i = 0; i < 105; i++) await harness.callTool("add", { left: i, right: 0 }, { callId: `c${i}` })
    const first = harness.profile()
    expect(first.calls).toHaveLength(100)
    expect(first).toMatchObject({ offset: 0, next_offset: 100, total_calls: 105 })
    expect(first.calls[0]!.call_id).toBe("c104")
    const second = harness.profile("add", { offset: 100, limit: 10 })
    expect(second.calls.map((call) => call.call_id)).toEqual(["c4", "c3", "c2", "c1", "c0"])
    expect(second).toMatchObject({ offset: 100, next_offset: null })
    expect(second.stats).toEqual([harness.profileStats("add")])
    expect(second.stats[0]!.call_count).toBe(105)
    expect(harness.profile(undefined, { offset: 105 })).toMatchObject({ calls: [], next_offset: null, total_calls: 105 })
    // past the end: the same answer as the management tool inspect_tool_calls gives
    const past = { _tag: "InvalidToolRequest", reason: "OffsetOutOfRange" }
    expect(() => harness.profile(undefined, { offset: 200 })).toThrowError(expect.objectContaining({ ...past, detail: "offset 200 is past the end (total_calls 105)" }))
    expect(() => harness.profile("add", { offset: 106 })).toThrowError(expect.objectContaining({ ...past, name: "add" }))
    await expect(harness.callTool("inspect_tool_calls", { name: "add", offset: 200 })).rejects.toMatchObject(past)
  })

  it("profile limit is 1–1,000 and offsets are non-negative integers (D-16)", () => {
    const harness = makeHarness()
    for (const options of [{ limit: 0 }, { limit: 1_001 }, { limit: 1.5 }, { offset: -1 }, { offset: 0.5 }]) {
      expect(() => harness.profile(undefined, options)).toThrowError(expect.objectContaining({ _tag: "InvalidToolRequest", reason: "OutOfRange" }))
    }
    expect(harness.profile(undefined, { limit: 1 }).calls).toEqual([])
    expect(harness.profile(undefined, { limit: 1_000 }).calls).toEqual([])
  })

  it("Profiler.record keeps dispatch order even when records arrive out of order", () => {
    const profiler = new Profiler(3)
    const record = (seq: number) => ({
      seq,
      call_id: `c${seq}`,
      tool_name: "t",
      origin: "base" as const,
      status: "completed" as const,
      duration_ms: 1,
      input_chars: 2,
      output_chars: null,
      caller_tool_name: null,
      error_type: null
    })
    for (const seq of [2, 4, 1, 3, 6, 5]) profiler.record(record(seq))
    expect(profiler.records().map((r) => r.call_id)).toEqual(["c6", "c5", "c4"])
    expect(profiler.stats("t")).toMatchObject({ call_count: 6, average_output_chars: null, average_input_chars: 2 })
  })

  it("compacts a long-running window without losing order", () => {
    const profiler = new Profiler(10)
    for (let seq = 1; seq <= 5_000; seq++) {
      profiler.record({ seq, call_id: `c${seq}`, tool_name: "t", origin: "base", status: "completed", duration_ms: 0, input_chars: 0, output_chars: 0, caller_tool_name: null, error_type: null })
    }
    expect(profiler.records().map((r) => r.call_id)).toEqual(Array.from({ length: 10 }, (_, i) => `c${5_000 - i}`))
    expect(profiler.stats("t").call_count).toBe(5_000)
  })
})

describe("aggregates (PRF-04, PRF-06, PRF-07, MEAS-05)", () => {
  it("count every outcome and average duration and measured sizes (PRF-04, PRF-06, STS-01)", async () => {
    const gate = deferred<string>()
    const hang = tool({ name: "hang", description: "Hangs.", guidelines: "Use in tests." }, () => gate.promise)
    const harness = new JitHarness({ tools: [add, hang] })
    await harness.callTool("add", { left: 1, right: 2 })
    await harness.callTool("add", { left: 10, right: 20 })
    await rejection(harness.callTool("add", { left: "x" }))
    await harness.unloadTool("add")
    await rejection(harness.callTool("add", { left: 1, right: 2 }))
    const controller = new AbortController()
    const pending = harness.callTool("hang", {}, { signal: controller.signal })
    controller.abort()
    await rejection(pending)
    const stats = harness.profileStats("add")
    const calls = harness.profile("add").calls
    expect(stats).toMatchObject({ tool_name: "add", origin: "base", call_count: 4, completed_count: 2, failed_count: 1, cancelled_count: 0, rejected_count: 1 })
    expect(stats.average_duration_ms).toBeCloseTo(calls.reduce((sum, call) => sum + call.duration_ms, 0) / 4, 9)
    const inputs = calls.map((call) => call.input_chars!)
    expect(stats.average_input_chars).toBe(inputs.reduce((a, b) => a + b, 0) / 4)
    const outputs = calls.map((call) => call.output_chars!)
    expect(stats.average_output_chars).toBe(outputs.reduce((a, b) => a + b, 0) / 4)
    expect(harness.profileStats("hang")).toMatchObject({ cancelled_count: 1, call_count: 1, average_output_chars: null })
    expect(harness.profileStats("hang").average_input_chars).toBe(2)
  })

  it("averages are null over zero samples and skip unmeasured ones (MEAS-05)", async () => {
    const harness = new JitHarness({ tools: [echo] })
    expect(harness.profileStats("echo")).toEqual({
      tool_name: "echo",
      origin: "base",
      call_count: 0,
      completed_count: 0,
      failed_count: 0,
      cancelled_count: 0,
      rejected_count: 0,
      average_duration_ms: null,
      average_input_chars: null,
      average_output_chars: null
    })
    await harness.callTool("echo", { value: undefined, big: 1n })
    expect(harness.profileStats("echo")).toMatchObject({ call_count: 1, average_input_chars: null, average_output_chars: null })
    expect(harness.profileStats("echo").average_duration_ms).not.toBeNull()
    await harness.callTool("echo", { value: "abcd" })
    expect(harness.profileStats("echo")).toMatchObject({
      call_count: 2,
      average_input_chars: JSON.stringify({ value: "abcd" }).length,
      average_output_chars: 4
    })
  })

  it("unknown names report origin unknown and empty aggregates (ORG-06)", () => {
    expect(makeHarness().profileStats("never")).toMatchObject({ tool_name: "never", origin: "unknown", call_count: 0, average_duration_ms: null })
  })

  it("records carry the origin of the registry that served them (KIND-03, ORG-01..05, ORG-08)", async () => {
    const harness = await withTwice()
    await harness.createTool({ kind: "text", name: "notes", description: "Notes.", source: "# Notes" })
    await harness.callTool("twice", { value: 1 })
    await harness.callTool("notes")
    await harness.callTool("list_tools", {})
    const origins = Object.fromEntries(harness.profile().stats.map((stats) => [stats.tool_name, stats.origin]))
    expect(origins).toEqual({ create_tool: "management", twice: "code", add: "base", notes: "text", list_tools: "management" })
    expect(harness.profile().calls.every((call) => typeof call.origin === "string")).toBe(true)
  })

  it("records hold sizes, never contents or messages (PRF-09)", async () => {
    const secretThrower = tool({ name: "secret", description: "Leaks.", guidelines: "Use in tests.", parameters: open }, (args: any) => {
      throw new Error(`bad token ${args.token}`)
    })
    const harness = new JitHarness({ tools: [echo, secretThrower] })
    await harness.callTool("echo", { value: "hunter2-result" })
    await rejection(harness.callTool("secret", { token: "hunter2-argument" }))
    const exported = JitHarnessProfile.toJson(harness.profile())
    expect(exported).not.toContain("hunter2")
  })

  it("profiles of different harnesses are isolated (PRF-12)", async () => {
    const first = makeHarness({ sessionId: "a" })
    const second = makeHarness({ sessionId: "b" })
    await first.callTool("add", { left: 1, right: 1 })
    expect(second.profile().total_calls).toBe(0)
    expect(second.profileStats("add").call_count).toBe(0)
  })

  it("nested work is counted in the parent too (MEAS-09)", async () => {
    const harness = await withTwice()
    await harness.callTool("twice", { value: 3 })
    const [child, parent] = harness.profile().calls
    expect(child!.tool_name).toBe("add")
    expect(parent!.duration_ms).toBeGreaterThanOrEqual(child!.duration_ms)
  })
})

describe("profile export (PRF-16, PRF-17, STS-06)", () => {
  it("round-trips through toJson / fromJsonSync without loss", async () => {
    const harness = await withTwice()
    await harness.callTool("twice", { value: 21 })
    await rejection(harness.callTool("twice", { value: "x" }))
    await harness.unloadTool("twice")
    await rejection(harness.callTool("twice", { value: 1 }))
    const report = harness.profile()
    const restored = JitHarnessProfile.fromJsonSync(JitHarnessProfile.toJson(report))
    expect(restored).toEqual(report)
    expect(JitHarnessProfile.toJson(restored)).toBe(JitHarnessProfile.toJson(report))
    expect(JSON.parse(JitHarnessProfile.toJson(report)).calls[0].origin).toBe("code")
  })

  it("validates on import and never touches a harness (PRF-17)", async () => {
    const harness = await withTwice()
    await harness.callTool("twice", { value: 1 })
    const json = JSON.parse(JitHarnessProfile.toJson(harness.profile()))
    const broken = (mutate: (value: any) => void) => {
      const copy = structuredClone(json)
      mutate(copy)
      return JSON.stringify(copy)
    }
    for (const bad of [
      broken((r) => (r.calls[0].status = "exploded")),
      broken((r) => (r.calls[0].origin = "python")),
      broken((r) => (r.calls[0].input_chars = -1)),
      broken((r) => (r.stats[0].call_count = 1.5)),
      broken((r) => (r.call_capacity = 0)),
      broken((r) => delete r.calls[0].call_id),
      "not json"
    ]) {
      expect(() => JitHarnessProfile.fromJsonSync(bad)).toThrow()
    }
    const fresh = makeHarness()
    JitHarnessProfile.fromJsonSync(JSON.stringify(json))
    expect(fresh.profile().total_calls).toBe(0)
  })
})

describe("configuration (D-16, ERR-03, AMB-14)", () => {
  const options = ["callCapacity", "maxCallDepth", "errorCapacity", "errorMessageChars"] as const

  it.each(options)("%s must be a positive integer, checked at construction", (option) => {
    for (const value of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "5" as never]) {
      expect(() => new JitHarness({ [option]: value })).toThrowError(expect.objectContaining({ _tag: "ConfigError", option }))
    }
    expect(() => new JitHarness({ [option]: 1 })).not.toThrow()
  })

  it("has the reference's defaults (PRF-08, ERR-02, CON-14)", () => {
    const harness = new JitHarness()
    expect(harness.profile().call_capacity).toBe(2_000)
    expect(harness.maxCallDepth).toBe(32)
    expect(harness.errors.capacity).toBe(100)
    expect(harness.errors.messageChars).toBe(4_000)
    expect(harness.manageBaseTools).toBe(true)
    expect(harness.inspectionTools).toBe("deferred")
  })

  it("rejects an unknown exposure or execution mode", () => {
    expect(() => new JitHarness({ inspectionTools: "sometimes" as never })).toThrowError(expect.objectContaining({ option: "inspectionTools" }))
    expect(() => new JitHarness({ codeExecution: "remote" as never })).toThrowError(expect.objectContaining({ option: "codeExecution" }))
  })

  it("a sandboxed harness without runners is refused at construction (D-01, D-02)", () => {
    expect(() => new JitHarness({ codeExecution: "sandboxed" })).toThrow(expect.objectContaining({ _tag: "ConfigError", option: "codeExecution" }))
  })

  it("a harness without a runner for a language cannot create its code tools, text tools still work (D-01, D-02)", async () => {
    const harness = new JitHarness()
    expect(await rejection(harness.createTool({ language: "python", entrypoint: "x", source: "x = 1" }))).toMatchObject({ _tag: "PackageError", reason: "NoRunner" })
    await harness.createTool({ kind: "text", name: "notes", description: "Notes.", source: "# ok" })
    expect(await harness.callTool("notes")).toMatchObject({ content: "# ok" })
  })
})
