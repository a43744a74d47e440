import { afterEach, describe, expect, it } from "@effect/vitest"
import { vi } from "vitest"
import { ErrorCache } from "../src/ErrorCache.js"
import { JitHarness } from "../src/JitHarness.js"
import * as ToolErrorReport from "../src/ToolErrorReport.js"
import { tool } from "../src/Tool.js"
import { add, codeTool, deferred, rejection } from "./fixtures.js"

const open = { type: "object" } as const

/** Throws `new Error(message)`, or whatever `kind` asks for. */
const thrower = (name: string) =>
  tool({ name, description: "Throws.", guidelines: "Use in tests.", parameters: open }, (args: any) => {
    switch (args.kind) {
      case "string":
        throw "plain string"
      case "object":
        throw { code: 7 }
      case "getter": {
        const error = new Error("hidden")
        Object.defineProperty(error, "message", {
          get() {
            throw new Error("cannot format")
          }
        })
        throw error
      }
      case "toString":
        throw {
          toString() {
            throw new Error("cannot format")
          }
        }
      case "type":
        throw new TypeError(args.message)
      default:
        throw new Error(args.message)
    }
  })

const fail = (harness: JitHarness, name: string, args: Record<string, unknown>, callId?: string) =>
  rejection(harness.callTool(name, args, { callId }))

const messages = (harness: JitHarness, name?: string) =>
  harness.toolErrors(name, { limit: 1000 }).errors.map((entry) => `${entry.tool_name}:${entry.message}#${entry.occurrences}`)

const harnessWith = (options: { errorCapacity?: number; errorMessageChars?: number } = {}) =>
  new JitHarness({ tools: [add, thrower("a"), thrower("b")], ...options })

