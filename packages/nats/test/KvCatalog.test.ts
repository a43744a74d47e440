/**
 * The shared catalog in JetStream KV on a real nats-server (one for this file): publish, list,
 * read, review and watch across connections; a package larger than the server's `max_payload`
 * stored in chunks; two harnesses on their own connections, one publishing and one loading a
 * pinned version; revocation seen by a watch; and what someone else wrote into the bucket (a
 * changed package, an entry rewritten after its approval, a review that does not decode) read as
 * typed errors or as no approval, and a package written first under a version id by someone else
 * replaced when the version is published.
 */
import { JitHarness, SharedCatalog } from "@jitbox/core"
import { NatsServer } from "@jitbox/testing"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Kvm } from "@nats-io/kv"
import { connect } from "@nats-io/transport-node"
import { randomBytes } from "node:crypto"
import { codeTool } from "../../core/test/fixtures.js"
import * as KvCatalog from "../src/KvCatalog.js"

let server: NatsServer.Handle | undefined
const opened: Array<{ close: () => Promise<void> }> = []
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(async () => {
  for (const handle of opened) await handle.close()
  await server?.close()
})

let buckets = 0
const nextBucket = () => `catalog-test-${++buckets}`

const catalogOn = async (bucket: string, options: Partial<KvCatalog.KvCatalogOptions> = {}) => {
  const catalog = await KvCatalog.open({ bucket, ...options, connection: { servers: server!.url } })
  opened.push(catalog)
  return catalog
}

/** The bucket as any NATS client sees it. */
const rawBucket = async (bucket: string) => {
  const nc = await connect({ servers: server!.url })
  opened.push({ close: () => nc.close() })
  return new Kvm(nc).open(bucket)
}

/** A slug tool joining words with `separator`. */
const slugify = (separator: string) => codeTool("slugify", `String(args.title).trim().toLowerCase().split(/\\s+/).join(${JSON.stringify(separator)})`)
const slugExamples = (separator: string) => [{ input: { title: "Hello World" }, expected_output: `hello${separator}world` }]

const session = (catalog: SharedCatalog.SharedCatalogShape, sessionId: string) => new JitHarness({ sessionId, catalog, principal: `agent-${sessionId}` })

/** A hand-made version: an entry and a package whose files are `files`. */
const version = (name: string, files: Record<string, string>, publishedAt = 1_000): { entry: SharedCatalog.PublishedTool; pkg: SharedCatalog.CatalogPackage } => {
  const content = { language: "typescript" as const, entrypoint: name, files, declared: {} }
  const versionId = SharedCatalog.contentAddress(content)
  return {
    pkg: { version_id: versionId, ...content },
    entry: {
      name,
      version_id: versionId,
      status: "proposed",
      description: `${name}.`,
      guidelines: "",
      parameters: { type: "object" },
      language: "typescript",
      entrypoint: name,
      examples: [{ input: {}, expected_output: "x" }],
      dependencies: [],
      provenance: { session_id: "s1", principal: "agent", published_at: publishedAt, updated_from: null },
      measurements: { calls: 0, failures: 0, p50_ms: null, p99_ms: null },
      reviewed: null
    }
  }
}

const catalogError = async (promise: Promise<unknown>): Promise<SharedCatalog.CatalogError> => {
  const error = await promise.then(() => undefined, (cause: unknown) => cause)
  expect(error).toBeInstanceOf(SharedCatalog.CatalogError)
  return error as SharedCatalog.CatalogError
}

/** Resolves once `count` changes were reported. */
const watching = (catalog: SharedCatalog.SharedCatalogShape, count: number) => {
  const seen: Array<string> = []
  let stop = () => {}
  const done = new Promise<Array<string>>((resolve) => {
    stop = catalog.watch((entry) => {
      seen.push(`${entry.name} ${entry.version_id} ${entry.status} ${entry.reviewed?.by ?? "-"}`)
      if (seen.length === count) resolve(seen)
    })
  })
  return { done, stop: () => stop(), seen }
}

