/**
 * The model's side of the shared catalog: its tools are offered only as the session's policy
 * allows (`sharedCatalog` off / load / publish), so a session without them sends what it sent
 * before; searching stays within the response budget with exact paging; a tool's source is read in
 * exact pages; loading goes through the dispatch path (a management call whose completion says the
 * toolbox changed); a revoked version a session holds is reported to it and keeps working.
 */
import { describe, expect, it } from "@effect/vitest"
import { JitHarness } from "../src/JitHarness.js"
import * as JitPolicy from "../src/JitPolicy.js"
import * as ResponseBudget from "../src/ResponseBudget.js"
import * as SharedCatalog from "../src/SharedCatalog.js"

const catalogToolNames = ["search_catalog", "read_catalog_source", "load_from_catalog", "publish_tool"]

const upper = (name: string, description: string) => `
export const ${name} = tool({
  description: ${JSON.stringify(description)},
  guidelines: "Use to shout.",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }
}, async ({ text }: { text: string }) => text.toUpperCase())
`

const names = (harness: JitHarness) => harness.definitions("chat_completions").tools.map((tool) => tool.name)

const published = async (catalog: SharedCatalog.SharedCatalogShape, name: string, description = "Upper-case a text.") => {
  const writer = new JitHarness({ sessionId: `writer-${name}`, catalog })
  await writer.createTool({ entrypoint: name, source: upper(name, description), examples: [{ input: { text: "a" }, expected_output: "A" }] })
  const entry = await writer.publishTool(name)
  await writer.release()
  return entry
}