describe("the error cache (ERR-01..27)", () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it("deduplicates by tool, error type and complete message; a repeat counts and moves to the front (ERR-05, ERR-06)", async () => {
    const harness = harnessWith()
    await fail(harness, "a", { message: "m1" })
    await fail(harness, "a", { message: "m2" })
    await fail(harness, "b", { message: "m1" })
    await fail(harness, "a", { kind: "type", message: "m1" })
    expect(messages(harness)).toEqual(["a:m1#1", "b:m1#1", "a:m2#1", "a:m1#1"])
    await fail(harness, "a", { message: "m1" }, "again")
    expect(messages(harness)).toEqual(["a:m1#2", "a:m1#1", "b:m1#1", "a:m2#1"])
    expect(harness.toolErrors("a").errors[0]).toMatchObject({ error_type: "Error", last_call_id: "again" })
    expect(harness.toolErrors("a").errors[1]).toMatchObject({ error_type: "TypeError" })
  })

  it("evicts the least recently occurring entry when full; capacity is global to the harness (ERR-04, ERR-07)", async () => {
    const harness = harnessWith({ errorCapacity: 3 })
    await fail(harness, "a", { message: "one" })
    await fail(harness, "b", { message: "two" })
    await fail(harness, "a", { message: "three" })
    await fail(harness, "a", { message: "one" })
    await fail(harness, "b", { message: "four" })
    expect(messages(harness)).toEqual(["b:four#1", "a:one#2", "a:three#1"])
    expect(harness.toolErrors()).toMatchObject({ capacity: 3, retained_errors: 3, total_matches: 3 })
  })

  it("reads never refresh recency and successes never clear entries (ERR-08, MGMT-24)", async () => {
    const harness = harnessWith({ errorCapacity: 2 })
    await fail(harness, "a", { message: "old" })
    await fail(harness, "b", { message: "new" })
    harness.toolErrors("a")
    await harness.callTool("inspect_tool_errors", { name: "a" })
    await harness.callTool("add", { left: 1, right: 1 })
    expect(messages(harness)).toEqual(["b:new#1", "a:old#1"])
    await fail(harness, "b", { message: "newest" })
    expect(messages(harness)).toEqual(["b:newest#1", "b:new#1"])
  })

  it("an evicted error that returns starts again at one; profiling keeps the lifetime count (ERR-13, ERR-14)", async () => {
    const harness = harnessWith({ errorCapacity: 1 })
    await fail(harness, "a", { message: "x" })
    await fail(harness, "a", { message: "x" })
    expect(messages(harness)).toEqual(["a:x#2"])
    await fail(harness, "b", { message: "y" })
    await fail(harness, "a", { message: "x" })
    expect(messages(harness)).toEqual(["a:x#1"])
    expect(harness.profileStats("a").failed_count).toBe(3)
  })

  it("keeps at most errorMessageChars code points and says so; messages sharing that prefix stay apart (ERR-10, ERR-11)", async () => {
    const harness = harnessWith({ errorMessageChars: 10 })
    await fail(harness, "a", { message: "😀".repeat(10) + " first" })
    await fail(harness, "a", { message: "😀".repeat(10) + " second" })
    await fail(harness, "a", { message: "😀".repeat(10) })
    const errors = harness.toolErrors("a").errors
    expect(errors.map((entry) => [entry.message, entry.message_truncated, entry.occurrences])).toEqual([
      ["😀".repeat(10), false, 1],
      ["😀".repeat(10), true, 1],
      ["😀".repeat(10), true, 1]
    ])
    await fail(harness, "a", { message: "😀".repeat(10) + " first" })
    expect(harness.toolErrors("a").errors[0]).toMatchObject({ occurrences: 2, message_truncated: true })
  })

  it.each([
    ["a thrown string", { kind: "string" }, "string"],
    ["a thrown plain object", { kind: "object" }, "Object"],
    ["an Error whose message getter throws", { kind: "getter" }, "Error"],
    ["an object whose toString throws", { kind: "toString" }, "Object"]
  ] as const)("keeps the type of %s with message null (ERR-12, X-14)", async (_, args, errorType) => {
    const harness = harnessWith()
    await fail(harness, "a", args)
    await fail(harness, "a", args)
    expect(harness.toolErrors("a").errors).toEqual([
      expect.objectContaining({ error_type: errorType, message: null, message_truncated: false, occurrences: 2, status: "failed" })
    ])
    expect(harness.profile("a").calls[0]).toMatchObject({ status: "failed", error_type: errorType, output_chars: null })
    expect(await harness.callTool("inspect_tool_errors", {})).toMatchObject({ errors: [{ message: null, occurrences: 2 }] })
  })

  it("records the latest occurrence's time (ISO UTC), call id and caller (ERR-09)", async () => {
    vi.useFakeTimers({ toFake: ["Date"] })
    vi.setSystemTime(new Date("2031-02-03T04:05:06.789+02:00"))
    const harness = harnessWith()
    await harness.createTool({ entrypoint: "outer", source: codeTool("outer", `await harness.callTool("a", { message: "deep" })`) })
    await fail(harness, "a", { message: "deep" }, "direct")
    expect(harness.toolErrors("a").errors[0]).toMatchObject({
      last_occurred_at: "2031-02-03T02:05:06.789Z",
      last_call_id: "direct",
      caller_tool_name: null
    })
    vi.setSystemTime(new Date("2031-02-03T05:00:00Z"))
    await fail(harness, "outer", {})
    const entry = harness.toolErrors("a").errors[0]!
    expect(entry).toMatchObject({ last_occurred_at: "2031-02-03T05:00:00.000Z", caller_tool_name: "outer", occurrences: 2 })
    expect(entry.last_call_id).toBe(harness.profile("a").calls[0]!.call_id)
    expect(entry.last_call_id).not.toBe("direct")
  })

  it("cancellations are profiled but never cached (ERR-15)", async () => {
    const gate = deferred<void>()
    const hang = tool({ name: "hang", description: "Hangs.", guidelines: "Use in tests." }, () => gate.promise)
    const harness = new JitHarness({ tools: [hang] })
    const controller = new AbortController()
    const pending = harness.callTool("hang", {}, { signal: controller.signal })
    controller.abort()
    await rejection(pending)
    expect(harness.profileStats("hang").cancelled_count).toBe(1)
    expect(harness.toolErrors().retained_errors).toBe(0)
  })

  it("rejected calls are cached with status rejected and their message (ERR-27, STS-07)", async () => {
    const harness = harnessWith()
    await harness.unloadTool("a")
    const error = await fail(harness, "a", { message: "never runs" })
    expect(harness.toolErrors("a").errors).toEqual([
      expect.objectContaining({ status: "rejected", error_type: "ToolRejected", message: error.message })
    ])
  })

  it("never stores arguments (ERR-24)", async () => {
    const harness = harnessWith()
    await fail(harness, "add", { left: "secret-argument", right: 1 })
    expect(ToolErrorReport.toJson(harness.toolErrors())).not.toContain("secret-argument")
  })

  it("tool_errors: newest first, filtered, limit 1–1,000 defaulting to 5 (ERR-21)", async () => {
    const harness = harnessWith()
    for (let i = 0; i < 7; i++) await fail(harness, "a", { message: `a${i}` })
    await fail(harness, "b", { message: "b0" })
    const all = harness.toolErrors()
    expect(all.errors.map((entry) => entry.message)).toEqual(["b0", "a6", "a5", "a4", "a3"])
    expect(all).toMatchObject({ capacity: 100, retained_errors: 8, total_matches: 8, offset: 0, next_offset: 5 })
    const filtered = harness.toolErrors("a", { offset: 5 })
    expect(filtered).toMatchObject({ retained_errors: 8, total_matches: 7, offset: 5, next_offset: null })
    expect(filtered.errors.map((entry) => entry.message)).toEqual(["a1", "a0"])
    for (const options of [{ limit: 0 }, { limit: 1_001 }, { offset: -1 }]) {
      expect(() => harness.toolErrors(undefined, options)).toThrowError(expect.objectContaining({ _tag: "InvalidToolRequest" }))
    }
    expect(harness.toolErrors(undefined, { limit: 1_000 }).errors).toHaveLength(8)
    expect(harness.toolErrors("a", { offset: 7 })).toMatchObject({ errors: [], next_offset: null })
    expect(() => harness.toolErrors("a", { offset: 8 })).toThrowError(
      expect.objectContaining({ _tag: "InvalidToolRequest", reason: "OffsetOutOfRange", name: "a", detail: "offset 8 is past the end (total_matches 7)" })
    )
  })

  it("ErrorCache on its own: capacity 1 keeps only the latest distinct error", () => {
    const cache = new ErrorCache(1, 5)
    cache.add({ toolName: "t", errorType: "E", status: "failed", message: "abcdefgh", callId: "1", callerToolName: null })
    cache.add({ toolName: "t", errorType: "E", status: "failed", message: null, callId: "2", callerToolName: "p" })
    expect(cache.size).toBe(1)
    expect(cache.records()).toEqual([expect.objectContaining({ message: null, last_call_id: "2", caller_tool_name: "p" })])
  })
})

