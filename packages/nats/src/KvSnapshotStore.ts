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
 * This module composes the store; its parts are in `internal/`: `snapshotBucket` (keys, reads),
 * `snapshotChunks` (the layout, its writing and checked reading), `snapshotRevisions` (`load`,
 * `loadRevision`, `history`) and `chunkCollection` (the collection and `remove`).
 *
 * @since 0.1.0
 */
import type { JitHarnessSnapshot } from "@jitbox/core"
import { Ids, SnapshotStore } from "@jitbox/runtime"
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream"
import { type KV, Kvm } from "@nats-io/kv"
import type { NatsConnection as NatsClient } from "@nats-io/transport-node"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ChunkCollection from "./internal/chunkCollection.js"
import { openScoped, runPromise } from "./internal/promise.js"
import * as SnapshotBucket from "./internal/snapshotBucket.js"
import { io, snapshotError } from "./internal/snapshotBucket.js"
import * as SnapshotChunks from "./internal/snapshotChunks.js"
import { manifestBytesFor } from "./internal/snapshotChunks.js"
import * as SnapshotRevisions from "./internal/snapshotRevisions.js"
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
  minChunkBytes: SnapshotChunks.minChunkBytes,
  /** Kept free of a message for its headers. */
  headroomBytes: 4_096
} as const

/** The KV limit on revisions kept per key. */
const maxHistory = 64
/** Until the server's `INFO` says otherwise: the nats-server default. */
const defaultMaxPayload = 1_048_576

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
  const bucket = SnapshotBucket.make(kv, options.bucket)
  const chunks = SnapshotChunks.make(bucket, options)
  const collection = ChunkCollection.make(bucket, chunks, jsm, options)

  const saveRevision = (sessionId: Ids.SessionId, snapshot: JitHarnessSnapshot.JitHarnessSnapshot) =>
    Effect.gen(function*() {
      const json = yield* SnapshotStore.encode(sessionId, snapshot, options.maxBytes)
      const revision = yield* chunks.write(sessionId, json)
      // The snapshot is stored; a collection that fails is done again by the next save.
      yield* collection.collect(sessionId).pipe(
        Effect.catchAll((error) => Effect.logDebug(`chunks of ${sessionId} not collected: ${error.message}`))
      )
      return revision
    })
  const loadRevision = (sessionId: Ids.SessionId, revision: number) => SnapshotRevisions.loadRevision(bucket, chunks, sessionId, revision)

  return {
    bucket: options.bucket,
    load: (sessionId) => SnapshotRevisions.load(bucket, chunks, sessionId),
    save: (sessionId, snapshot) => Effect.asVoid(saveRevision(sessionId, snapshot)),
    remove: collection.remove,
    history: (sessionId) => SnapshotRevisions.history(bucket, sessionId),
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