describe("KvCatalog", () => {
  it("publishes, lists, reads, reviews and watches across connections; a revoked version is not approved again", async () => {
    const bucket = nextBucket()
    const host = await catalogOn(bucket)
    const operator = await catalogOn(bucket, { create: false })
    const first = version("tool_a", { "index.ts": "export const a = 1" }, 1_000)
    const second = version("tool_a", { "index.ts": "export const a = 2" }, 2_000)
    const other = version("tool_b", { "index.ts": "export const b = 1" }, 3_000)
    expect(await host.publish(first.entry, first.pkg)).toMatchObject({ status: "proposed", reviewed: null })
    await host.publish(second.entry, second.pkg)
    await host.publish(other.entry, other.pkg)
    expect(await host.publish(first.entry, first.pkg)).toEqual({ ...first.entry, status: "proposed", reviewed: null })

    expect((await operator.entries()).map((entry) => [entry.name, entry.version_id, entry.status])).toEqual([
      ["tool_b", other.entry.version_id, "proposed"],
      ["tool_a", second.entry.version_id, "proposed"],
      ["tool_a", first.entry.version_id, "proposed"]
    ])
    expect((await operator.entries("tool_a")).map((entry) => entry.version_id)).toEqual([second.entry.version_id, first.entry.version_id])
    expect(await operator.package(first.entry.version_id)).toEqual(first.pkg)
    expect((await catalogError(operator.entry("tool_a"))).reason).toBe("NotFound")
    expect((await catalogError(operator.entry("tool_a", "v_missing"))).reason).toBe("NotFound")
    expect((await catalogError(operator.package("v_missing"))).reason).toBe("NotFound")

    const watch = watching(host, 2)
    const approved = await operator.review("tool_a", first.entry.version_id, "approved", "operator")
    expect(approved).toMatchObject({ status: "approved", reviewed: { by: "operator" } })
    expect(await host.entry("tool_a")).toEqual(approved)
    await operator.review("tool_a", first.entry.version_id, "revoked", "operator")
    expect(await watch.done).toEqual([`tool_a ${first.entry.version_id} approved operator`, `tool_a ${first.entry.version_id} revoked operator`])
    watch.stop()
    expect((await catalogError(host.entry("tool_a"))).reason).toBe("NotFound")
    expect(await catalogError(operator.review("tool_a", first.entry.version_id, "approved", "operator"))).toMatchObject({ reason: "Revoked" })
    expect(await catalogError(operator.review("tool_a", "v_missing", "approved", "operator"))).toMatchObject({ reason: "NotFound" })
  })

  it("a package larger than the server's max_payload is stored in chunks under a manifest and reads back whole", async () => {
    const bucket = nextBucket()
    const host = await catalogOn(bucket, { approveOnPublish: true })
    const big = version("big_tool", { "index.ts": "export const big = 1", "data.txt": randomBytes(1_800_000).toString("base64") })
    expect(await host.publish(big.entry, big.pkg)).toMatchObject({ status: "approved", reviewed: { by: "agent" } })
    const reader = await catalogOn(bucket, { create: false })
    expect(await reader.package(big.entry.version_id)).toEqual(big.pkg)
    const keys: Array<string> = []
    for await (const key of await (await rawBucket(bucket)).keys(`pkg.${big.entry.version_id}.*`)) keys.push(key)
    expect(keys.length).toBeGreaterThanOrEqual(3)
    const tooBig = await catalogOn(bucket, { create: false, maxPackageBytes: 1_000_000 })
    expect((await catalogError(tooBig.package(big.entry.version_id))).reason).toBe("Invalid")
  })

  it("one harness publishes, the operator approves, another harness on its own connection loads the version pinned; a revocation reaches a watch and stops new loads", async () => {
    const bucket = nextBucket()
    const writer = session(await catalogOn(bucket), "writer")
    await writer.createTool({ entrypoint: "slugify", source: slugify("-"), examples: slugExamples("-") })
    const first = await writer.publishTool("slugify")
    await writer.updateTool({ name: "slugify", source: slugify("_"), examples: slugExamples("_") })
    const second = await writer.publishTool("slugify")
    expect(second.provenance.updated_from).toBe(first.version_id)

    const operator = await catalogOn(bucket, { create: false })
    const readerCatalog = await catalogOn(bucket)
    const reader = session(readerCatalog, "reader")
    expect((await catalogError(reader.loadFromCatalog("slugify", { version: first.version_id }))).reason).toBe("NotApproved")
    await operator.review("slugify", first.version_id, "approved", "operator")
    await operator.review("slugify", second.version_id, "approved", "operator")
    await reader.loadFromCatalog("slugify", { version: first.version_id })
    expect(reader.definition("slugify").version_id).toBe(first.version_id)
    expect(await reader.callTool("slugify", { title: "Pinned Version" })).toBe("pinned-version")

    const watch = watching(readerCatalog, 1)
    await operator.review("slugify", second.version_id, "revoked", "operator")
    expect(await watch.done).toEqual([`slugify ${second.version_id} revoked operator`])
    watch.stop()
    expect((await catalogError(session(readerCatalog, "late").loadFromCatalog("slugify", { version: second.version_id }))).reason).toBe("Revoked")
    const late = session(readerCatalog, "late")
    await late.loadFromCatalog("slugify")
    expect(late.definition("slugify").version_id).toBe(first.version_id)
    expect(await reader.callTool("slugify", { title: "Still Here" })).toBe("still-here")
  })

  it("what others wrote into the bucket: a changed package is Tampered, an entry rewritten after its approval is proposed again, a review that does not decode approves nothing", async () => {
    const bucket = nextBucket()
    const host = await catalogOn(bucket, { approveOnPublish: true })
    const kv = await rawBucket(bucket)
    const one = version("tool_c", { "index.ts": "export const c = 1" })
    await host.publish(one.entry, one.pkg)
    await kv.put(`pkg.${one.entry.version_id}`, JSON.stringify({ ...one.pkg, files: { "index.ts": "export const c = 666" } }))
    expect((await catalogError(host.package(one.entry.version_id))).reason).toBe("Tampered")
    await kv.put(`pkg.${one.entry.version_id}`, "{\"not\":\"a package\"}")
    expect((await catalogError(host.package(one.entry.version_id))).reason).toBe("Invalid")

    expect((await host.entry("tool_c", one.entry.version_id)).status).toBe("approved")
    await kv.put(`entry.tool_c.${one.entry.version_id}`, JSON.stringify({ ...one.entry, dependencies: ["something_else"] }))
    expect(await host.entry("tool_c", one.entry.version_id)).toMatchObject({ status: "proposed", reviewed: null, dependencies: ["something_else"] })

    const two = version("tool_d", { "index.ts": "export const d = 1" })
    await host.publish(two.entry, two.pkg)
    await kv.put(`review.tool_d.${two.entry.version_id}`, JSON.stringify({ status: "approved", by: "someone" }))
    expect((await host.entry("tool_d", two.entry.version_id)).status).toBe("proposed")
    await kv.put(`entry.tool_e.${two.entry.version_id}`, JSON.stringify(two.entry))
    expect((await catalogError(host.entry("tool_e", two.entry.version_id))).reason).toBe("Invalid")

    const squatted = version("tool_g", { "index.ts": "export const g = 1" })
    await kv.put(`pkg.${squatted.entry.version_id}`, JSON.stringify({ ...squatted.pkg, files: { "index.ts": "export const g = 666" } }))
    await host.publish(squatted.entry, squatted.pkg)
    expect(await host.package(squatted.entry.version_id)).toEqual(squatted.pkg)

    const mismatched = version("tool_f", { "index.ts": "export const f = 1" })
    expect((await catalogError(host.publish(mismatched.entry, { ...mismatched.pkg, files: { "index.ts": "other" } }))).reason).toBe("Tampered")
    expect((await host.entries()).map((entry) => entry.name).sort()).toEqual(["tool_c", "tool_d", "tool_g"])
    expect((await catalogError(host.entries("bad.name"))).reason).toBe("Invalid")
  })

  it("an operator's catalog does not create the bucket: a namespace without one is NoCatalog", async () => {
    const error = await KvCatalog.open({ bucket: nextBucket(), create: false, connection: { servers: server!.url } }).then(() => undefined, (cause: unknown) => cause)
    expect(error).toMatchObject({ _tag: "CatalogError", reason: "NoCatalog" })
  })
})
