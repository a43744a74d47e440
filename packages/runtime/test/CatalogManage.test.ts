/**
 * The shared catalog through the application API of a remote session (`session.<sid>.manage`
 * `publish_tool` and `load_from_catalog`), on the embedded runtime: a client publishes from one
 * session and, once approved, loads pinned into another, whose toolbox is stored with it; a
 * refusal crosses the wire as the typed `CatalogError` it is.
 */
import { describe, expect, it } from "@effect/vitest"
import { SharedCatalog } from "@jitbox/core"
import * as Embedded from "../src/Embedded.js"
import * as RemoteSession from "../src/RemoteSession.js"

const shout = `export const shout = tool({
  description: "Upper-case a text.",
  guidelines: "Use to shout.",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }
}, async ({ text }: { text: string }) => text.toUpperCase())
`

describe("the catalog through session.<sid>.manage", () => {
  it("publish_tool and load_from_catalog from a remote client: proposed, approved, loaded pinned into another session and stored with it", async () => {
    const catalog = SharedCatalog.memory()
    const runtime = await Embedded.start({ namespace: "catalogmanage", harness: { catalog, policy: { allowedLanguages: ["JavaScript"] } } })
    try {
      const remote = (sessionId: string) => new RemoteSession.RemoteSession(runtime.transport, sessionId, { prefix: runtime.prefix })
      const writer = remote("writer")
      await writer.createTool({ entrypoint: "shout", language: "typescript", source: shout, examples: [{ input: { text: "a" }, expected_output: "A" }] })
      const entry = await writer.publishTool("shout")
      expect(entry).toMatchObject({ name: "shout", status: "proposed", provenance: { session_id: "writer" }, examples: [{ input: { text: "a" }, expected_output: "A" }] })

      const reader = remote("reader")
      const refused = await reader.loadFromCatalog("shout").then(() => undefined, (error: unknown) => error)
      expect(refused).toBeInstanceOf(SharedCatalog.CatalogError)
      expect(refused).toMatchObject({ _tag: "CatalogError", reason: "NotFound", name: "shout" })

      await catalog.review("shout", entry.version_id, "approved", "operator")
      expect(await reader.loadFromCatalog("shout", { version: entry.version_id })).toEqual({ name: "shout", status: "loaded", version_id: entry.version_id })
      expect(await reader.callTool("shout", { text: "over the wire" })).toBe("OVER THE WIRE")
      expect((await reader.snapshot()).tools.map((tool) => tool.name)).toEqual(["shout"])
    } finally {
      await runtime.close()
    }
  })
})
