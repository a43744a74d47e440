/**
 * Session snapshots in a NATS JetStream KV bucket (`@nats-io/kv`): the runtime's `SnapshotStore`,
 * whose bucket also keeps each session's last `history` revisions (default 16), offered as
 * `history`, `loadRevision` and `rollback` on the `KvSnapshotStore` service.
 *
 * A session's snapshot is the key `snapshot.<sessionId>` (a session id is one subject token, so
 * every valid id makes a valid key). A snapshot that fits in one message (the server's
 * `max_payload`, or the bucket's `max_msg_size` if smaller, less room for headers) is stored as
 * it is: the JSON `JitHarnessSnapshot.toJson` writes, as the memory and file stores keep it. A
 * larger one is cut into chunks, stored first under content-addressed keys
 * `chunk.<sessionId>.<sha256>`, and then a small manifest (`{"jitbox_chunked_snapshot":1,…}`
 * naming them) is stored under the session's key, last: a reader sees the old snapshot or the new
 * one, never part of one, and a crash mid-write leaves the previous one readable. A manifest only
 * ever names chunks of its own session.
 *
 * Reading trusts nothing in the bucket: the stored value is bounded by `maxBytes` (default 64 MiB,
 * as the other stores), a manifest is decoded with its schema and its sizes checked before any
 * chunk is fetched, every chunk must have its declared size and hash, and the whole is decoded with
 * the snapshot's schema. Every failure is a `SnapshotError`: `NotFound` for a missing revision or
 * chunk, `Invalid` for a value that does not decode, `Io` for NATS.
 *
 * Chunks are collected after each save: those of the session that no revision still in the
 * bucket's history names are purged from the stream (leaving no delete marker), so every revision
 * `history` lists loads. A chunk written less than `gcGraceMs` (default 60 s, by the server's
 * timestamps) before the newest revision is kept until a later save, so that a second writer of
 * the same session (what `SessionOwnership` prevents) does not lose the chunks of a save in flight.
 * `remove` purges the session's key and all its chunks, history included.
 *
 * @since 0.1.0
 */
import { JitHarnessSnapshot, ParseIssues } from "@jitbox/core"
import { Ids, SnapshotStore } from "@jitbox/runtime"
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream"
import { type KV, type KvEntry, Kvm } from "@nats-io/kv"
import type { NatsConnection as NatsClient } from "@nats-io/transport-node"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import { detail, isConflict } from "./internal/kvErrors.js"
import { openScoped, runPromise } from "./internal/promise.js"
import * as NatsConnection from "./NatsConnection.js"

/** @since 0.1.0 @category models */
export interface KvSnapshotStoreOptions extends SnapshotStore.StoreOptions {
  /** The deployment's namespace: the bucket is `jitbox-snapshots-<namespace>` unless `bucket` is given. */
  readonly namespace?: string | undefined
  /** The bucket (letters, digits, `_` and `-`); one of `bucket` and `namespace` is required. */
  readonly bucket?: string | undefined
  /** Revisions the bucket keeps per key when this store creates it (1–64, default 16); an existing bucket keeps its own. */
  readonly history?: number | undefined
  /** Replicas of the bucket's stream in a cluster, when this store creates it (default 1). */
  readonly replicas?: number | undefined
  /** The size of a chunk (default: the largest value one message holds); at least 4 KiB. */
  readonly chunkBytes?: number | undefined
  /** How long an unreferenced chunk is kept after it was written, against the newest revision (default 60 000 ms). */
  readonly gcGraceMs?: number | undefined
}

/** One revision of a session's snapshot, as `history` lists it. @since 0.1.0 @category models */
export interface Revision {
  /** The bucket's revision (the stream sequence): what `loadRevision` and `rollback` take. */
  readonly revision: number
  /** When the server stored it. */
  readonly createdAt: Date
}

