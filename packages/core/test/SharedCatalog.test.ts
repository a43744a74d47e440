/**
 * The shared catalog on the embedded default (`SharedCatalog.memory()`), between sessions of one
 * process: a tool published with its examples, what its session measured and the tools it calls;
 * loaded only once approved, pinned by its version id, its examples run (and charged) in the
 * loading session, its package checked against that id, its dependencies against the loader's
 * toolbox; a newer version reaches a session only when it loads it; revoking stops new loads and
 * leaves loaded copies working.
 */
import { describe, expect, it } from "@effect/vitest"
import { JitHarness } from "../src/JitHarness.js"
import * as SharedCatalog from "../src/SharedCatalog.js"

const slugify = (separator: string) => `
export const slugify = tool({
  description: "Turn a title into a URL slug.",
  guidelines: "Use for URLs.",
  parameters: { type: "object", properties: { title: { type: "string" } }, required: ["title"] }
}, async ({ title }: { title: string }) => title.trim().toLowerCase().split(/\\s+/).join(${JSON.stringify(separator)}))
`

const slugExamples = (separator: string) => [{ input: { title: "Hello World" }, expected_output: `hello${separator}world` }]

const postPath = `
export const post_path = tool({
  description: "The path of a blog post.",
  guidelines: "Use for blog links.",
  parameters: { type: "object", properties: { title: { type: "string" } }, required: ["title"] }
}, async ({ title }: { title: string }) => "/posts/" + await harness.callTool("slugify", { title }))
`

const session = (catalog: SharedCatalog.SharedCatalogShape, sessionId: string, policy?: object) =>
  new JitHarness({ sessionId, catalog, principal: `agent-${sessionId}`, ...(policy === undefined ? {} : { policy }) })

const catalogError = async (promise: Promise<unknown>): Promise<SharedCatalog.CatalogError> => {
  const error = await promise.then(() => undefined, (cause: unknown) => cause)
  expect(error).toBeInstanceOf(SharedCatalog.CatalogError)
  return error as SharedCatalog.CatalogError
}

