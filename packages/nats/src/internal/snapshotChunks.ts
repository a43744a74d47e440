/**
 * How a KV snapshot store lays a snapshot out in its bucket, and reads it back: a snapshot that
 * fits in a chunk is the session's key's value as it is; a larger one is cut into chunks stored
 * under content-addressed keys (their SHA-256), then a manifest naming them is stored under the
 * session's key, last. Reading checks the stored value's size, decodes the manifest with its schema
 * and checks its sizes before fetching a chunk, and checks every chunk's size and hash. The chunk
 * hashes of every revision read or written are remembered, for the collector (`chunksOf`).
 */
import { type JitHarnessSnapshot, ParseIssues } from "@jitbox/core"
import { type Ids, SnapshotStore } from "@jitbox/runtime"
import type { KvEntry } from "@nats-io/kv"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import { detail, isConflict } from "./kvErrors.js"
import { type Bucket, chunkKey, io, type Listed, sessionKey, snapshotError } from "./snapshotBucket.js"

/** The smallest chunk written, and the smallest a manifest may declare. */
export const minChunkBytes = 4_096

/** What readers fetch at once, and writers write at once. */
export const chunkConcurrency = 4

/** Manifests remembered per store (revisions never change, so they are never stale). */
const manifestCacheSize = 4_096

const manifestMarker = "{\"jitbox_chunked_snapshot\":1"
const markerBytes = new TextEncoder().encode(manifestMarker)
const startsWithMarker = (bytes: Uint8Array): boolean =>
  bytes.length >= markerBytes.length && markerBytes.every((byte, index) => bytes[index] === byte)

const Sha256 = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/))

/** What the session's key holds when its snapshot is chunked. */
const Manifest = Schema.Struct({
  jitbox_chunked_snapshot: Schema.Literal(1),
  bytes: Schema.Int.pipe(Schema.positive()),
  chunk_bytes: Schema.Int.pipe(Schema.greaterThanOrEqualTo(minChunkBytes)),
  chunks: Schema.Array(Sha256)
})
type Manifest = typeof Manifest.Type

const decodeManifest = Schema.decodeUnknownEither(Manifest, { onExcessProperty: "error" })

/** A manifest's JSON holds at most this many bytes for `count` chunks. */
export const manifestBytesFor = (count: number): number => 128 + count * (64 + 3)

const encoder = new TextEncoder()
const utf8 = new TextDecoder("utf-8", { fatal: true })

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

const decodeText = (bytes: Uint8Array, at: string) =>
  Effect.try({ try: () => utf8.decode(bytes), catch: () => snapshotError("Invalid", "the stored value is not UTF-8", at) })

/** The chunk hashes of each manifest revision read or written; `[]` for an inline snapshot. */
class ManifestCache {
  private readonly byRevision = new Map<string, ReadonlyArray<string>>()
  get(sessionId: Ids.SessionId, revision: number): ReadonlyArray<string> | undefined {
    return this.byRevision.get(`${sessionId}@${revision}`)
  }
  remember(sessionId: Ids.SessionId, revision: number, chunks: ReadonlyArray<string>): void {
    if (this.byRevision.size >= manifestCacheSize) this.byRevision.delete(this.byRevision.keys().next().value!)
    this.byRevision.set(`${sessionId}@${revision}`, chunks)
  }
}

/** What every function here works with. */
interface Layout {
  readonly bucket: Bucket
  readonly maxBytes: number
  readonly chunkBytes: number
  readonly manifests: ManifestCache
}

const parseManifest = (text: string, at: string, maxBytes: number): Effect.Effect<Manifest, JitHarnessSnapshot.SnapshotError> => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    return Effect.fail(snapshotError("Invalid", `the chunk manifest is not JSON: ${detail(error)}`, at))
  }
  const decoded = decodeManifest(parsed)
  if (Either.isLeft(decoded)) {
    return Effect.fail(snapshotError("Invalid", `not a chunk manifest: ${ParseIssues.describe(decoded.left, { limit: 300 })}`, at))
  }
  const manifest = decoded.right
  if (manifest.bytes > maxBytes) {
    return Effect.fail(snapshotError("Invalid", `the manifest declares ${manifest.bytes} bytes; this store reads at most ${maxBytes}`, at))
  }
  const count = Math.ceil(manifest.bytes / manifest.chunk_bytes)
  if (manifest.chunks.length !== count) {
    return Effect.fail(
      snapshotError("Invalid", `the manifest names ${manifest.chunks.length} chunks; ${manifest.bytes} bytes in chunks of ${manifest.chunk_bytes} are ${count}`, at)
    )
  }
  return Effect.succeed(manifest)
}

/** Chunk `index` of the manifest's, its size and hash checked, copied into `bytes`. */
const readChunk = (bucket: Bucket, sessionId: Ids.SessionId, manifest: Manifest, bytes: Uint8Array, hash: string, index: number) =>
  Effect.gen(function*() {
    const count = manifest.chunks.length
    const key = chunkKey(sessionId, hash)
    const entry = yield* bucket.get(key)
    if (entry === null || entry.operation !== "PUT") {
      return yield* Effect.fail(snapshotError("NotFound", `chunk ${index + 1} of ${count} is missing`, bucket.where(key)))
    }
    const offset = index * manifest.chunk_bytes
    const expected = Math.min(manifest.chunk_bytes, manifest.bytes - offset)
    if (entry.value.length !== expected) {
      return yield* Effect.fail(snapshotError("Invalid", `chunk ${index + 1} of ${count} is ${entry.value.length} bytes, not ${expected}`, bucket.where(key)))
    }
    if (sha256(entry.value) !== hash) {
      return yield* Effect.fail(snapshotError("Invalid", `chunk ${index + 1} of ${count} does not match its hash`, bucket.where(key)))
    }
    bytes.set(entry.value, offset)
  })

