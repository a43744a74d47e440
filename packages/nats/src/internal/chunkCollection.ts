/**
 * The garbage collection of a KV snapshot store's chunks, and its purges. After a save, the
 * session's chunks that no revision still in the key's history names are purged from the stream
 * (leaving no delete marker), except those written less than `gcGraceMs` before the newest revision
 * (a save in flight of a second writer). `remove` purges the session's key and all its chunks.
 */
import type { JitHarnessSnapshot } from "@jitbox/core"
import type { Ids } from "@jitbox/runtime"
import type { JetStreamManager } from "@nats-io/jetstream"
import * as Effect from "effect/Effect"
import { type Bucket, chunkKey, io, type Listed, sessionKey } from "./snapshotBucket.js"
import { chunkConcurrency, type SnapshotChunks } from "./snapshotChunks.js"

export interface ChunkCollection {
  /** Purges the session's chunks that no revision in the history names (see the module comment). */
  readonly collect: (sessionId: Ids.SessionId) => Effect.Effect<void, JitHarnessSnapshot.SnapshotError>
  /** Purges the session's key, history included, and all its chunks. */
  readonly remove: (sessionId: Ids.SessionId) => Effect.Effect<void, JitHarnessSnapshot.SnapshotError>
}

interface Collector {
  readonly bucket: Bucket
  readonly chunks: SnapshotChunks
  readonly gcGraceMs: number
  readonly purge: (key: string) => Effect.Effect<unknown, JitHarnessSnapshot.SnapshotError>
}

/** The chunk keys the session's revisions still in the history name. */
const referenced = (collector: Collector, sessionId: Ids.SessionId, revisions: ReadonlyArray<Listed>) =>
  Effect.gen(function*() {
    const keys = new Set<string>()
    for (const revision of revisions) {
      if (revision.operation !== "PUT") continue
      for (const hash of yield* collector.chunks.chunksOf(sessionId, revision)) keys.add(chunkKey(sessionId, hash))
    }
    return keys
  })

const collect = (collector: Collector, sessionId: Ids.SessionId) =>
  Effect.gen(function*() {
    const latest = new Map<string, Listed>()
    for (const entry of yield* collector.bucket.listed(`chunk.${sessionId}.*`)) latest.set(entry.key, entry)
    if (latest.size === 0) return
    const revisions = yield* collector.bucket.listed(sessionKey(sessionId))
    const newest = Math.max(0, ...revisions.map((revision) => revision.created.getTime()))
    const named = yield* referenced(collector, sessionId, revisions)
    const garbage = [...latest.values()].filter((chunk) =>
      chunk.operation !== "PUT" || (!named.has(chunk.key) && chunk.created.getTime() < newest - collector.gcGraceMs)
    )
    yield* Effect.forEach(garbage, (chunk) => collector.purge(chunk.key), { concurrency: chunkConcurrency, discard: true })
  })

export const make = (
  bucket: Bucket,
  chunks: SnapshotChunks,
  jsm: JetStreamManager,
  options: { readonly stream: string; readonly gcGraceMs: number }
): ChunkCollection => {
  const purge = (key: string) =>
    io(bucket.where(key), "cannot purge", () => jsm.streams.purge(options.stream, { filter: `$KV.${bucket.name}.${key}` }))
  const collector: Collector = { bucket, chunks, gcGraceMs: options.gcGraceMs, purge }
  return {
    collect: (sessionId) => collect(collector, sessionId),
    remove: (sessionId) => Effect.asVoid(Effect.zipRight(purge(sessionKey(sessionId)), purge(`chunk.${sessionId}.>`)))
  }
}
