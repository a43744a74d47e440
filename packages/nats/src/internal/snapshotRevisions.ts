/**
 * Reading a session's key in a KV snapshot store: its newest revision (`load`), one revision the
 * bucket still keeps (`loadRevision`, what `rollback` saves again), and the revisions it keeps
 * (`history`, newest first). Deletes and purges are no revisions.
 */
import type { JitHarnessSnapshot } from "@jitbox/core"
import type { Ids } from "@jitbox/runtime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { type Bucket, sessionKey, snapshotError } from "./snapshotBucket.js"
import type { SnapshotChunks } from "./snapshotChunks.js"

/** One revision of a session's snapshot (the public `KvSnapshotStore.Revision`). */
interface Revision {
  readonly revision: number
  readonly createdAt: Date
}

export const load = (
  bucket: Bucket,
  chunks: SnapshotChunks,
  sessionId: Ids.SessionId
): Effect.Effect<Option.Option<JitHarnessSnapshot.JitHarnessSnapshot>, JitHarnessSnapshot.SnapshotError> => {
  const key = sessionKey(sessionId)
  return Effect.flatMap(bucket.get(key), (entry) =>
    entry === null || entry.operation !== "PUT"
      ? Effect.succeed(Option.none())
      : Effect.map(chunks.read(sessionId, entry, bucket.where(key)), Option.some))
}

export const loadRevision = (
  bucket: Bucket,
  chunks: SnapshotChunks,
  sessionId: Ids.SessionId,
  revision: number
): Effect.Effect<JitHarnessSnapshot.JitHarnessSnapshot, JitHarnessSnapshot.SnapshotError> =>
  Effect.gen(function*() {
    const key = sessionKey(sessionId)
    if (!Number.isSafeInteger(revision) || revision < 1) {
      return yield* Effect.fail(snapshotError("Invalid", `a revision is a positive integer, got ${String(revision)}`, bucket.where(key)))
    }
    const entry = yield* bucket.get(key, revision)
    if (entry === null || entry.operation !== "PUT") {
      return yield* Effect.fail(snapshotError("NotFound", `no revision ${revision} of session ${sessionId} is in the bucket`, bucket.where(key, revision)))
    }
    return yield* chunks.read(sessionId, entry, bucket.where(key, revision))
  })

export const history = (bucket: Bucket, sessionId: Ids.SessionId): Effect.Effect<ReadonlyArray<Revision>, JitHarnessSnapshot.SnapshotError> =>
  Effect.map(bucket.listed(sessionKey(sessionId)), (entries) =>
    entries
      .filter((entry) => entry.operation === "PUT")
      .map((entry): Revision => ({ revision: entry.revision, createdAt: entry.created }))
      .sort((a, b) => b.revision - a.revision))
