/**
 * How a KV catalog stores a published version's package under `pkg.<version_id>`: as its JSON when
 * that fits in one message, else cut into chunks stored first under `pkg.<version_id>.<sha256>`
 * and then a manifest naming them under `pkg.<version_id>`, last (a reader never sees part of a
 * package). Packages are content-addressed: a package already stored under its version id that
 * reads back whole and checked is left as it is; anything else there (garbage a principal with
 * the same rights wrote first) is written over.
 *
 * Reading trusts nothing in the bucket: the value is bounded, a manifest is decoded and its sizes
 * checked before any chunk is fetched, every chunk must have its declared size and hash, the whole
 * is decoded with `CatalogPackage`, and its content address must be the key's version id
 * (`CatalogError` Tampered otherwise).
 */
import { ParseIssues, SharedCatalog } from "@jitbox/core"
import type { KV } from "@nats-io/kv"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import { catalogIo, invalid } from "./catalogRecords.js"

/** Chunks fetched or written at once. */
const concurrency = 4

const manifestMarker = "{\"jitbox_chunked_package\":1"

const Manifest = Schema.Struct({
  jitbox_chunked_package: Schema.Literal(1),
  bytes: Schema.Int.pipe(Schema.positive()),
  chunk_bytes: Schema.Int.pipe(Schema.greaterThanOrEqualTo(1_024)),
  chunks: Schema.Array(Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/)))
})
type Manifest = typeof Manifest.Type

const decodeManifest = Schema.decodeUnknownEither(Schema.parseJson(Manifest), { onExcessProperty: "error" })
const decodePackage = Schema.decodeUnknownEither(Schema.parseJson(SharedCatalog.CatalogPackage))

const encoder = new TextEncoder()
const utf8 = new TextDecoder("utf-8", { fatal: true })
const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

export const packageKey = (versionId: string): string => `pkg.${versionId}`
const chunkKey = (versionId: string, hash: string): string => `pkg.${versionId}.${hash}`

export interface Limits {
  /** The largest package read or written. */
  readonly maxBytes: number
  /** The largest value one message holds (the chunk size). */
  readonly chunkBytes: number
}

/** Runs `tasks` at most `concurrency` at a time. */
const inBatches = async <A>(items: ReadonlyArray<A>, task: (item: A, index: number) => Promise<void>): Promise<void> => {
  for (let start = 0; start < items.length; start += concurrency) {
    await Promise.all(items.slice(start, start + concurrency).map((item, offset) => task(item, start + offset)))
  }
}

const put = (kv: KV, key: string, bytes: Uint8Array): Promise<void> => kv.put(key, bytes).then(() => undefined)

/** Stores the package (chunks first, then the manifest), unless it is stored already and reads back checked. */
export const write = (kv: KV, bucket: string, pkg: SharedCatalog.CatalogPackage, limits: Limits): Promise<void> =>
  catalogIo(bucket, packageKey(pkg.version_id), "cannot write the package", async () => {
    const bytes = encoder.encode(JSON.stringify(pkg))
    if (bytes.length > limits.maxBytes) {
      throw invalid(pkg.version_id, `the package is ${bytes.length} bytes; this catalog stores at most ${limits.maxBytes}`)
    }
    if (await read(kv, bucket, pkg.version_id, limits).then(() => true, () => false)) return
    if (bytes.length <= limits.chunkBytes) return put(kv, packageKey(pkg.version_id), bytes)
    const chunks: Array<Uint8Array> = []
    for (let offset = 0; offset < bytes.length; offset += limits.chunkBytes) chunks.push(bytes.slice(offset, offset + limits.chunkBytes))
    const hashes = chunks.map(sha256)
    await inBatches(chunks, (chunk, index) => put(kv, chunkKey(pkg.version_id, hashes[index]!), chunk))
    const manifest: Manifest = { jitbox_chunked_package: 1, bytes: bytes.length, chunk_bytes: limits.chunkBytes, chunks: hashes }
    return put(kv, packageKey(pkg.version_id), encoder.encode(JSON.stringify(manifest)))
  })

const checkedManifest = (versionId: string, text: string, limits: Limits): Manifest => {
  const decoded = decodeManifest(text)
  if (Either.isLeft(decoded)) throw invalid(versionId, `not a package manifest: ${ParseIssues.describe(decoded.left, { limit: 300 })}`)
  const manifest = decoded.right
  if (manifest.bytes > limits.maxBytes) throw invalid(versionId, `the manifest declares ${manifest.bytes} bytes; this catalog reads at most ${limits.maxBytes}`)
  if (manifest.chunks.length !== Math.ceil(manifest.bytes / manifest.chunk_bytes)) {
    throw invalid(versionId, `the manifest names ${manifest.chunks.length} chunks for ${manifest.bytes} bytes in chunks of ${manifest.chunk_bytes}`)
  }
  return manifest
}

const assemble = async (kv: KV, versionId: string, manifest: Manifest): Promise<Uint8Array> => {
  const bytes = new Uint8Array(manifest.bytes)
  await inBatches(manifest.chunks, async (hash, index) => {
    const entry = await kv.get(chunkKey(versionId, hash))
    const offset = index * manifest.chunk_bytes
    const expected = Math.min(manifest.chunk_bytes, manifest.bytes - offset)
    if (entry === null || entry.operation !== "PUT") throw notFound(versionId, `chunk ${index + 1} of ${manifest.chunks.length} is missing`)
    if (entry.value.length !== expected || sha256(entry.value) !== hash) {
      throw tampered(versionId, `chunk ${index + 1} of ${manifest.chunks.length} is not the bytes its manifest names`)
    }
    bytes.set(entry.value, offset)
  })
  return bytes
}

const notFound = (versionId: string, detail: string) => new SharedCatalog.CatalogError({ name: versionId, reason: "NotFound", detail })
const tampered = (versionId: string, detail: string) => new SharedCatalog.CatalogError({ name: versionId, reason: "Tampered", detail })

const text = (versionId: string, bytes: Uint8Array): string => {
  try {
    return utf8.decode(bytes)
  } catch {
    throw invalid(versionId, "the stored package is not UTF-8")
  }
}

/** The package stored for `versionId`, checked against its content address. */
export const read = (kv: KV, bucket: string, versionId: string, limits: Limits): Promise<SharedCatalog.CatalogPackage> =>
  catalogIo(bucket, packageKey(versionId), "cannot read the package", async () => {
    const entry = await kv.get(packageKey(versionId))
    if (entry === null || entry.operation !== "PUT") throw notFound(versionId, "no package stored under this version id")
    if (entry.value.length > limits.maxBytes) throw invalid(versionId, `the stored package is ${entry.value.length} bytes; this catalog reads at most ${limits.maxBytes}`)
    const stored = text(versionId, entry.value)
    const json = stored.startsWith(manifestMarker) ? text(versionId, await assemble(kv, versionId, checkedManifest(versionId, stored, limits))) : stored
    const decoded = decodePackage(json)
    if (Either.isLeft(decoded)) throw invalid(versionId, `not a catalog package: ${ParseIssues.describe(decoded.left, { limit: 300 })}`)
    const pkg = decoded.right
    if (pkg.version_id !== versionId || SharedCatalog.contentAddress(pkg) !== versionId) {
      throw tampered(versionId, "the package stored under this version id is not the content it names")
    }
    return pkg
  })
