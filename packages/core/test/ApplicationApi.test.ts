import { describe, expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { JitHarness } from "../src/JitHarness.js"
import { tool } from "../src/Tool.js"
import { add, codeTool, makeHarness, makeHarnessWithUnbound, rejection, twiceSource, withTwice } from "./fixtures.js"

describe("the application API: complete and unbudgeted (APP-01..11)", () => {
  it("listTools returns the whole catalog with full descriptions (APP-01, APP-06)", async () => {
    const harness = makeHarness()
    const long = "A description longer than any preview. ".repeat(30)
    for (let i = 0; i < 30; i++) await harness.createTool({ kind: "text", name: `t${i}`, description: long, source: "x" })
    const catalog = harness.listTools()
    expect(catalog).toHaveLength(31)
    expect(catalog[1]).toEqual({ name: "t0", origin: "text", state: "loaded", description: long })
    expect(catalog.map((entry) => entry.name)).not.toContain("create_tool")
  })

  it("definition returns complete metadata and the complete schema (APP-02)", async () => {
    const properties = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`p${i}`, { type: "string", description: "x".repeat(100) }]))
    const wide = tool({ name: "wide", description: "W".repeat(900), guidelines: "G".repeat(900), parameters: { type: "object", properties } }, () => 1)
    const harness = new JitHarness({ tools: [wide] })
    expect(harness.definition("wide")).toEqual({
      name: "wide",
      origin: "base",
      state: "loaded",
      description: "W".repeat(900),
      guidelines: "G".repeat(900),
      parameters: { type: "object", properties },
      execution_mode: "parallel"
    })
    expect(await harness.callTool("inspect_tool", { name: "wide" })).toMatchObject({ parameters_omitted: true })
  })

  it("definition of a code tool names its language, entry point, version and files (APP-02, D-03)", async () => {
    const harness = await withTwice()
    expect(harness.definition("twice")).toEqual({
      name: "twice",
      origin: "code",
      state: "loaded",
      description: "Add the same integer twice.",
      guidelines: "Use to add an integer to itself.",
      parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] },
      execution_mode: "parallel",
      language: "typescript",
      entrypoint: "twice",
      version_id: expect.stringMatching(/^v_[0-9a-f]{20}$/),
      files: [{ path: "index.ts", chars: twiceSource.length }]
    })
  })

  it("version_id is the content hash docs/protocol.md derives: v_ and 20 hex digits of the SHA-256 of what the request declared (D-03)", async () => {
    const harness = await withTwice()
    const expected = (parts: ReadonlyArray<unknown>) => `v_${createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 20)}`
    // declared: what the request sent; the module's own description and guidelines are not part of it
    expect(harness.definition("twice").version_id).toBe(expected(["code", "typescript", "twice", [["index.ts", twiceSource]], null, null, null]))
    await harness.updateTool({ name: "twice", description: "Doubles." })
    expect(harness.definition("twice").version_id).toBe(expected(["code", "typescript", "twice", [["index.ts", twiceSource]], "Doubles.", null, null]))
    await harness.createTool({ kind: "text", name: "howto", source: "# Steps", description: "How to." })
    expect(harness.definition("howto").version_id).toBe(expected(["text", null, null, [["SKILL.md", "# Steps"]], "How to.", null, null]))
  })

  it("source returns the complete retained source; base tools have none (APP-03)", async () => {
    const harness = await withTwice()
    const big = `// ${"😀".repeat(50_000)}\nexport const pad = 1\n`
    await harness.updateTool({ name: "twice", files: { "pad.ts": big } })
    expect(harness.source("twice")).toEqual({
      name: "twice",
      kind: "code",
      language: "typescript",
      entrypoint: "twice",
      entry_file: "index.ts",
      files: { "index.ts": twiceSource, "pad.ts": big }
    })
    expect(() => harness.source("add")).toThrowError(expect.objectContaining({ _tag: "InvalidToolRequest", reason: "NoSource" }))
    expect(() => harness.source("nope")).toThrowError(expect.objectContaining({ _tag: "ToolNotFound" }))
    expect(() => harness.source("create_tool")).toThrowError(expect.objectContaining({ _tag: "NameConflict", reason: "Reserved" }))
  })

  it("inspectTool returns schema, guidelines and source together (APP-04)", async () => {
    const harness = await withTwice()
    const inspected = harness.inspectTool("twice")
    expect(inspected).toMatchObject({ guidelines: "Use to add an integer to itself.", parameters: { required: ["value"] } })
    expect(inspected.source).toMatchObject({ files: { "index.ts": twiceSource } })
    expect(harness.inspectTool("add")).toMatchObject({ origin: "base", source: null, parameters: { required: ["left", "right"] } })
  })

  it("profileStats returns aggregates and profile returns call records (APP-05, AMB-16)", async () => {
    const harness = await withTwice()
    await harness.callTool("twice", { value: 5 })
    expect(harness.profileStats("twice")).toMatchObject({ tool_name: "twice", call_count: 1, completed_count: 1 })
    const report = harness.profile("twice")
    expect(report.stats).toEqual([harness.profileStats("twice")])
    expect(report.calls).toHaveLength(1)
    expect(harness.profile().stats.map((stats) => stats.tool_name)).toEqual(["create_tool", "add", "twice"])
  })

  it("everything stays available when the inspection tier is hidden from the model (APP-07, EXP-06)", async () => {
    const harness = await withTwice({ inspectionTools: "hidden" })
    await harness.callTool("twice", { value: 1 })
    await rejection(harness.callTool("twice", { value: "x" }))
    expect(harness.profile().total_calls).toBe(4)
    expect(harness.profileStats("twice").call_count).toBe(2)
    expect(harness.toolErrors().total_matches).toBe(1)
    expect(harness.source("twice")).toMatchObject({ kind: "code" })
    expect(harness.inspectTool("twice").source).not.toBeNull()
  })

  it("the application creates tools and calls them directly (APP-08, TXT-02)", async () => {
    const harness = new JitHarness()
    expect(await harness.createTool({ kind: "text", name: "investigate", description: "Investigate.", source: "# Steps" })).toEqual({
      name: "investigate",
      status: "loaded"
    })
    const page = (await harness.callTool("investigate")) as { content: string }
    expect(page.content).toBe("# Steps")
    await harness.createTool({ entrypoint: "hello", source: codeTool("hello", `"hi"`), files: { "util.ts": "export const u = 1" } })
    expect(await harness.callTool("hello")).toBe("hi")
  })

  it("the constructor takes tools, manageBaseTools, callCapacity, errorCapacity and errorMessageChars (APP-10, APP-11)", async () => {
    const harness = new JitHarness({
      sessionId: "app",
      tools: [add],
      manageBaseTools: false,
      callCapacity: 7,
      maxCallDepth: 4,
      errorCapacity: 3,
      errorMessageChars: 9,
      inspectionTools: "always"
    })
    expect([harness.sessionId, harness.manageBaseTools, harness.maxCallDepth, harness.inspectionTools]).toEqual(["app", false, 4, "always"])
    expect(harness.profile().call_capacity).toBe(7)
    expect(harness.toolErrors().capacity).toBe(3)
    expect(harness.errors.messageChars).toBe(9)
  })

  it("modelTools lists what the model can call now: loaded, bound, no management tools", async () => {
    const harness = await makeHarnessWithUnbound(["ghost"])
    await harness.callTool("create_tool", { entrypoint: "twice", source: twiceSource })
    await harness.createTool({ kind: "text", name: "notes", description: "Notes.", source: "# n" })
    await harness.createTool({ entrypoint: "hidden", source: codeTool("hidden", `1`) })
    await harness.unloadTool("hidden")
    expect(harness.modelTools().map((entry) => [entry.name, entry.origin])).toEqual([
      ["add", "base"],
      ["twice", "code"],
      ["notes", "text"]
    ])
  })

  it("definition and inspectTool refuse management names and unknown names", () => {
    const harness = makeHarness()
    expect(() => harness.definition("list_tools")).toThrowError(expect.objectContaining({ _tag: "NameConflict" }))
    expect(() => harness.inspectTool("nope")).toThrowError(expect.objectContaining({ _tag: "ToolNotFound" }))
  })
})