describe("error report export (ERR-23, STS-06)", () => {
  it("round-trips through toJson / fromJsonSync without loss", async () => {
    const harness = harnessWith({ errorMessageChars: 8 })
    await fail(harness, "a", { message: "a long message with 😀" })
    await fail(harness, "a", { kind: "string" })
    await harness.unloadTool("b")
    await fail(harness, "b", {})
    const report = harness.toolErrors()
    expect(ToolErrorReport.fromJsonSync(ToolErrorReport.toJson(report))).toEqual(report)
  })

  it("a record with status completed or cancelled does not decode (STS-06)", async () => {
    const harness = harnessWith()
    await fail(harness, "a", { message: "x" })
    const json = JSON.parse(ToolErrorReport.toJson(harness.toolErrors()))
    for (const status of ["completed", "cancelled"]) {
      const copy = structuredClone(json)
      copy.errors[0].status = status
      expect(() => ToolErrorReport.fromJsonSync(JSON.stringify(copy))).toThrow()
      expect(() => ToolErrorReport.makeRecord({ ...json.errors[0], status })).toThrow()
    }
    expect(ToolErrorReport.makeRecord({ ...json.errors[0], status: "rejected" }).status).toBe("rejected")
    for (const mutate of [
      (r: any) => (r.errors[0].occurrences = 0),
      (r: any) => (r.errors[0].last_occurred_at = "yesterday"),
      (r: any) => (r.errors[0].last_occurred_at = "2031-02-03T04:05:06+02:00"),
      (r: any) => (r.capacity = 0)
    ]) {
      const copy = structuredClone(json)
      mutate(copy)
      expect(() => ToolErrorReport.fromJsonSync(JSON.stringify(copy))).toThrow()
    }
  })
})