const assemble = (bucket: Bucket, sessionId: Ids.SessionId, manifest: Manifest) =>
  Effect.gen(function*() {
    const bytes = new Uint8Array(manifest.bytes)
    yield* Effect.forEach(manifest.chunks, (hash, index) => readChunk(bucket, sessionId, manifest, bytes, hash, index), {
      concurrency: chunkConcurrency,
      discard: true
    })
    return bytes
  })

/** The snapshot an entry of the session's key holds. */
const read = (layout: Layout, sessionId: Ids.SessionId, entry: KvEntry, at: string) =>
  Effect.gen(function*() {
    const { maxBytes, manifests } = layout
    if (entry.value.length > maxBytes) {
      return yield* Effect.fail(snapshotError("Invalid", `the stored value is ${entry.value.length} bytes; this store reads at most ${maxBytes}`, at))
    }
    const text = yield* decodeText(entry.value, at)
    if (!text.startsWith(manifestMarker)) {
      manifests.remember(sessionId, entry.revision, [])
      return yield* SnapshotStore.decode(text, at)
    }
    const manifest = yield* parseManifest(text, at, maxBytes)
    manifests.remember(sessionId, entry.revision, manifest.chunks)
    const json = yield* decodeText(yield* assemble(layout.bucket, sessionId, manifest), at)
    return yield* SnapshotStore.decode(json, at)
  })

const putChunk = (bucket: Bucket, sessionId: Ids.SessionId, hash: string, data: Uint8Array) => {
  const key = chunkKey(sessionId, hash)
  return Effect.tryPromise({
    // Content-addressed: a chunk already there holds these very bytes.
    try: () => bucket.kv.create(key, data).then(() => undefined, (error: unknown) => isConflict(error) ? undefined : Promise.reject(error)),
    catch: (error) => snapshotError("Io", `cannot write a chunk: ${detail(error)}`, bucket.where(key))
  })
}

/** Stores the JSON (chunks first, then the manifest) and answers the new revision. */
const write = (layout: Layout, sessionId: Ids.SessionId, json: string) =>
  Effect.gen(function*() {
    const { bucket, chunkBytes, manifests } = layout
    const key = sessionKey(sessionId)
    const bytes = encoder.encode(json)
    if (bytes.length <= chunkBytes) {
      const revision = yield* io(bucket.where(key), "cannot write", () => bucket.kv.put(key, bytes))
      manifests.remember(sessionId, revision, [])
      return revision
    }
    const chunks: Array<string> = []
    const distinct = new Map<string, Uint8Array>()
    for (let offset = 0; offset < bytes.length; offset += chunkBytes) {
      const chunk = bytes.slice(offset, offset + chunkBytes)
      const hash = sha256(chunk)
      chunks.push(hash)
      distinct.set(hash, chunk)
    }
    yield* Effect.forEach(distinct, ([hash, chunk]) => putChunk(bucket, sessionId, hash, chunk), { concurrency: chunkConcurrency, discard: true })
    const manifest: Manifest = { jitbox_chunked_snapshot: 1, bytes: bytes.length, chunk_bytes: chunkBytes, chunks }
    const revision = yield* io(bucket.where(key), "cannot write the manifest", () => bucket.kv.put(key, JSON.stringify(manifest)))
    manifests.remember(sessionId, revision, chunks)
    return revision
  })

/** The chunks a revision of the session's key names, reading it unless known or too large to be a manifest. */
const chunksOf = (layout: Layout, sessionId: Ids.SessionId, revision: Listed) =>
  Effect.gen(function*() {
    const { bucket, maxBytes, manifests } = layout
    const known = manifests.get(sessionId, revision.revision)
    if (known !== undefined) return known
    if (revision.length > manifestBytesFor(Math.ceil(maxBytes / minChunkBytes))) return []
    const entry = yield* bucket.get(revision.key, revision.revision)
    if (entry === null || entry.operation !== "PUT") return []
    const chunks: ReadonlyArray<string> = startsWithMarker(entry.value)
      ? yield* Effect.map(
        Effect.flatMap(decodeText(entry.value, ""), (json) => parseManifest(json, "", maxBytes)),
        (manifest) => manifest.chunks
      ).pipe(Effect.orElseSucceed(() => []))
      : []
    manifests.remember(sessionId, revision.revision, chunks)
    return chunks
  })

export interface SnapshotChunks {
  /** The snapshot an entry of the session's key holds, its chunks fetched and checked. */
  readonly read: (
    sessionId: Ids.SessionId,
    entry: KvEntry,
    at: string
  ) => Effect.Effect<JitHarnessSnapshot.JitHarnessSnapshot, JitHarnessSnapshot.SnapshotError>
  /** Stores the snapshot's JSON (chunks first, then the manifest) and answers the new revision. */
  readonly write: (sessionId: Ids.SessionId, json: string) => Effect.Effect<number, JitHarnessSnapshot.SnapshotError>
  /** The chunk hashes a listed revision of the session's key names (none when it cannot be read). */
  readonly chunksOf: (sessionId: Ids.SessionId, revision: Listed) => Effect.Effect<ReadonlyArray<string>, JitHarnessSnapshot.SnapshotError>
}

export const make = (bucket: Bucket, options: { readonly maxBytes: number; readonly chunkBytes: number }): SnapshotChunks => {
  const layout: Layout = { bucket, maxBytes: options.maxBytes, chunkBytes: options.chunkBytes, manifests: new ManifestCache() }
  return {
    read: (sessionId, entry, at) => read(layout, sessionId, entry, at),
    write: (sessionId, json) => write(layout, sessionId, json),
    chunksOf: (sessionId, revision) => chunksOf(layout, sessionId, revision)
  }
}