describe("CatalogTools", () => {
  it("are offered as the policy's sharedCatalog allows, and a session without them offers exactly what it did before", async () => {
    const catalog = SharedCatalog.memory()
    const plain = names(new JitHarness({ sessionId: "plain", policy: { allowedLanguages: ["JavaScript"] } }))
    expect(names(new JitHarness({ sessionId: "off", catalog, policy: { allowedLanguages: ["JavaScript"] } }))).toEqual(plain)
    expect(plain.filter((name) => catalogToolNames.includes(name))).toEqual([])
    const loader = new JitHarness({ sessionId: "load", catalog, policy: { sharedCatalog: "load" } })
    expect(names(loader).filter((name) => catalogToolNames.includes(name))).toEqual(["search_catalog", "read_catalog_source", "load_from_catalog"])
    await expect(loader.callTool("publish_tool", { name: "x" })).rejects.toMatchObject({ _tag: "ToolNotFound" })
    expect(names(new JitHarness({ sessionId: "app", catalog })).filter((name) => catalogToolNames.includes(name))).toEqual(catalogToolNames)
  })

  it("the policy level narrows under a ceiling and a request never widens it", () => {
    const ceiling = JitPolicy.make({ sharedCatalog: "load" })
    expect(JitPolicy.intersect(ceiling, JitPolicy.make({ sharedCatalog: "publish" })).sharedCatalog).toBe("load")
    expect(JitPolicy.intersect(JitPolicy.make({ sharedCatalog: "publish" }), JitPolicy.make({})).sharedCatalog).toBe("off")
    expect(() => JitPolicy.make({ sharedCatalog: "all" as never })).toThrow(/sharedCatalog/)
  })

  it("a model publishes, another finds it with its measurements, reads its source in exact pages and loads it through the dispatch path", async () => {
    const catalog = SharedCatalog.memory()
    const writer = new JitHarness({ sessionId: "writer", catalog, policy: { allowedLanguages: ["JavaScript"], sharedCatalog: "publish" } })
    await writer.callTool("create_tool", { entrypoint: "shout", source: upper("shout", "Upper-case a text."), examples: [{ input: { text: "a" }, expected_output: "A" }] })
    await writer.callTool("shout", { text: "hi" })
    const entry = await writer.callTool("publish_tool", { name: "shout" }) as { version_id: string; status: string }
    expect(entry).toMatchObject({ name: "shout", status: "proposed", dependencies: [] })

    const reader = new JitHarness({ sessionId: "reader", catalog, policy: { allowedLanguages: ["JavaScript"], sharedCatalog: "load" } })
    expect(await reader.callTool("search_catalog", { query: "upper" })).toEqual({ tools: [], total: 0, next_offset: null })
    expect(await reader.callTool("search_catalog", { query: "upper", status: "any" })).toMatchObject({ total: 1, tools: [{ status: "proposed" }] })
    await catalog.review("shout", entry.version_id, "approved", "operator")
    expect(await reader.callTool("search_catalog", { query: "UPPER text" })).toMatchObject({
      total: 1,
      next_offset: null,
      tools: [{ name: "shout", version_id: entry.version_id, language: "typescript", examples: 1, calls: 1, failures: 0, published_by: "application" }]
    })

    let text = ""
    let offset: number | null = 0
    while (offset !== null) {
      const page = await reader.callTool("read_catalog_source", { name: "shout", version_id: entry.version_id, offset, max_chars: 50 }) as { content: string; next_offset: number | null; files: Array<string> }
      expect(page.files).toEqual(["index.ts"])
      text += page.content
      offset = page.next_offset
    }
    expect(text).toBe(upper("shout", "Upper-case a text."))

    const completions: Array<unknown> = []
    const subscription = reader.subscribe()
    const collecting = (async () => {
      for await (const event of subscription) if (event.name === "jit_tool_completed") completions.push(event.payload)
    })()
    expect(await reader.callTool("load_from_catalog", { name: "shout" })).toEqual({ name: "shout", status: "loaded", version_id: entry.version_id })
    expect(await reader.callTool("shout", { text: "shared" })).toBe("SHARED")
    subscription.close()
    await collecting
    expect(completions).toContainEqual(expect.objectContaining({ tool_name: "load_from_catalog", origin: "management", success: true }))
  })

  it("search answers stay within the response budget and page exactly over many long entries", async () => {
    const catalog = SharedCatalog.memory({ approveOnPublish: true })
    for (let index = 0; index < 12; index++) await published(catalog, `tool_${index}`, `Upper-case a text, variant ${index}. ${"Long description. ".repeat(40)}`)
    const reader = new JitHarness({ sessionId: "reader", catalog })
    const seen: Array<string> = []
    let offset: number | null = 0
    while (offset !== null) {
      const page = await reader.callTool("search_catalog", { query: "variant", offset, limit: 100 }) as { tools: Array<{ name: string; description: string }>; total: number; next_offset: number | null }
      expect(ResponseBudget.fits(page)).toBe(true)
      expect(page.total).toBe(12)
      expect(page.tools[0]!.description.length).toBeLessThanOrEqual(201)
      seen.push(...page.tools.map((tool) => tool.name))
      offset = page.next_offset
    }
    expect(seen.sort()).toEqual(Array.from({ length: 12 }, (_, index) => `tool_${index}`).sort())
    await expect(reader.callTool("search_catalog", { offset: 13 })).rejects.toMatchObject({ reason: "OffsetOutOfRange" })
  })

  it("a revoked version is reported to the sessions that hold it, which keep running it", async () => {
    const catalog = SharedCatalog.memory({ approveOnPublish: true })
    const entry = await published(catalog, "shout")
    const holder = new JitHarness({ sessionId: "holder", catalog })
    const bystander = new JitHarness({ sessionId: "bystander", catalog })
    await holder.loadFromCatalog("shout")
    const heard = { holder: [] as Array<unknown>, bystander: [] as Array<unknown> }
    holder.subscribe()[Symbol.asyncIterator]().next().then((result) => heard.holder.push(result.value))
    bystander.subscribe()[Symbol.asyncIterator]().next().then((result) => heard.bystander.push(result.value))
    await catalog.review("shout", entry.version_id, "revoked", "operator")
    await new Promise((resolve) => setImmediate(resolve))
    expect(heard.holder).toEqual([{
      type: "CUSTOM",
      name: "jit_catalog_revoked",
      payload: { session_id: "holder", tool_name: "shout", version_id: entry.version_id, revoked_by: "operator" }
    }])
    expect(heard.bystander).toEqual([])
    expect(await holder.callTool("shout", { text: "still" })).toBe("STILL")
    await expect(bystander.loadFromCatalog("shout", { version: entry.version_id })).rejects.toMatchObject({ reason: "Revoked" })
  })
})
