import { describe, expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { makeHarness, recordEvents, rejection, walkGuard } from "./fixtures.js"

const workflow = `# Investigate a failing test

1. Reproduce the smallest failing test with the available test runner.
2. Read the failing assertion and the relevant source, not the whole repository.
3. Compare the expected behavior with the observed inputs and result.
4. Verify the diagnosis by rerunning that test and related regression tests.

Record a confirmed cause, not a guess. Do not copy credentials into reports.
`
const hint = "Use when a test fails and the cause is not yet known."
const contentId = (text: string) => createHash("sha256").update(text, "utf8").digest("hex").slice(0, 16)

const withWorkflow = async () => {
  const harness = makeHarness()
  expect(await harness.callTool("create_tool", { kind: "text", name: "investigate_test_failure", description: hint, source: workflow }))
    .toEqual({ name: "investigate_test_failure", status: "loaded" })
  return harness
}

describe("text tools (TXT-*, D-13, D-14)", () => {
  it("calling a text tool without arguments returns a page with the whole body (TXT-02, TXT-04, D-14)", async () => {
    const harness = await withWorkflow()
    expect(await harness.callTool("investigate_test_failure")).toEqual({
      content: workflow,
      offset: 0,
      next_offset: null,
      total_chars: workflow.length,
      content_id: contentId(workflow)
    })
  })

  it("the reader defaults to offset 0 and max_chars 2,000 and accepts 1–4,000 (TXT-05, BUD-12, ZH-03)", async () => {
    const harness = makeHarness()
    const body = "😀".repeat(3_000) + "x".repeat(3_000)
    await harness.createTool({ kind: "text", name: "long", description: "Long.", source: body })
    const first = (await harness.callTool("long")) as { content: string; next_offset: number }
    expect(Array.from(first.content)).toHaveLength(2_000)
    expect(first.next_offset).toBe(2_000)
    const page = (await harness.callTool("long", { offset: 2_990, max_chars: 20 })) as { content: string; next_offset: number }
    expect(page).toMatchObject({ content: "😀".repeat(10) + "x".repeat(10), offset: 2_990, next_offset: 3_010, total_chars: 6_000 })
    expect(await harness.callTool("long", { offset: 5_999, max_chars: 4_000 })).toMatchObject({ content: "x", next_offset: null })
    expect(await harness.callTool("long", { offset: 6_000 })).toMatchObject({ content: "", next_offset: null })
    for (const args of [{ max_chars: 0 }, { max_chars: 4_001 }, { offset: -1 }, { offset: 1.5 }, { max_chars: "10" }]) {
      expect(await rejection(harness.callTool("long", args))).toMatchObject({ _tag: "ValidationError" })
    }
    expect(await rejection(harness.callTool("long", { offset: 6_001 }))).toMatchObject({ _tag: "InvalidToolRequest", reason: "OffsetOutOfRange" })
  })

  it("long bodies page exactly and reassemble with one content_id (TXT-08, BUD-13)", async () => {
    const harness = makeHarness()
    const body = Array.from({ length: 900 }, (_, i) => `${i}. "quoted" \\ tab\t é 𝔘\n`).join("")
    await harness.createTool({ kind: "text", name: "long", description: "Long.", source: body })
    let offset: number | null = 0
    let text = ""
    const ids = new Set<string>()
    const step = walkGuard()
    while (offset !== null) {
      step()
      const page = (await harness.callTool("long", { offset, max_chars: 4_000 })) as { content: string; next_offset: number | null; content_id: string }
      expect(JSON.stringify(page).length).toBeLessThanOrEqual(8_000)
      text += page.content
      ids.add(page.content_id)
      offset = page.next_offset
    }
    expect(text).toBe(body)
    expect([...ids]).toEqual([contentId(body)])
  })

  it("reading never executes the body (TXT-06)", async () => {
    const harness = makeHarness()
    const body = `export const x = tool({ description: "d", guidelines: "g" }, async () => 1)\n;(globalThis as any).__jitboxTextRan = true`
    await harness.createTool({ kind: "text", name: "looks_like_code", description: "Not code.", source: body })
    expect(await harness.callTool("looks_like_code")).toMatchObject({ content: body })
    expect((globalThis as Record<string, unknown>).__jitboxTextRan).toBeUndefined()
  })

  it("the model sees only the hint and the reader schema, never the body (TXT-07)", async () => {
    const harness = await withWorkflow()
    const definition = harness.modelTools().find((entry) => entry.name === "investigate_test_failure")!
    expect(definition).toMatchObject({ description: hint, origin: "text" })
    expect(definition.parameters).toEqual({
      type: "object",
      properties: { offset: { type: "integer", minimum: 0 }, max_chars: { type: "integer", minimum: 1, maximum: 4000 } }
    })
    expect(JSON.stringify(definition)).not.toContain("Reproduce the smallest")
  })

  it("creation needs a name and a description and takes no entry point or files (TXT-03)", async () => {
    const harness = makeHarness()
    const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
      [{ kind: "text", description: hint, source: workflow }, "MissingField"],
      [{ kind: "text", name: "t", source: workflow }, "MissingField"],
      [{ kind: "text", name: "t", description: "  ", source: workflow }, "MissingField"],
      [{ kind: "text", name: "t", description: hint, entrypoint: "t", source: workflow }, "FieldNotAllowed"],
      [{ kind: "text", name: "t", description: hint, files: { "a.md": "x" }, source: workflow }, "FieldNotAllowed"]
    ]
    for (const [request, reason] of cases) {
      expect(await rejection(harness.callTool("create_tool", request))).toMatchObject({ _tag: "InvalidToolRequest", reason })
    }
    expect(harness.listTools().map((entry) => entry.name)).toEqual(["add"])
  })

  it("a text tool holds at most 200,000 code points (D-08)", async () => {
    const harness = makeHarness()
    await harness.createTool({ kind: "text", name: "full", description: "Full.", source: "𝔘".repeat(200_000) })
    expect(await harness.callTool("full", { offset: 199_999 })).toMatchObject({ content: "𝔘", total_chars: 200_000 })
    expect(await rejection(harness.createTool({ kind: "text", name: "over", description: "Over.", source: "𝔘".repeat(200_001) })))
      .toMatchObject({ _tag: "PackageError", reason: "FileTooLarge" })
    expect(await rejection(harness.updateTool({ name: "full", markdown: "x".repeat(200_001) }))).toMatchObject({ reason: "FileTooLarge" })
    expect(await harness.callTool("full", { max_chars: 1 })).toMatchObject({ content: "𝔘" })
  })

  it("update replaces the markdown and keeps the description when omitted (TXT-09, D-13)", async () => {
    const harness = await withWorkflow()
    const version = harness.definition("investigate_test_failure").version_id
    expect(await harness.callTool("update_tool", { name: "investigate_test_failure", markdown: "# v2" })).toEqual({
      name: "investigate_test_failure",
      status: "loaded"
    })
    expect(await harness.callTool("investigate_test_failure")).toMatchObject({ content: "# v2" })
    expect(harness.definition("investigate_test_failure")).toMatchObject({ origin: "text", description: hint })
    expect(harness.definition("investigate_test_failure").version_id).not.toBe(version)
    await harness.callTool("update_tool", { name: "investigate_test_failure", source: "# v3", description: "New hint." })
    expect(await harness.callTool("investigate_test_failure")).toMatchObject({ content: "# v3" })
    expect(harness.definition("investigate_test_failure").description).toBe("New hint.")
    await harness.callTool("update_tool", { name: "investigate_test_failure", description: "Only the hint." })
    expect(await harness.callTool("investigate_test_failure")).toMatchObject({ content: "# v3" })
  })

  it("code fields or a kind change on a text update fail clearly and leave the tool as it was (D-13, TXT-09)", async () => {
    const harness = await withWorkflow()
    const before = harness.definition("investigate_test_failure")
    const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
      [{ files: { "a.ts": "x" } }, "FieldNotAllowed"],
      [{ entrypoint: "x", markdown: "# x" }, "FieldNotAllowed"],
      [{ remove: ["SKILL.md"] }, "FieldNotAllowed"],
      [{ kind: "code", source: "export const x = 1" }, "KindChange"],
      [{ markdown: "# a", source: "# b" }, "FieldNotAllowed"],
      [{ description: "" }, "MissingField"],
      [{}, "MissingField"]
    ]
    for (const [request, reason] of cases) {
      expect(await rejection(harness.callTool("update_tool", { name: "investigate_test_failure", ...request }))).toMatchObject({
        _tag: "InvalidToolRequest",
        reason
      })
    }
    expect(harness.definition("investigate_test_failure")).toEqual(before)
    expect(await harness.callTool("investigate_test_failure")).toMatchObject({ content: workflow })
  })

  it("unload hides the reader and keeps the content; load restores it (TXT-11)", async () => {
    const harness = await withWorkflow()
    expect(await harness.callTool("unload_tool", { name: "investigate_test_failure" })).toEqual({
      name: "investigate_test_failure",
      status: "unloaded"
    })
    expect(harness.modelTools().map((entry) => entry.name)).not.toContain("investigate_test_failure")
    expect(await rejection(harness.callTool("investigate_test_failure"))).toMatchObject({ _tag: "ToolRejected", reason: "Unloaded" })
    expect(harness.source("investigate_test_failure")).toEqual({ name: "investigate_test_failure", kind: "text", markdown: workflow })
    expect(await harness.callTool("update_tool", { name: "investigate_test_failure", markdown: workflow + "5. Done.\n" })).toEqual({
      name: "investigate_test_failure",
      status: "unloaded"
    })
    expect(await harness.callTool("load_tool", { name: "investigate_test_failure" })).toEqual({ name: "investigate_test_failure", status: "loaded" })
    expect(await harness.callTool("investigate_test_failure")).toMatchObject({ content: workflow + "5. Done.\n" })
  })

  it("read_tool_source reads a text tool's body; a path does not apply (TXT-10)", async () => {
    const harness = await withWorkflow()
    expect(await harness.callTool("read_tool_source", { name: "investigate_test_failure" })).toEqual({
      name: "investigate_test_failure",
      content: workflow,
      offset: 0,
      next_offset: null,
      total_chars: workflow.length,
      content_id: contentId(workflow)
    })
    expect(await harness.callTool("read_tool_source", { name: "investigate_test_failure", offset: 2, max_chars: 11 })).toMatchObject({
      content: "Investigate",
      next_offset: 13
    })
    expect(await rejection(harness.callTool("read_tool_source", { name: "investigate_test_failure", path: "SKILL.md" }))).toMatchObject({
      reason: "UnknownPath"
    })
  })

  it("a reader call is recorded and announced with origin text, measuring one page (TXT-14, TXT-15, ORG-04)", async () => {
    const harness = await withWorkflow()
    const events = recordEvents(harness)
    await harness.callTool("investigate_test_failure", { max_chars: 10 }, { callId: "read-1" })
    const record = harness.profile("investigate_test_failure").calls[0]!
    expect(record).toMatchObject({ call_id: "read-1", origin: "text", status: "completed", input_chars: JSON.stringify({ max_chars: 10 }).length })
    const page = { content: workflow.slice(0, 10), offset: 0, next_offset: 10, total_chars: workflow.length, content_id: contentId(workflow) }
    expect(record.output_chars).toBe(JSON.stringify(page).length)
    expect((await events.stop()).map((event) => [event.name, (event.payload as { origin?: string }).origin])).toEqual([
      ["jit_tool_started", "text"],
      ["jit_tool_completed", "text"]
    ])
  })

  it("inspect_tool describes a text tool by its hint and reader schema, without the body", async () => {
    const harness = await withWorkflow()
    const inspected = await harness.callTool("inspect_tool", { name: "investigate_test_failure" })
    expect(inspected).toMatchObject({ name: "investigate_test_failure", origin: "text", state: "loaded", description: hint })
    expect(JSON.stringify(inspected)).not.toContain("Reproduce the smallest")
  })
})