/** @since 0.1.0 @category models */
export interface KvSnapshotStoreShape extends SnapshotStore.SnapshotStoreShape {
  readonly bucket: string
  /** The session's revisions still in the bucket, newest first (at most the bucket's `history`); none after `remove`. */
  readonly history: (sessionId: Ids.SessionId) => Effect.Effect<ReadonlyArray<Revision>, JitHarnessSnapshot.SnapshotError>
  /** The snapshot as revision `revision` stored it; `NotFound` when that is no revision of the session's (any longer). */
  readonly loadRevision: (
    sessionId: Ids.SessionId,
    revision: number
  ) => Effect.Effect<JitHarnessSnapshot.JitHarnessSnapshot, JitHarnessSnapshot.SnapshotError>
  /** Stores the snapshot of an older revision as the newest one (a `save` of it); answers the new revision. */
  readonly rollback: (sessionId: Ids.SessionId, revision: number) => Effect.Effect<number, JitHarnessSnapshot.SnapshotError>
}

/** The KV store with its history. @since 0.1.0 @category tags */
export class KvSnapshotStore extends Context.Tag("@jitbox/nats/KvSnapshotStore")<KvSnapshotStore, KvSnapshotStoreShape>() {}

/** The default bucket of a namespace. @since 0.1.0 @category constructors */
export const bucketOf = (namespace: string): string => `jitbox-snapshots-${namespace}`

/** @since 0.1.0 @category constants */
export const defaults = {
  history: 16,
  gcGraceMs: 60_000,
  /** The smallest chunk written, and the smallest a manifest may declare. */
  minChunkBytes: 4_096,
  /** Kept free of a message for its headers. */
  headroomBytes: 4_096
} as const

/** The KV limit on revisions kept per key. */
const maxHistory = 64
/** Until the server's `INFO` says otherwise: the nats-server default. */
const defaultMaxPayload = 1_048_576
/** What readers fetch at once. */
const chunkConcurrency = 4
/** Manifests remembered per store (revisions never change, so they are never stale). */
const manifestCacheSize = 4_096
/** Entries one history listing reads at most: more means the bucket is not ours to collect. */
const maxListed = 100_000

const manifestMarker = "{\"jitbox_chunked_snapshot\":1"
const markerBytes = new TextEncoder().encode(manifestMarker)
const startsWithMarker = (bytes: Uint8Array): boolean =>
  bytes.length >= markerBytes.length && markerBytes.every((byte, index) => bytes[index] === byte)

const Sha256 = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/))

/** What the session's key holds when its snapshot is chunked. */
const Manifest = Schema.Struct({
  jitbox_chunked_snapshot: Schema.Literal(1),
  bytes: Schema.Int.pipe(Schema.positive()),
  chunk_bytes: Schema.Int.pipe(Schema.greaterThanOrEqualTo(defaults.minChunkBytes)),
  chunks: Schema.Array(Sha256)
})
type Manifest = typeof Manifest.Type

const decodeManifest = Schema.decodeUnknownEither(Manifest, { onExcessProperty: "error" })

/** A manifest's JSON holds at most this many bytes for `count` chunks. */
const manifestBytesFor = (count: number): number => 128 + count * (64 + 3)

const encoder = new TextEncoder()
const utf8 = new TextDecoder("utf-8", { fatal: true })

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

const snapshotError = (reason: JitHarnessSnapshot.SnapshotError["reason"], detailText: string, where?: string) =>
  new JitHarnessSnapshot.SnapshotError({ reason, detail: detailText, ...(where === undefined ? {} : { path: where }) })

const io = <A>(where: string, what: string, run: () => Promise<A>): Effect.Effect<A, JitHarnessSnapshot.SnapshotError> =>
  Effect.tryPromise({ try: run, catch: (error) => snapshotError("Io", `${what}: ${detail(error)}`, where) })

const firstIssue = (error: ParseResult.ParseError): string => ParseIssues.describe(error, { limit: 300 })

const checkOptions = (options: KvSnapshotStoreOptions): Effect.Effect<{ bucket: string; history: number }, JitHarnessSnapshot.SnapshotError> =>
  Effect.suspend(() => {
    const bucket = options.bucket ?? (options.namespace === undefined ? undefined : bucketOf(options.namespace))
    if (bucket === undefined) return Effect.fail(snapshotError("Invalid", "a KV snapshot store needs a bucket or a namespace"))
    if (!/^[-\w]+$/.test(bucket)) return Effect.fail(snapshotError("Invalid", `the bucket name ${JSON.stringify(bucket)} holds characters other than letters, digits, "_" and "-"`))
    const history = options.history ?? defaults.history
    if (!Number.isSafeInteger(history) || history < 1 || history > maxHistory) {
      return Effect.fail(snapshotError("Invalid", `history must be an integer from 1 to ${maxHistory}, got ${String(options.history)}`))
    }
    return Effect.succeed({ bucket, history })
  })

