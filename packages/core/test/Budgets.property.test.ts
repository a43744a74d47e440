/**
 * Property tests of the response budget and exact paging (BUD-01..15, D-04..D-06, D-15): random
 * catalogs, texts with astral, combining, escaped and lone-surrogate characters, random
 * offset/limit/max_chars. Every model-facing response is at most 8,000 code points of compact
 * JSON; every page is the exact code-point slice it claims to be, so pages reassemble to the
 * original, carry one content_id and never split a surrogate pair.
 */
import { describe, expect, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import * as fc from "fast-check"
import { JitHarness } from "../src/JitHarness.js"
import * as Paging from "../src/Paging.js"
import { tool } from "../src/Tool.js"
import { add, codeTool, points, walkGuard } from "./fixtures.js"

const budget = 8_000
const size = (value: unknown) => points(JSON.stringify(value))
const contentId = (text: string) => createHash("sha256").update(text, "utf8").digest("hex").slice(0, 16)

const piece = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      "a", "Z", " ", "é", "e\u0301", "\u0301", "😀", "𝔘", "👩\u200d👩\u200d👧", "中", "\"", "\\", "\n", "\t", "\u0000", "\u001f", "\u2028", "<"
    )
  },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 4 }) },
  { weight: 1, arbitrary: fc.constantFrom("\ud800", "\udfff", "\udbff") }
)

/** Texts from empty to tens of thousands of code points, without generating them piece by piece. */
const text = (maxPieces: number, maxRepeat: number) =>
  fc.tuple(fc.array(piece, { maxLength: maxPieces }), fc.integer({ min: 1, max: maxRepeat })).map(([pieces, repeat]) =>
    pieces.join("").repeat(repeat)
  )

/** Runs of the characters that take two or six code points once escaped. */
const escapeHeavy = fc
  .tuple(fc.constantFrom('"', "\\", "\u0001", "\n", "\ud800"), fc.integer({ min: 1, max: 6_000 }))
  .map(([unit, count]) => unit.repeat(count))

const wellFormed = (value: string) => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(value)

interface Page {
  readonly content: string
  readonly offset: number
  readonly next_offset: number | null
  readonly total_chars: number
  readonly content_id: string
}

/**
 * Reads a whole text page by page, with a max_chars per page drawn from `sizes`, and checks every
 * page: within budget, the exact code-point slice, progress, and one content_id.
 */
const readAll = async (original: string, read: (offset: number, maxChars: number) => Promise<unknown>, sizes: ReadonlyArray<number>) => {
  const codePoints = Array.from(original)
  let offset: number | null = 0
  let assembled = ""
  let index = 0
  const step = walkGuard()
  while (offset !== null) {
    step()
    const maxChars = sizes[index++ % sizes.length]!
    const answer = (await read(offset, maxChars)) as Page
    expect(size(answer)).toBeLessThanOrEqual(budget)
    expect(answer.offset).toBe(offset)
    expect(answer.total_chars).toBe(codePoints.length)
    expect(answer.content_id).toBe(contentId(original))
    const taken = points(answer.content)
    expect(taken).toBeLessThanOrEqual(maxChars)
    expect(answer.content).toBe(codePoints.slice(offset, offset + taken).join(""))
    if (wellFormed(original)) expect(wellFormed(answer.content)).toBe(true)
    if (answer.next_offset !== null) {
      expect(taken).toBeGreaterThan(0)
      expect(answer.next_offset).toBe(offset + taken)
    } else {
      expect(offset + taken).toBe(codePoints.length)
    }
    assembled += answer.content
    offset = answer.next_offset
  }
  expect(assembled).toBe(original)
}

const maxCharsList = fc.array(fc.integer({ min: 1, max: 4_000 }), { minLength: 1, maxLength: 5 })

