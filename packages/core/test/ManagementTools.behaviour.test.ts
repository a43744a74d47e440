import { describe, expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { JitHarness } from "../src/JitHarness.js"
import { tool } from "../src/Tool.js"
import { add, codeTool, makeHarness, points, recordEvents, rejection, twiceSource, withTwice, walkGuard } from "./fixtures.js"

const size = (value: unknown) => points(JSON.stringify(value))
const contentId = (text: string) => createHash("sha256").update(text, "utf8").digest("hex").slice(0, 16)

const schemaWith = (descriptionChars: number) => ({
  type: "object",
  properties: { p: { type: "string", description: "d".repeat(descriptionChars) } }
})

const baseWithSchema = (parameters: Record<string, unknown>, description = "A tool with a schema.") =>
  tool({ name: "wide", description, guidelines: "Use in tests.", parameters }, () => "ok")

const failing = tool(
  { name: "explode", description: "Throws what it is told.", guidelines: "Use in tests.", parameters: { type: "object" } },
  (args: any) => {
    throw new Error(args.message)
  }
)

describe("state-changing tools acknowledge only name and status (MGMT-17, MGMT-18, D-07)", () => {
  it("create, update, unload and load answer {name, status}", async () => {
    const harness = makeHarness()
    const acks = [
      await harness.callTool("create_tool", { entrypoint: "twice", source: twiceSource }),
      await harness.callTool("update_tool", { name: "twice", source: twiceSource.replace("twice.", "twice, again.") }),
      await harness.callTool("unload_tool", { name: "twice" }),
      await harness.callTool("update_tool", { name: "twice", source: twiceSource }),
      await harness.callTool("load_tool", { name: "twice" }),
      await harness.callTool("create_tool", { kind: "text", name: "notes", description: "Notes.", source: "# Notes" })
    ]
    expect(acks).toEqual([
      { name: "twice", status: "loaded" },
      { name: "twice", status: "loaded" },
      { name: "twice", status: "unloaded" },
      { name: "twice", status: "unloaded" },
      { name: "twice", status: "loaded" },
      { name: "notes", status: "loaded" }
    ])
  })
})

describe("list_tools (MGMT-06, MGMT-20, MGMT-26, BUD-06, D-09)", () => {
  it("lists base, code and text tools with origin, state and a description preview; never management tools (ORG-07, D-09)", async () => {
    const harness = await withTwice()
    await harness.createTool({ kind: "text", name: "notes", description: "Notes.", source: "# Notes" })
    await harness.unloadTool("notes")
    expect(await harness.callTool("list_tools", {})).toEqual({
      tools: [
        { name: "add", origin: "base", state: "loaded", description: "Add two integers." },
        { name: "twice", origin: "code", state: "loaded", description: "Add the same integer twice." },
        { name: "notes", origin: "text", state: "unloaded", description: "Notes." }
      ],
      total: 3,
      next_offset: null
    })
  })

  it("previews descriptions to 200 code points (BUD-06, D-04)", async () => {
    const harness = new JitHarness({ tools: [baseWithSchema({ type: "object" }, "😀".repeat(150) + "é".repeat(100))] })
    const listed = (await harness.callTool("list_tools", {})) as { tools: Array<{ description: string }> }
    const preview = listed.tools[0]!.description
    expect(points(preview)).toBe(200)
    expect(preview).toBe("😀".repeat(150) + "é".repeat(50))
    expect(harness.listTools()[0]!.description).toBe("😀".repeat(150) + "é".repeat(100))
  })

  it("pages 20 tools by default and follows offset and limit (BUD-12, MGMT-06)", async () => {
    const harness = makeHarness()
    for (let i = 0; i < 25; i++) await harness.createTool({ kind: "text", name: `t${i}`, description: `Tool ${i}.`, source: "x" })
    const first = (await harness.callTool("list_tools", {})) as { tools: Array<{ name: string }>; total: number; next_offset: number | null }
    expect(first.tools).toHaveLength(20)
    expect(first).toMatchObject({ total: 26, next_offset: 20 })
    const rest = (await harness.callTool("list_tools", { offset: 20, limit: 100 })) as { tools: Array<{ name: string }>; next_offset: number | null }
    expect(rest.tools.map((entry) => entry.name)).toEqual(["t19", "t20", "t21", "t22", "t23", "t24"])
    expect(rest.next_offset).toBeNull()
    expect(await harness.callTool("list_tools", { offset: 26 })).toMatchObject({ tools: [], next_offset: null })
  })

  it("shortens a page to the 8,000 budget; next_offset walks the whole catalog once (BUD-01, BUD-05)", async () => {
    const harness = makeHarness()
    for (let i = 0; i < 100; i++) {
      await harness.createTool({ kind: "text", name: `tool_${i}`, description: `"${i}"`.padEnd(300, "\\"), source: "x" })
    }
    const seen: Array<string> = []
    let offset: number | null = 0
    let pages = 0
    const step = walkGuard()
    while (offset !== null) {
      step()
      const page = (await harness.callTool("list_tools", { offset, limit: 100 })) as { tools: Array<{ name: string }>; next_offset: number | null }
      expect(size(page)).toBeLessThanOrEqual(8_000)
      expect(page.tools.length).toBeLessThan(100)
      seen.push(...page.tools.map((entry) => entry.name))
      offset = page.next_offset
      pages++
    }
    expect(pages).toBeGreaterThan(2)
    expect(seen).toEqual(harness.listTools().map((entry) => entry.name))
  })

  it("answers the same in every exposure mode (BUD-14, EXP-08)", async () => {
    const answers = []
    for (const inspectionTools of ["always", "deferred", "hidden"] as const) {
      const harness = await withTwice({ inspectionTools })
      answers.push(await harness.callTool("list_tools", { limit: 1 }), await harness.callTool("inspect_tool", { name: "twice" }))
    }
    expect(answers.slice(2)).toEqual([...answers.slice(0, 2), ...answers.slice(0, 2)])
  })
})

describe("inspect_tool (MGMT-07, MGMT-20, BUD-07, BUD-10, D-15)", () => {
  it("returns the definition and file sizes, never source, profiling or history", async () => {
    const harness = await withTwice()
    await harness.callTool("twice", { value: 1 })
    const inspected = (await harness.callTool("inspect_tool", { name: "twice" })) as Record<string, unknown>
    expect(inspected).toEqual({
      name: "twice",
      origin: "code",
      state: "loaded",
      description: "Add the same integer twice.",
      guidelines: "Use to add an integer to itself.",
      language: "typescript",
      entrypoint: "twice",
      execution_mode: "parallel",
      files: [{ path: "index.ts", chars: twiceSource.length }],
      parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
    })
    expect(JSON.stringify(inspected)).not.toContain("harness.callTool")
  })

  it("previews the description to 500 code points (BUD-07)", async () => {
    const harness = new JitHarness({ tools: [baseWithSchema({ type: "object" }, "𝔘".repeat(499) + "é\u0301" + "z".repeat(100))] })
    const inspected = (await harness.callTool("inspect_tool", { name: "wide" })) as { description: string }
    expect(inspected.description).toBe("𝔘".repeat(499) + "é")
    expect(harness.definition("wide").description).toHaveLength(499 * 2 + 2 + 100)
  })

  it("omits parameters exactly when including them would pass 8,000 code points (D-15, BUD-10)", async () => {
    const probe = (chars: number) => new JitHarness({ tools: [baseWithSchema(schemaWith(chars))] }).callTool("inspect_tool", { name: "wide" })
    const baseline = size(await probe(0))
    const fitting = (await probe(8_000 - baseline)) as Record<string, unknown>
    expect(size(fitting)).toBe(8_000)
    expect(fitting.parameters).toEqual(schemaWith(8_000 - baseline))
    expect(fitting).not.toHaveProperty("parameters_omitted")

    const over = (await probe(8_001 - baseline)) as Record<string, unknown>
    expect(over).not.toHaveProperty("parameters")
    expect(over).toMatchObject({ parameters_omitted: true, parameters_chars: size(schemaWith(8_001 - baseline)) })
    expect(size(over)).toBeLessThanOrEqual(8_000)
  })

  it("shortens escape-heavy previews so that the definition still fits (BUD-01, BUD-07)", async () => {
    const harness = makeHarness()
    const control = "\u0001".repeat(600)
    const source = `export const noisy = tool({ description: ${JSON.stringify("d" + control)}, guidelines: ${JSON.stringify("g" + control)} }, async () => 1)`
    const files = Object.fromEntries(Array.from({ length: 31 }, (_, i) => [`helpers/${"h".repeat(50)}_${i}.ts`, "export {}"]))
    await harness.createTool({ entrypoint: "noisy", source, files })
    const inspected = (await harness.callTool("inspect_tool", { name: "noisy" })) as { description: string; guidelines: string; files: unknown[] }
    expect(size(inspected)).toBeLessThanOrEqual(8_000)
    expect(inspected.files).toHaveLength(32)
    expect(("d" + control).startsWith(inspected.description)).toBe(true)
    expect(("g" + control).startsWith(inspected.guidelines)).toBe(true)
    expect(points(inspected.description) + points(inspected.guidelines)).toBeGreaterThan(700)
  })

  it("rejects management names and unknown names", async () => {
    const harness = makeHarness()
    expect(await rejection(harness.callTool("inspect_tool", { name: "create_tool" }))).toMatchObject({ _tag: "NameConflict", reason: "Reserved" })
    expect(await rejection(harness.callTool("inspect_tool", { name: "nope" }))).toMatchObject({ _tag: "ToolNotFound" })
  })
})

describe("read_tool_schema (MGMT-09, BUD-08, BUD-09, BUD-11, D-06)", () => {
  it("pages an oversized schema into exact fragments that concatenate to valid JSON", async () => {
    const parameters = {
      type: "object",
      properties: Object.fromEntries(
        Array.from({ length: 20 }, (_, i) => [`field_${i}`, { type: "string", description: `${'"'.repeat(i % 2 === 0 ? 3000 : 10)} \\ ${"😀".repeat(i)} ${"long ".repeat(40)}` }])
      )
    }
    const harness = new JitHarness({ tools: [baseWithSchema(parameters)] })
    expect(await harness.callTool("inspect_tool", { name: "wide" })).toMatchObject({ parameters_omitted: true })
    const compact = JSON.stringify(harness.definition("wide").parameters)
    let offset: number | null = 0
    let text = ""
    let shortened = 0
    const step = walkGuard()
    while (offset !== null) {
      step()
      const page = (await harness.callTool("read_tool_schema", { name: "wide", offset, max_chars: 4_000 })) as {
        content: string
        next_offset: number | null
        content_id: string
        total_chars: number
      }
      expect(size(page)).toBeLessThanOrEqual(8_000)
      expect(page.content_id).toBe(contentId(compact))
      expect(page.total_chars).toBe(points(compact))
      text += page.content
      if (page.next_offset !== null && points(page.content) < 4_000) shortened++
      offset = page.next_offset
    }
    // Quotes escape twice (once in the schema's JSON, again in the page's), so there the budget,
    // not max_chars, decides where a page ends (BUD-05).
    expect(shortened).toBeGreaterThan(0)
    expect(text).toBe(compact)
    expect(JSON.parse(text)).toEqual(harness.definition("wide").parameters)
  })

  it("defaults to 2,000 code points from offset 0 (BUD-12)", async () => {
    const harness = new JitHarness({ tools: [baseWithSchema(schemaWith(5_000))] })
    const page = (await harness.callTool("read_tool_schema", { name: "wide" })) as { content: string; offset: number; next_offset: number }
    expect([points(page.content), page.offset, page.next_offset]).toEqual([2_000, 0, 2_000])
  })
})

describe("read_tool_source (MGMT-08, MGMT-21, BUD-12)", () => {
  it("pages the entry module by default, 2,000 code points from 0", async () => {
    const harness = makeHarness()
    const source = codeTool("long", `"ok"`, `// ${"😀".repeat(3_000)}`)
    await harness.createTool({ entrypoint: "long", source })
    const page = (await harness.callTool("read_tool_source", { name: "long" })) as Record<string, unknown>
    expect(page).toMatchObject({ name: "long", path: "index.ts", offset: 0, next_offset: 2_000, total_chars: points(source) })
    expect(page.content).toBe(Array.from(source).slice(0, 2_000).join(""))
  })

  it("rejects base tools, management names and unknown names", async () => {
    const harness = makeHarness()
    expect(await rejection(harness.callTool("read_tool_source", { name: "add" }))).toMatchObject({ reason: "NoSource" })
    expect(await rejection(harness.callTool("read_tool_source", { name: "list_tools" }))).toMatchObject({ reason: "Reserved" })
    expect(await rejection(harness.callTool("read_tool_source", { name: "nope" }))).toMatchObject({ _tag: "ToolNotFound" })
  })
})

describe("inspect_tool_stats and inspect_tool_calls (MGMT-10, MGMT-11, MGMT-19, MGMT-22)", () => {
  it("inspect_tool_stats answers only the tool's lifetime aggregates (PRF-02)", async () => {
    const harness = await withTwice()
    await harness.callTool("twice", { value: 1 })
    await rejection(harness.callTool("twice", { value: "x" }))
    expect(await harness.callTool("inspect_tool_stats", { name: "twice" })).toEqual(harness.profileStats("twice"))
    expect(await harness.callTool("inspect_tool_stats", { name: "twice" })).toMatchObject({
      tool_name: "twice",
      origin: "code",
      call_count: 2,
      completed_count: 1,
      failed_count: 1
    })
  })

  it("management calls are profiled and can be queried by name (MGMT-19)", async () => {
    const harness = await withTwice()
    await harness.callTool("list_tools", {})
    expect(await harness.callTool("inspect_tool_stats", { name: "create_tool" })).toMatchObject({
      tool_name: "create_tool",
      origin: "management",
      call_count: 1,
      completed_count: 1
    })
    const calls = (await harness.callTool("inspect_tool_calls", { name: "list_tools" })) as { calls: Array<unknown>; total_calls: number }
    expect(calls.total_calls).toBe(1)
    expect(harness.profile("inspect_tool_stats").calls[0]).toMatchObject({ origin: "management", status: "completed" })
  })

  it("inspect_tool_calls: 5 newest by default, without tool name or null fields; caller and error type only when they apply", async () => {
    const harness = await withTwice()
    for (let value = 0; value < 6; value++) await harness.callTool("twice", { value })
    await rejection(harness.callTool("add", { left: "x", right: 1 }))
    const answer = (await harness.callTool("inspect_tool_calls", { name: "add" })) as {
      calls: Array<Record<string, unknown>>
      total_calls: number
      next_offset: number | null
    }
    expect(answer.calls).toHaveLength(5)
    expect(answer.total_calls).toBe(7)
    expect(answer.next_offset).toBe(5)
    expect(Object.keys(answer).sort()).toEqual(["calls", "next_offset", "total_calls"])
    const [failed, nested] = answer.calls
    expect(Object.keys(failed!).sort()).toEqual(["call_id", "duration_ms", "error_type", "input_chars", "output_chars", "status"])
    expect(failed).toMatchObject({ status: "failed", error_type: "ValidationError" })
    expect(Object.keys(nested!).sort()).toEqual(["call_id", "caller_tool_name", "duration_ms", "input_chars", "output_chars", "status"])
    expect(nested).toMatchObject({ status: "completed", caller_tool_name: "twice", input_chars: 20, output_chars: 2 })
    const last = (await harness.callTool("inspect_tool_calls", { name: "add", offset: 5, limit: 100 })) as { calls: Array<unknown>; next_offset: null }
    expect(last.calls).toHaveLength(2)
    expect(last.next_offset).toBeNull()
  })

  it("inspect_tool_calls leaves out measurements that are null", async () => {
    const echo = tool({ name: "echo", description: "Echo.", guidelines: "Use in tests.", parameters: { type: "object" } }, () => undefined)
    const harness = new JitHarness({ tools: [echo] })
    await harness.callTool("echo", { big: 1n })
    const answer = (await harness.callTool("inspect_tool_calls", { name: "echo" })) as { calls: Array<Record<string, unknown>> }
    expect(Object.keys(answer.calls[0]!).sort()).toEqual(["call_id", "duration_ms", "status"])
  })
})

describe("inspect_tool_errors (MGMT-12, MGMT-23, MGMT-24, ERR-18, ERR-19)", () => {
  const withErrors = async (options: { errorMessageChars?: number } = {}) => {
    const harness = new JitHarness({ tools: [add, failing], ...options })
    for (let i = 0; i < 5; i++) await rejection(harness.callTool("explode", { message: `failure ${i} ${"é".repeat(600)}` }))
    await rejection(harness.callTool("add", { left: "x", right: 1 }))
    return harness
  }

  it("answers 3 errors with 512-code-point previews by default, flagged message_truncated", async () => {
    const harness = await withErrors()
    const answer = (await harness.callTool("inspect_tool_errors", {})) as {
      errors: Array<Record<string, unknown>>
      total_matches: number
      next_offset: number | null
    }
    expect(Object.keys(answer).sort()).toEqual(["errors", "next_offset", "total_matches"])
    expect(answer).toMatchObject({ total_matches: 6, next_offset: 3 })
    expect(answer.errors).toHaveLength(3)
    const [validation, latest] = answer.errors
    expect(validation).toEqual({
      tool_name: "add",
      error_type: "ValidationError",
      message: "invalid arguments for 'add': /left must be integer",
      occurrences: 1,
      last_call_id: harness.profile("add").calls[0]!.call_id
    })
    expect(Object.keys(latest!).sort()).toEqual(["error_type", "last_call_id", "message", "message_truncated", "occurrences", "tool_name"])
    expect(latest).toMatchObject({ tool_name: "explode", error_type: "Error", message_truncated: true, occurrences: 1 })
    expect(latest!.message).toBe(`failure 4 ${"é".repeat(512 - 10)}`)
  })

  it("filters by tool, follows offset, and honours limit and max_chars", async () => {
    const harness = await withErrors()
    const answer = (await harness.callTool("inspect_tool_errors", { name: "explode", offset: 1, limit: 10, max_chars: 4_000 })) as {
      errors: Array<{ tool_name: string; message: string; message_truncated?: boolean }>
      total_matches: number
      next_offset: number | null
    }
    expect(answer.total_matches).toBe(5)
    expect(answer.errors.map((entry) => entry.message.slice(0, 9))).toEqual(["failure 3", "failure 2", "failure 1", "failure 0"])
    expect(answer.errors.every((entry) => entry.tool_name === "explode" && entry.message_truncated === undefined)).toBe(true)
    expect(answer.next_offset).toBeNull()
  })

  it("message_truncated stays true when the cache cut the message, even if the preview did not (ERR-19)", async () => {
    const harness = await withErrors({ errorMessageChars: 20 })
    const answer = (await harness.callTool("inspect_tool_errors", { name: "explode", limit: 1, max_chars: 4_000 })) as {
      errors: Array<{ message: string; message_truncated?: boolean }>
    }
    expect(answer.errors[0]).toMatchObject({ message: `failure 4 ${"é".repeat(10)}`, message_truncated: true })
  })

  it("shortens an escape-heavy preview to fit the 8,000 budget and flags it (BUD-01, ERR-19)", async () => {
    const heavy = ["\u0000".repeat(4_000), '"'.repeat(4_000), "\\".repeat(4_000)]
    for (const message of [...heavy, ...[1, 2, 3, 4, 5].map((pad) => "x".repeat(pad) + '"'.repeat(4_000))]) {
      // Alone in its harness, so the page is also the last one: next_offset is null.
      const harness = new JitHarness({ tools: [failing] })
      await rejection(harness.callTool("explode", { message }))
      const answer = (await harness.callTool("inspect_tool_errors", { limit: 1, max_chars: 4_000 })) as {
        errors: Array<{ message: string; message_truncated?: boolean }>
      }
      expect(size(answer)).toBeLessThanOrEqual(8_000)
      expect(size(answer)).toBeGreaterThan(7_980)
      expect(message.startsWith(answer.errors[0]!.message)).toBe(true)
      expect(answer.errors[0]!.message_truncated).toBe(true)
    }
  })

  it("is read-only: reading retries nothing and changes no recency or counts (MGMT-24, ERR-08)", async () => {
    const harness = await withErrors()
    const before = harness.toolErrors(undefined, { limit: 1000 })
    const explodeCalls = harness.profileStats("explode").call_count
    await harness.callTool("inspect_tool_errors", { name: "explode", offset: 4, limit: 1 })
    await harness.callTool("inspect_tool_errors", {})
    expect(harness.toolErrors(undefined, { limit: 1000 })).toEqual(before)
    expect(harness.profileStats("explode").call_count).toBe(explodeCalls)
  })
})

describe("argument ranges and the management tier's own bookkeeping (BUD-02..04, MGMT-19, MGMT-27, MGMT-28)", () => {
  it("rejects limit outside 1–100, max_chars outside 1–4,000 and negative offsets as ValidationError (BUD-02..04)", async () => {
    const harness = await withTwice()
    const bad: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
      ["list_tools", { limit: 0 }],
      ["list_tools", { limit: 101 }],
      ["list_tools", { offset: -1 }],
      ["inspect_tool_calls", { name: "twice", limit: 101 }],
      ["inspect_tool_errors", { limit: 0 }],
      ["inspect_tool_errors", { max_chars: 4_001 }],
      ["read_tool_source", { name: "twice", max_chars: 0 }],
      ["read_tool_source", { name: "twice", max_chars: 4_001 }],
      ["read_tool_schema", { name: "twice", max_chars: 4_001 }],
      ["read_tool_schema", { name: "twice", offset: 0.5 }],
      ["inspect_tool", {}]
    ]
    for (const [name, args] of bad) {
      expect(await rejection(harness.callTool(name, args)), `${name} ${JSON.stringify(args)}`).toMatchObject({ _tag: "ValidationError", name })
    }
    for (const [name, args] of [
      ["list_tools", { limit: 100 }],
      ["inspect_tool_errors", { limit: 100, max_chars: 4_000 }],
      ["read_tool_source", { name: "twice", max_chars: 1 }],
      ["read_tool_schema", { name: "twice", max_chars: 4_000 }]
    ] as const) {
      await harness.callTool(name, args)
    }
  })

  it("failed management calls are profiled, cached and announced with origin management (MGMT-19, MGMT-27, MGMT-28, ERR-16)", async () => {
    const harness = makeHarness()
    const events = recordEvents(harness)
    const error = await rejection(harness.callTool("create_tool", { entrypoint: "broken", source: "export const broken = (" }, { callId: "m-1" }))
    expect(error).toMatchObject({ _tag: "PackageError", reason: "CompileError" })
    expect(harness.profile("create_tool").calls[0]).toMatchObject({ call_id: "m-1", origin: "management", status: "failed", error_type: "PackageError" })
    expect(harness.toolErrors("create_tool").errors[0]).toMatchObject({ error_type: "PackageError", last_call_id: "m-1", message: error.message })
    expect((await events.stop()).map((event) => event.payload)).toEqual([
      { session_id: "test", tool_call_id: "m-1", tool_name: "create_tool", origin: "management" },
      { session_id: "test", tool_call_id: "m-1", tool_name: "create_tool", origin: "management", success: false, error_type: "PackageError" }
    ])
  })
})
