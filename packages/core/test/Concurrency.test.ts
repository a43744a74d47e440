import { describe, expect, it } from "@effect/vitest"
import { JitHarness } from "../src/JitHarness.js"
import type { ProfileRecord } from "../src/JitHarnessProfile.js"
import type { JitToolEvent } from "../src/JitToolEvent.js"
import { codeTool, makeHarness, recordEvents, rejection, twiceSource, walkGuard } from "./fixtures.js"

const quadSource = `
export const quad = tool({
  description: "Four times a value, through twice.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }: { value: number }) => {
  const [a, b] = await Promise.all([harness.callTool("twice", { value }), harness.callTool("twice", { value })])
  return (a as number) + (b as number)
})
`

const payload = (event: JitToolEvent) => event.payload as { tool_call_id: string; tool_name: string; success?: boolean }

describe("concurrency", () => {
  it("1,000 concurrent calls through nested composition: every result, record and event pair accounted for (PRF-08, EVT-01, CON-18)", async () => {
    const harness = makeHarness({ callCapacity: 10_000 })
    await harness.createTool({ entrypoint: "twice", source: twiceSource })
    await harness.createTool({ entrypoint: "quad", source: quadSource })
    const events = recordEvents(harness, 20_000)
    const results = await Promise.all(Array.from({ length: 1_000 }, (_, i) => harness.callTool("quad", { value: i })))
    expect(results).toEqual(Array.from({ length: 1_000 }, (_, i) => 4 * i))

    const stats = Object.fromEntries(harness.profile().stats.map((s) => [s.tool_name, [s.call_count, s.completed_count]]))
    expect(stats).toEqual({ quad: [1_000, 1_000], twice: [2_000, 2_000], add: [2_000, 2_000] })
    const calls = harness.profile(undefined, { limit: 1_000 })
    expect(calls.total_calls).toBe(5_000)
    const records: Array<ProfileRecord> = []
    const step = walkGuard()
    for (let offset: number | null = 0; offset !== null; ) {
      step()
      const page = harness.profile(undefined, { offset, limit: 1_000 })
      records.push(...page.calls)
      offset = page.next_offset
    }
    expect(records).toHaveLength(5_000)
    expect(new Set(records.map((record) => record.call_id)).size).toBe(5_000)
    const callers = (name: string) => new Set(records.filter((record) => record.tool_name === name).map((record) => record.caller_tool_name))
    expect([...callers("add")]).toEqual(["twice"])
    expect([...callers("twice")]).toEqual(["quad"])
    expect([...callers("quad")]).toEqual([null])

    const seen = await events.stop()
    expect(seen).toHaveLength(6_000)
    const started = new Map<string, string>()
    const completed = new Map<string, number>()
    for (const event of seen) {
      const { tool_call_id, tool_name } = payload(event)
      if (event.name === "jit_tool_started") {
        expect(started.has(tool_call_id)).toBe(false)
        started.set(tool_call_id, tool_name)
      } else {
        expect(event.name).toBe("jit_tool_completed")
        expect(started.get(tool_call_id)).toBe(tool_name)
        expect(payload(event).success).toBe(true)
        completed.set(tool_call_id, (completed.get(tool_call_id) ?? 0) + 1)
      }
    }
    expect(started.size).toBe(3_000)
    expect([...completed.values()].every((count) => count === 1)).toBe(true)
    expect(completed.size).toBe(3_000)
    const jitRecordIds = records.filter((record) => record.tool_name !== "add").map((record) => record.call_id)
    expect(new Set(started.keys())).toEqual(new Set(jitRecordIds))
  })

  it("concurrent failures and successes are each counted once (PRF-06, ERR-06)", async () => {
    const harness = makeHarness({ callCapacity: 5_000 })
    await harness.createTool({ entrypoint: "twice", source: twiceSource })
    const outcomes = await Promise.allSettled(
      Array.from({ length: 600 }, (_, i) => harness.callTool("twice", { value: i % 3 === 0 ? "bad" : i }))
    )
    expect(outcomes.filter((outcome) => outcome.status === "rejected")).toHaveLength(200)
    expect(harness.profileStats("twice")).toMatchObject({ call_count: 600, completed_count: 400, failed_count: 200 })
    expect(harness.profileStats("add")).toMatchObject({ call_count: 400, completed_count: 400 })
    expect(harness.toolErrors("twice").errors).toEqual([expect.objectContaining({ error_type: "ValidationError", occurrences: 200 })])
  })

  it("calls racing an update all finish, each with one whole version (UNL-08)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "version", source: codeTool("version", `(await Promise.resolve(), "v1")`) })
    const before = Array.from({ length: 100 }, () => harness.callTool("version", {}))
    const update = harness.updateTool({ name: "version", source: codeTool("version", `(await Promise.resolve(), "v2")`) })
    const during = Array.from({ length: 100 }, () => harness.callTool("version", {}))
    await update
    const after = Array.from({ length: 100 }, () => harness.callTool("version", {}))
    expect(new Set(await Promise.all(before))).toEqual(new Set(["v1"]))
    expect((await Promise.all(during)).every((value) => value === "v1" || value === "v2")).toBe(true)
    expect(new Set(await Promise.all(after))).toEqual(new Set(["v2"]))
    expect(harness.profileStats("version")).toMatchObject({ call_count: 300, completed_count: 300 })
  })

  it("management changes run one at a time, in the order they were asked for (MGMT-15)", async () => {
    const harness = makeHarness()
    const create = harness.callTool("create_tool", { entrypoint: "subject", source: codeTool("subject", `"v1"`) })
    const update = harness.callTool("update_tool", { name: "subject", source: codeTool("subject", `"v2"`) })
    const unload = harness.callTool("unload_tool", { name: "subject" })
    const again = harness.callTool("create_tool", { entrypoint: "subject", source: codeTool("subject", `"v3"`) })
    expect(await create).toEqual({ name: "subject", status: "loaded" })
    expect(await update).toEqual({ name: "subject", status: "loaded" })
    expect(await unload).toEqual({ name: "subject", status: "unloaded" })
    expect(await rejection(again)).toMatchObject({ _tag: "NameConflict", reason: "Exists" })
    await harness.loadTool("subject")
    expect(await harness.callTool("subject")).toBe("v2")
  })

  it("a failed change does not block the changes queued behind it (MGMT-15)", async () => {
    const harness = new JitHarness()
    const broken = harness.createTool({ entrypoint: "a", source: "export const a = (" })
    const fine = harness.createTool({ entrypoint: "b", source: codeTool("b", `"b"`) })
    expect(await rejection(broken)).toMatchObject({ reason: "CompileError" })
    expect(await fine).toEqual({ name: "b", status: "loaded" })
  })
})