interface Listed {
  readonly key: string
  readonly revision: number
  readonly created: Date
  readonly length: number
  readonly operation: KvEntry["operation"]
}

/**
 * A store over an open bucket. `jsm` purges chunks; `maxPayload` is the server's.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromBucket = (
  kv: KV,
  jsm: JetStreamManager,
  options: {
    readonly bucket: string
    readonly stream: string
    readonly maxBytes: number
    readonly chunkBytes: number
    readonly gcGraceMs: number
  }
): KvSnapshotStoreShape => {
  const { bucket, stream, maxBytes, chunkBytes, gcGraceMs } = options
  const sessionKey = (sessionId: Ids.SessionId) => `snapshot.${sessionId}`
  const chunkKey = (sessionId: Ids.SessionId, hash: string) => `chunk.${sessionId}.${hash}`
  const where = (key: string, revision?: number) => `kv:${bucket}/${key}${revision === undefined ? "" : `@${revision}`}`
  const subjectOf = (key: string) => `$KV.${bucket}.${key}`

  /** The chunk hashes of each manifest revision read or written here; `[]` for an inline snapshot. */
  const manifests = new Map<string, ReadonlyArray<string>>()
  const remember = (sessionId: Ids.SessionId, revision: number, chunks: ReadonlyArray<string>) => {
    if (manifests.size >= manifestCacheSize) manifests.delete(manifests.keys().next().value!)
    manifests.set(`${sessionId}@${revision}`, chunks)
  }

  /** Every stored message of the keys `filter` matches, headers only (values are not fetched). */
  const listed = (filter: string): Effect.Effect<ReadonlyArray<Listed>, JitHarnessSnapshot.SnapshotError> =>
    io(where(filter), "cannot list the history", async () => {
      // `headers_only` is read by the client's `history` though its type omits it: without it,
      // the listing would carry every value.
      const iterator = await kv.history({ key: filter, headers_only: true } as Parameters<KV["history"]>[0])
      const out: Array<Listed> = []
      for await (const entry of iterator) {
        out.push({ key: entry.key, revision: entry.revision, created: entry.created, length: entry.length, operation: entry.operation })
        if (out.length > maxListed) {
          iterator.stop()
          throw new Error(`more than ${maxListed} entries`)
        }
      }
      return out
    })

  const get = (key: string, revision?: number) =>
    io(where(key, revision), "cannot read", () => revision === undefined ? kv.get(key) : kv.get(key, { revision }))

  const decodeText = (bytes: Uint8Array, at: string) =>
    Effect.try({ try: () => utf8.decode(bytes), catch: () => snapshotError("Invalid", "the stored value is not UTF-8", at) })

  const parseManifest = (text: string, at: string): Effect.Effect<Manifest, JitHarnessSnapshot.SnapshotError> => {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (error) {
      return Effect.fail(snapshotError("Invalid", `the chunk manifest is not JSON: ${detail(error)}`, at))
    }
    const decoded = decodeManifest(parsed)
    if (Either.isLeft(decoded)) return Effect.fail(snapshotError("Invalid", `not a chunk manifest: ${firstIssue(decoded.left)}`, at))
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

  const assemble = (sessionId: Ids.SessionId, manifest: Manifest) =>
    Effect.gen(function*() {
      const bytes = new Uint8Array(manifest.bytes)
      const count = manifest.chunks.length
      yield* Effect.forEach(manifest.chunks, (hash, index) =>
        Effect.gen(function*() {
          const key = chunkKey(sessionId, hash)
          const entry = yield* get(key)
          if (entry === null || entry.operation !== "PUT") {
            return yield* Effect.fail(snapshotError("NotFound", `chunk ${index + 1} of ${count} is missing`, where(key)))
          }
          const offset = index * manifest.chunk_bytes
          const expected = Math.min(manifest.chunk_bytes, manifest.bytes - offset)
          if (entry.value.length !== expected) {
            return yield* Effect.fail(snapshotError("Invalid", `chunk ${index + 1} of ${count} is ${entry.value.length} bytes, not ${expected}`, where(key)))
          }
          if (sha256(entry.value) !== hash) {
            return yield* Effect.fail(snapshotError("Invalid", `chunk ${index + 1} of ${count} does not match its hash`, where(key)))
          }
          bytes.set(entry.value, offset)
        }), { concurrency: chunkConcurrency, discard: true })
      return bytes
    })

  /** The snapshot an entry of the session's key holds. */
  const read = (sessionId: Ids.SessionId, entry: KvEntry, at: string) =>
    Effect.gen(function*() {
      if (entry.value.length > maxBytes) {
        return yield* Effect.fail(snapshotError("Invalid", `the stored value is ${entry.value.length} bytes; this store reads at most ${maxBytes}`, at))
      }
      const text = yield* decodeText(entry.value, at)
      if (!text.startsWith(manifestMarker)) {
        remember(sessionId, entry.revision, [])
        return yield* SnapshotStore.decode(text, at)
      }
      const manifest = yield* parseManifest(text, at)
      remember(sessionId, entry.revision, manifest.chunks)
      const json = yield* decodeText(yield* assemble(sessionId, manifest), at)
      return yield* SnapshotStore.decode(json, at)
    })

  const load = (sessionId: Ids.SessionId) => {
    const key = sessionKey(sessionId)
    return Effect.flatMap(get(key), (entry) =>
      entry === null || entry.operation !== "PUT"
        ? Effect.succeed(Option.none())
        : Effect.map(read(sessionId, entry, where(key)), Option.some))
  }

  const loadRevision = (sessionId: Ids.SessionId, revision: number) =>
    Effect.gen(function*() {
      const key = sessionKey(sessionId)
      if (!Number.isSafeInteger(revision) || revision < 1) {
        return yield* Effect.fail(snapshotError("Invalid", `a revision is a positive integer, got ${String(revision)}`, where(key)))
      }
      const entry = yield* get(key, revision)
      if (entry === null || entry.operation !== "PUT") {
        return yield* Effect.fail(snapshotError("NotFound", `no revision ${revision} of session ${sessionId} is in the bucket`, where(key, revision)))
      }
      return yield* read(sessionId, entry, where(key, revision))
    })

  const purge = (key: string) => io(where(key), "cannot purge", () => jsm.streams.purge(stream, { filter: subjectOf(key) }))

  /** The chunks a revision of the session's key names, reading it unless known or too large to be a manifest. */
  const chunksOf = (sessionId: Ids.SessionId, revision: Listed) =>
    Effect.gen(function*() {
      const known = manifests.get(`${sessionId}@${revision.revision}`)
      if (known !== undefined) return known
      if (revision.length > manifestBytesFor(Math.ceil(maxBytes / defaults.minChunkBytes))) return []
      const entry = yield* get(revision.key, revision.revision)
      if (entry === null || entry.operation !== "PUT") return []
      const chunks = startsWithMarker(entry.value)
        ? yield* Effect.map(
          Effect.flatMap(decodeText(entry.value, ""), (json) => parseManifest(json, "")),
          (manifest) => manifest.chunks
        ).pipe(Effect.orElseSucceed(() => []))
        : []
      remember(sessionId, revision.revision, chunks)
      return chunks
    })

  /** Purges the session's chunks that no revision in the history names (see the module comment). */
  const collect = (sessionId: Ids.SessionId) =>
    Effect.gen(function*() {
      const latest = new Map<string, Listed>()
      for (const entry of yield* listed(`chunk.${sessionId}.*`)) latest.set(entry.key, entry)
      if (latest.size === 0) return
      const revisions = yield* listed(sessionKey(sessionId))
      const newest = Math.max(0, ...revisions.map((revision) => revision.created.getTime()))
      const referenced = new Set<string>()
      for (const revision of revisions) {
        if (revision.operation !== "PUT") continue
        for (const hash of yield* chunksOf(sessionId, revision)) referenced.add(chunkKey(sessionId, hash))
      }
      const garbage = [...latest.values()].filter((chunk) =>
        chunk.operation !== "PUT" || (!referenced.has(chunk.key) && chunk.created.getTime() < newest - gcGraceMs)
      )
      yield* Effect.forEach(garbage, (chunk) => purge(chunk.key), { concurrency: chunkConcurrency, discard: true })
    })

  const putChunk = (sessionId: Ids.SessionId, hash: string, data: Uint8Array) => {
    const key = chunkKey(sessionId, hash)
    return Effect.tryPromise({
      // Content-addressed: a chunk already there holds these very bytes.
      try: () => kv.create(key, data).then(() => undefined, (error: unknown) => isConflict(error) ? undefined : Promise.reject(error)),
      catch: (error) => snapshotError("Io", `cannot write a chunk: ${detail(error)}`, where(key))
    })
  }

  /** Stores the JSON (chunks first, then the manifest) and answers the new revision. */
  const write = (sessionId: Ids.SessionId, json: string) =>
    Effect.gen(function*() {
      const key = sessionKey(sessionId)
      const bytes = encoder.encode(json)
      if (bytes.length <= chunkBytes) {
        const revision = yield* io(where(key), "cannot write", () => kv.put(key, bytes))
        remember(sessionId, revision, [])
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
      yield* Effect.forEach(distinct, ([hash, chunk]) => putChunk(sessionId, hash, chunk), { concurrency: chunkConcurrency, discard: true })
      const manifest: Manifest = { jitbox_chunked_snapshot: 1, bytes: bytes.length, chunk_bytes: chunkBytes, chunks }
      const revision = yield* io(where(key), "cannot write the manifest", () => kv.put(key, JSON.stringify(manifest)))
      remember(sessionId, revision, chunks)
      return revision
    })

  const saveRevision = (sessionId: Ids.SessionId, snapshot: JitHarnessSnapshot.JitHarnessSnapshot) =>
    Effect.gen(function*() {
      const json = yield* SnapshotStore.encode(sessionId, snapshot, maxBytes)
      const revision = yield* write(sessionId, json)
      // The snapshot is stored; a collection that fails is done again by the next save.
      yield* collect(sessionId).pipe(
        Effect.catchAll((error) => Effect.logDebug(`chunks of ${sessionId} not collected: ${error.message}`))
      )
      return revision
    })

  const history = (sessionId: Ids.SessionId) =>
    Effect.map(listed(sessionKey(sessionId)), (entries) =>
      entries
        .filter((entry) => entry.operation === "PUT")
        .map((entry): Revision => ({ revision: entry.revision, createdAt: entry.created }))
        .sort((a, b) => b.revision - a.revision))

  const remove = (sessionId: Ids.SessionId) =>
    Effect.zipRight(purge(sessionKey(sessionId)), purge(`chunk.${sessionId}.>`))

  return {
    bucket,
    load,
    save: (sessionId, snapshot) => Effect.asVoid(saveRevision(sessionId, snapshot)),
    remove,
    history,
    loadRevision,
    rollback: (sessionId, revision) => Effect.flatMap(loadRevision(sessionId, revision), (snapshot) => saveRevision(sessionId, snapshot))
  }
}

/**
 * Opens (or creates) the bucket on an open connection.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromConnection = (
  nc: NatsClient,
  options: KvSnapshotStoreOptions
): Effect.Effect<KvSnapshotStoreShape, JitHarnessSnapshot.SnapshotError> =>
  Effect.gen(function*() {
    const maxBytes = yield* SnapshotStore.maxBytesOf(options)
    const { bucket, history } = yield* checkOptions(options)
    const at = `kv:${bucket}`
    const kv = yield* io(at, "cannot open the KV bucket", () => new Kvm(nc).create(bucket, { history, replicas: options.replicas ?? 1 }))
    const jsm = yield* io(at, "cannot reach JetStream", () => jetstreamManager(nc))
    const status = yield* io(at, "cannot read the bucket's status", () => kv.status())
    const maxMessage = Math.min(nc.info?.max_payload ?? defaultMaxPayload, status.maxValueSize > 0 ? status.maxValueSize : Infinity)
    const largest = maxMessage - defaults.headroomBytes
    const chunkBytes = options.chunkBytes ?? largest
    if (!Number.isSafeInteger(chunkBytes) || chunkBytes < defaults.minChunkBytes || chunkBytes > largest) {
      return yield* Effect.fail(
        snapshotError("Invalid", `chunkBytes must be an integer from ${defaults.minChunkBytes} to ${largest} (a message holds ${maxMessage} bytes), got ${chunkBytes}`, at)
      )
    }
    if (manifestBytesFor(Math.ceil(maxBytes / chunkBytes)) > chunkBytes) {
      return yield* Effect.fail(snapshotError("Invalid", `chunks of ${chunkBytes} bytes are too small for snapshots of ${maxBytes}: their manifest would not fit in one`, at))
    }
    const gcGraceMs = options.gcGraceMs ?? defaults.gcGraceMs
    if (!Number.isFinite(gcGraceMs) || gcGraceMs < 0) {
      return yield* Effect.fail(snapshotError("Invalid", `gcGraceMs must be a non-negative number, got ${gcGraceMs}`, at))
    }
    return fromBucket(kv, jsm, { bucket, stream: status.streamInfo.config.name, maxBytes, chunkBytes, gcGraceMs })
  })

/**
 * The store on the process's `NatsConnection`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: KvSnapshotStoreOptions
): Effect.Effect<KvSnapshotStoreShape, JitHarnessSnapshot.SnapshotError, NatsConnection.NatsConnection> =>
  Effect.flatMap(NatsConnection.NatsConnection, ({ nc }) => fromConnection(nc, options))

/**
 * The runtime's `SnapshotStore`, and the same store as `KvSnapshotStore` (its history), on the
 * process's `NatsConnection`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: KvSnapshotStoreOptions
): Layer.Layer<SnapshotStore.SnapshotStore | KvSnapshotStore, JitHarnessSnapshot.SnapshotError, NatsConnection.NatsConnection> =>
  Layer.effectContext(Effect.map(make(options), (store) => Context.make(SnapshotStore.SnapshotStore, store).pipe(Context.add(KvSnapshotStore, store))))

/** What `open` takes: the store's options and the connection it opens for itself. @since 0.1.0 @category models */
export interface KvSnapshotStoreConnectionOptions extends KvSnapshotStoreOptions {
  readonly connection: NatsConnection.NatsConnectionOptions
}

/** The store for async code: rejections are the typed errors themselves. @since 0.1.0 @category models */
export interface Handle {
  readonly bucket: string
  /** The session's snapshot, or `undefined` when none is stored. */
  readonly load: (sessionId: string) => Promise<JitHarnessSnapshot.JitHarnessSnapshot | undefined>
  readonly save: (sessionId: string, snapshot: JitHarnessSnapshot.JitHarnessSnapshot) => Promise<void>
  readonly remove: (sessionId: string) => Promise<void>
  readonly history: (sessionId: string) => Promise<ReadonlyArray<Revision>>
  readonly loadRevision: (sessionId: string, revision: number) => Promise<JitHarnessSnapshot.JitHarnessSnapshot>
  readonly rollback: (sessionId: string, revision: number) => Promise<number>
  /** Closes the connection; safe to call twice. */
  readonly close: () => Promise<void>
}

/**
 * Opens the store on a connection of its own, for async code. A bad session id rejects with the
 * runtime's `ConfigError`, a store failure with `SnapshotError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = async (options: KvSnapshotStoreConnectionOptions): Promise<Handle> => {
  const { close, value: store } = await openScoped(
    Effect.flatMap(NatsConnection.make(options.connection), ({ nc }) => fromConnection(nc, options))
  )
  const id = (sessionId: string) => Effect.sync(() => Ids.sessionId(sessionId))
  return {
    bucket: store.bucket,
    load: (sessionId) => runPromise(Effect.flatMap(id(sessionId), store.load).pipe(Effect.map(Option.getOrUndefined))),
    save: (sessionId, snapshot) => runPromise(Effect.flatMap(id(sessionId), (sid) => store.save(sid, snapshot))),
    remove: (sessionId) => runPromise(Effect.flatMap(id(sessionId), store.remove)),
    history: (sessionId) => runPromise(Effect.flatMap(id(sessionId), store.history)),
    loadRevision: (sessionId, revision) => runPromise(Effect.flatMap(id(sessionId), (sid) => store.loadRevision(sid, revision))),
    rollback: (sessionId, revision) => runPromise(Effect.flatMap(id(sessionId), (sid) => store.rollback(sid, revision))),
    close
  }
}