describe("SharedCatalog (embedded)", () => {
  it("publishes a verified tool with its examples, provenance and measurements; it loads elsewhere only once approved, with the same version id, its examples charged there", async () => {
    const catalog = SharedCatalog.memory()
    const writer = session(catalog, "writer")
    await writer.createTool({ entrypoint: "slugify", source: slugify("-"), examples: slugExamples("-") })
    for (const title of ["A B", "C D", "E F"]) await writer.callTool("slugify", { title })
    const published = await writer.publishTool("slugify")
    expect(published).toMatchObject({
      name: "slugify",
      status: "proposed",
      version_id: writer.definition("slugify").version_id,
      language: "typescript",
      description: "Turn a title into a URL slug.",
      examples: slugExamples("-"),
      dependencies: [],
      provenance: { session_id: "writer", principal: "agent-writer", updated_from: null },
      measurements: { calls: 3, failures: 0 },
      reviewed: null
    })
    expect(published.measurements.p50_ms).toBeGreaterThanOrEqual(0)
    expect(published.measurements.p99_ms).toBeGreaterThanOrEqual(published.measurements.p50_ms!)

    const reader = session(catalog, "reader", { maximumInvocations: 10, maximumTools: 4, allowedLanguages: ["JavaScript"] })
    expect((await catalogError(reader.loadFromCatalog("slugify"))).reason).toBe("NotFound")
    expect((await catalogError(reader.loadFromCatalog("slugify", { version: published.version_id }))).reason).toBe("NotApproved")
    expect(reader.listTools()).toEqual([])

    const approved = await catalog.review("slugify", published.version_id, "approved", "operator")
    expect(approved).toMatchObject({ status: "approved", reviewed: { by: "operator" } })
    const before = reader.admission.usage()
    expect(await reader.loadFromCatalog("slugify")).toEqual({ name: "slugify", status: "loaded", version_id: published.version_id })
    const after = reader.admission.usage()
    expect(after.versions - before.versions).toBe(1)
    expect(after.invocations - before.invocations).toBe(slugExamples("-").length)
    expect(reader.definition("slugify").version_id).toBe(published.version_id)
    expect(await reader.callTool("slugify", { title: "Shared Tools" })).toBe("shared-tools")
  })

  it("a tool without examples, a text tool, a missing tool and a session without a catalog are refused with typed errors", async () => {
    const catalog = SharedCatalog.memory()
    const writer = session(catalog, "writer")
    await writer.createTool({ entrypoint: "slugify", source: slugify("-") })
    await writer.createTool({ kind: "text", name: "style", description: "House style.", source: "# Style\n" })
    expect(await catalogError(writer.publishTool("slugify"))).toMatchObject({ reason: "NoExamples" })
    expect(await catalogError(writer.publishTool("style"))).toMatchObject({ reason: "NotACodeTool" })
    await expect(writer.publishTool("nothing")).rejects.toMatchObject({ _tag: "ToolNotFound" })
    expect(await catalog.entries()).toEqual([])
    const alone = new JitHarness({ sessionId: "alone" })
    expect(await catalogError(alone.loadFromCatalog("slugify"))).toMatchObject({ reason: "NoCatalog" })
  })

  it("a composing tool lists the tools it calls; it loads only where they are, and then composes with the loader's copy", async () => {
    const catalog = SharedCatalog.memory({ approveOnPublish: true })
    const writer = session(catalog, "writer")
    await writer.createTool({ entrypoint: "slugify", source: slugify("-"), examples: slugExamples("-") })
    await writer.createTool({ entrypoint: "post_path", source: postPath, examples: [{ input: { title: "Hi There" }, expected_output: "/posts/hi-there" }] })
    const composed = await writer.publishTool("post_path")
    expect(composed).toMatchObject({ status: "approved", dependencies: ["slugify"], reviewed: { by: "agent-writer" } })
    await writer.publishTool("slugify")

    const reader = session(catalog, "reader")
    expect(await catalogError(reader.loadFromCatalog("post_path"))).toMatchObject({ reason: "MissingDependency" })
    expect(reader.listTools()).toEqual([])
    await reader.loadFromCatalog("slugify")
    await reader.loadFromCatalog("post_path")
    expect(await reader.callTool("post_path", { title: "Catalog Day" })).toBe("/posts/catalog-day")
  })

  it("a newer version reaches a session only when it loads it; revoking stops new loads and leaves the loaded copy working", async () => {
    const catalog = SharedCatalog.memory({ approveOnPublish: true })
    const writer = session(catalog, "writer")
    await writer.createTool({ entrypoint: "slugify", source: slugify("-"), examples: slugExamples("-") })
    const first = await writer.publishTool("slugify")
    const reader = session(catalog, "reader")
    await reader.loadFromCatalog("slugify")

    await writer.updateTool({ name: "slugify", source: slugify("_"), examples: slugExamples("_") })
    const second = await writer.publishTool("slugify")
    expect(second.version_id).not.toBe(first.version_id)
    expect(second.provenance.updated_from).toBe(first.version_id)
    expect(await reader.callTool("slugify", { title: "Pinned Copy" })).toBe("pinned-copy")

    await reader.loadFromCatalog("slugify")
    expect(reader.definition("slugify").version_id).toBe(second.version_id)
    expect(await reader.callTool("slugify", { title: "New Copy" })).toBe("new_copy")

    const revocations: Array<string> = []
    const stop = catalog.watch((entry) => revocations.push(`${entry.name} ${entry.status}`))
    await catalog.review("slugify", second.version_id, "revoked", "operator")
    stop()
    expect(revocations).toEqual(["slugify revoked"])
    expect(await reader.callTool("slugify", { title: "Still Here" })).toBe("still_here")
    expect(await catalogError(session(catalog, "late").loadFromCatalog("slugify", { version: second.version_id }))).toMatchObject({ reason: "Revoked" })
    const late = session(catalog, "late")
    await late.loadFromCatalog("slugify")
    expect(late.definition("slugify").version_id).toBe(first.version_id)
    expect(await catalogError(catalog.review("slugify", second.version_id, "approved", "operator"))).toMatchObject({ reason: "Revoked" })
  })

  it("a package that is not the content its version id names is refused (Tampered), and nothing is installed", async () => {
    const honest = SharedCatalog.memory({ approveOnPublish: true })
    const writer = session(honest, "writer")
    await writer.createTool({ entrypoint: "slugify", source: slugify("-"), examples: slugExamples("-") })
    const published = await writer.publishTool("slugify")
    const tampered: SharedCatalog.SharedCatalogShape = {
      ...honest,
      package: async (versionId) => {
        const pkg = await honest.package(versionId)
        return { ...pkg, files: { "index.ts": pkg.files["index.ts"]!.replace("toLowerCase", "toUpperCase") } }
      }
    }
    const reader = session(tampered, "reader")
    expect(await catalogError(reader.loadFromCatalog("slugify", { version: published.version_id }))).toMatchObject({ reason: "Tampered" })
    expect(reader.listTools()).toEqual([])
  })

  it("a snapshot keeps the examples a version passed, so a restored tool can still be published; restoring runs none of them", async () => {
    const catalog = SharedCatalog.memory()
    const writer = session(catalog, "writer")
    await writer.createTool({ entrypoint: "slugify", source: slugify("-"), examples: slugExamples("-") })
    const snapshot = writer.snapshot()
    expect(snapshot.tools[0]?.examples).toEqual(slugExamples("-"))
    const restored = await JitHarness.fromSnapshot(snapshot, { sessionId: "restored", catalog, policy: { maximumInvocations: 1, maximumConcurrentInvocations: 1, allowedLanguages: ["JavaScript"] } })
    expect(restored.admission.usage().invocations).toBe(0)
    const entry = await restored.publishTool("slugify")
    expect(entry).toMatchObject({ version_id: writer.definition("slugify").version_id, examples: slugExamples("-"), provenance: { session_id: "restored" } })
  })
})