describe("budgets and exact paging (BUD-01..15, D-04..D-06)", () => {
  it("Paging.page: any offset and max_chars gives the exact code-point slice within budget (D-04, BUD-08)", () => {
    fc.assert(
      fc.property(text(300, 60), fc.nat(), fc.integer({ min: 1, max: 4_000 }), (body, rawOffset, maxChars) => {
        const source = Paging.pageable(body)
        const offset = rawOffset % (source.totalChars + 1)
        const page = Paging.page(source, offset, maxChars, (p) => ({ name: "some_tool_name", ...p }))
        expect(size(page)).toBeLessThanOrEqual(budget)
        expect(page.content).toBe(Array.from(body).slice(offset, offset + points(page.content)).join(""))
        expect(page.content_id).toBe(contentId(body))
        if (offset < source.totalChars) expect(points(page.content)).toBeGreaterThan(0)
      }),
      { numRuns: 300 }
    )
  })

  it("the text reader and read_tool_source reassemble any text tool exactly (TXT-08, BUD-08, BUD-09, BUD-13)", async () => {
    await fc.assert(
      fc.asyncProperty(text(200, 120), maxCharsList, async (body, sizes) => {
        const harness = new JitHarness()
        await harness.createTool({ kind: "text", name: "workflow", description: "A workflow.", source: body })
        await readAll(body, (offset, max_chars) => harness.callTool("workflow", { offset, max_chars }), sizes)
        await readAll(body, (offset, max_chars) => harness.callTool("read_tool_source", { name: "workflow", offset, max_chars }), sizes)
      }),
      { numRuns: 60 }
    )
  })

  it("read_tool_source reassembles any code file exactly (MGMT-08, BUD-08)", async () => {
    await fc.assert(
      fc.asyncProperty(text(100, 60), maxCharsList, async (note, sizes) => {
        const harness = new JitHarness()
        const helper = `// ${note.replace(/[\n\r\u2028\u2029]/g, " ")}\nexport const note = ${JSON.stringify(note)}\n`
        await harness.createTool({
          entrypoint: "noted",
          source: codeTool("noted", "note", `import { note } from "./helper"`),
          files: { "helper.ts": helper }
        })
        expect(await harness.callTool("noted")).toBe(note)
        await readAll(helper, (offset, max_chars) => harness.callTool("read_tool_source", { name: "noted", path: "helper.ts", offset, max_chars }), sizes)
      }),
      { numRuns: 12 }
    )
  })

  it("random catalogs: list_tools and inspect_tool stay within budget with exact previews (BUD-01, BUD-05..07, MGMT-06, MGMT-07)", async () => {
    const entry = fc.record({ description: fc.oneof(text(40, 30), escapeHeavy), body: text(10, 5) })
    await fc.assert(
      fc.asyncProperty(
        fc.array(entry, { minLength: 1, maxLength: 40 }),
        fc.nat({ max: 45 }),
        fc.integer({ min: 1, max: 100 }),
        async (entries, offset, limit) => {
          const harness = new JitHarness({ tools: [add] })
          const descriptions = new Map<string, string>([["add", add.description]])
          for (const [i, { body, description }] of entries.entries()) {
            const hint = description.trim() === "" ? `Tool ${i}.` : description
            await harness.createTool({ kind: "text", name: `tool_${i}`, description: hint, source: body })
            descriptions.set(`tool_${i}`, hint)
          }
          const listing = harness.callTool("list_tools", { offset, limit })
          if (offset > descriptions.size) {
            await expect(listing).rejects.toMatchObject({ reason: "OffsetOutOfRange" })
            return
          }
          const page = (await listing) as {
            tools: Array<{ name: string; description: string }>
            next_offset: number | null
          }
          expect(size(page)).toBeLessThanOrEqual(budget)
          for (const listed of page.tools) {
            expect(listed.description).toBe(Array.from(descriptions.get(listed.name)!).slice(0, 200).join(""))
          }
          const seen: Array<string> = []
          let next: number | null = 0
          const step = walkGuard()
          while (next !== null) {
            step()
            const walk = (await harness.callTool("list_tools", { offset: next, limit })) as typeof page
            expect(size(walk)).toBeLessThanOrEqual(budget)
            expect(walk.tools.length).toBeGreaterThan(0)
            seen.push(...walk.tools.map((listed) => listed.name))
            next = walk.next_offset
          }
          expect(seen).toEqual([...descriptions.keys()])
          const name = `tool_${offset % entries.length}`
          const inspected = (await harness.callTool("inspect_tool", { name })) as { description: string }
          expect(size(inspected)).toBeLessThanOrEqual(budget)
          expect(inspected.description).toBe(Array.from(descriptions.get(name)!).slice(0, 500).join(""))
          for (const [management, args] of [
            ["inspect_tool_stats", { name }],
            ["inspect_tool_calls", { name, limit }],
            ["inspect_tool_errors", { limit }],
            ["read_tool_schema", { name }]
          ] as const) {
            expect(size(await harness.callTool(management, args))).toBeLessThanOrEqual(budget)
          }
        }
      ),
      { numRuns: 40 }
    )
  })

  it("random schemas: inspect_tool omits parameters exactly when they would not fit, and read_tool_schema reassembles them (D-15, BUD-10, BUD-11)", async () => {
    const field = fc.record({ description: text(30, 150), enum: fc.uniqueArray(text(5, 3), { maxLength: 20 }) })
    await fc.assert(
      fc.asyncProperty(fc.array(field, { minLength: 1, maxLength: 8 }), maxCharsList, async (fields, sizes) => {
        const parameters = {
          type: "object",
          properties: Object.fromEntries(
            fields.map((f, i) => [`field_${i}`, f.enum.length === 0 ? { type: "string", description: f.description } : { description: f.description, enum: f.enum }])
          )
        }
        const wide = tool({ name: "wide", description: "A tool with a random schema.", guidelines: "Use in tests.", parameters }, () => 1)
        const harness = new JitHarness({ tools: [wide] })
        const schema = harness.definition("wide").parameters!
        const inspected = (await harness.callTool("inspect_tool", { name: "wide" })) as Record<string, unknown>
        expect(size(inspected)).toBeLessThanOrEqual(budget)
        if ("parameters" in inspected) {
          expect(inspected.parameters).toEqual(schema)
          expect(inspected).not.toHaveProperty("parameters_omitted")
        } else {
          const { parameters_chars, parameters_omitted, ...rest } = inspected
          expect(parameters_omitted).toBe(true)
          expect(parameters_chars).toBe(size(schema))
          expect(size({ ...rest, parameters: schema })).toBeGreaterThan(budget)
        }
        const compact = JSON.stringify(schema)
        await readAll(compact, (offset, max_chars) => harness.callTool("read_tool_schema", { name: "wide", offset, max_chars }), sizes)
        expect(JSON.parse(compact)).toEqual(schema)
      }),
      { numRuns: 40 }
    )
  })

  it("random error messages: inspect_tool_errors stays within budget with exact, flagged previews (ERR-18, ERR-19, BUD-01)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(text(60, 100), escapeHeavy), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 5_000 }),
        fc.integer({ min: 1, max: 100 }),
        fc.integer({ min: 1, max: 4_000 }),
        async (messages, errorMessageChars, limit, maxChars) => {
          const explode = tool({ name: "explode", description: "Throws.", guidelines: "Use in tests.", parameters: { type: "object" } }, (args: any) => {
            throw new Error(args.message)
          })
          const harness = new JitHarness({ tools: [explode], errorMessageChars })
          for (const message of messages) await harness.callTool("explode", { message }).catch(() => undefined)
          const answer = (await harness.callTool("inspect_tool_errors", { limit, max_chars: maxChars })) as {
            errors: Array<{ message: string; message_truncated?: boolean }>
            next_offset: number | null
          }
          expect(size(answer)).toBeLessThanOrEqual(budget)
          const retained = harness.toolErrors(undefined, { limit: 1000 }).errors
          for (const [i, preview] of answer.errors.entries()) {
            const kept = retained[i]!
            const cached = kept.message!
            expect(messages.some((m) => Array.from(m).slice(0, errorMessageChars).join("") === cached)).toBe(true)
            const shown = points(preview.message)
            expect(shown).toBeLessThanOrEqual(maxChars)
            expect(preview.message).toBe(Array.from(cached).slice(0, shown).join(""))
            expect(preview.message_truncated === true).toBe(kept.message_truncated || shown < points(cached))
            // Only the budget may shorten a preview below max_chars, and only when it is alone on the page.
            if (shown < Math.min(maxChars, points(cached))) expect(answer.errors).toHaveLength(1)
          }
        }
      ),
      { numRuns: 40 }
    )
  })

  it("many call records: inspect_tool_calls pages within budget and reaches every record (MGMT-11, BUD-05)", async () => {
    // The window must outlive the inspect_tool_calls records the walks themselves add.
    const harness = new JitHarness({ tools: [add], callCapacity: 100_000 })
    for (let i = 0; i < 300; i++) await harness.callTool("add", { left: i, right: i }, { callId: `a-call-id-that-is-rather-long-${i}` })
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 100 }), async (limit) => {
        const ids: Array<string> = []
        let offset: number | null = 0
        const step = walkGuard()
        while (offset !== null) {
          step()
          const page = (await harness.callTool("inspect_tool_calls", { name: "add", offset, limit })) as {
            calls: Array<{ call_id: string }>
            next_offset: number | null
            total_calls: number
          }
          expect(size(page)).toBeLessThanOrEqual(budget)
          expect(page.calls.length).toBeGreaterThan(0)
          ids.push(...page.calls.map((call) => call.call_id))
          offset = page.next_offset
        }
        expect(ids).toEqual(Array.from({ length: 300 }, (_, i) => `a-call-id-that-is-rather-long-${299 - i}`))
      }),
      { numRuns: 20 }
    )
  })

  it("escapes count against the budget: a page of control characters is shortened, never split (BUD-01, BUD-05)", async () => {
    const body = "\u0001😀\ud800".repeat(3_000)
    const harness = new JitHarness()
    await harness.createTool({ kind: "text", name: "escaped", description: "Escapes.", source: body })
    const page = (await harness.callTool("escaped", { max_chars: 4_000 })) as Page
    expect(size(page)).toBeLessThanOrEqual(budget)
    expect(size(page)).toBeGreaterThan(budget - 7)
    expect(points(page.content)).toBeLessThan(4_000)
    expect(page.next_offset).toBe(points(page.content))
    await readAll(body, (offset, max_chars) => harness.callTool("escaped", { offset, max_chars }), [4_000, 3_999, 1])
  })

  it("the application API is not budgeted (APP-06, BUD-15)", async () => {
    const long = "😀".repeat(9_000)
    const wide = tool({ name: "wide", description: long, guidelines: long, parameters: { type: "object", description: long } }, () => 1)
    const harness = new JitHarness({ tools: [wide] })
    await harness.createTool({ kind: "text", name: "long", description: long, source: long + long })
    expect(harness.listTools().map((entry) => entry.description)).toEqual([long, long])
    expect(harness.definition("wide")).toMatchObject({ description: long, guidelines: long, parameters: { description: long } })
    expect(harness.source("long")).toMatchObject({ markdown: long + long })
    expect(harness.inspectTool("long").source).toMatchObject({ markdown: long + long })
  })
})
