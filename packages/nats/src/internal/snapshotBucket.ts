/**
 * The bucket a KV snapshot store works on, as the store's parts share it: the keys of a session
 * (`snapshot.<sessionId>`, `chunk.<sessionId>.<sha256>`), where a failure happened
 * (`kv:<bucket>/<key>@<revision>`), and the reads every part makes (one entry; the headers of a
 * key filter's history), each failing with a `SnapshotError`.
 */
import { JitHarnessSnapshot } from "@jitbox/core"
import type { Ids } from "@jitbox/runtime"
import type { KV, KvEntry } from "@nats-io/kv"
import * as Effect from "effect/Effect"
import { detail } from "./kvErrors.js"

/** Entries one history listing reads at most: more means the bucket is not ours to collect. */
const maxListed = 100_000

export const snapshotError = (reason: JitHarnessSnapshot.SnapshotError["reason"], detailText: string, where?: string) =>
  new JitHarnessSnapshot.SnapshotError({ reason, detail: detailText, ...(where === undefined ? {} : { path: where }) })

export const io = <A>(where: string, what: string, run: () => Promise<A>): Effect.Effect<A, JitHarnessSnapshot.SnapshotError> =>
  Effect.tryPromise({ try: run, catch: (error) => snapshotError("Io", `${what}: ${detail(error)}`, where) })

/** The key of the session's snapshot (its manifest, when chunked). */
export const sessionKey = (sessionId: Ids.SessionId): string => `snapshot.${sessionId}`

/** The key of one chunk of the session's, by its content's hash. */
export const chunkKey = (sessionId: Ids.SessionId, hash: string): string => `chunk.${sessionId}.${hash}`

/** The headers of one stored message, as a history listing reads them. */
export interface Listed {
  readonly key: string
  readonly revision: number
  readonly created: Date
  readonly length: number
  readonly operation: KvEntry["operation"]
}

export interface Bucket {
  readonly kv: KV
  readonly name: string
  /** Where a failure on `key` (at `revision`) happened, for a `SnapshotError`'s path. */
  readonly where: (key: string, revision?: number) => string
  /** The key's newest entry, or its entry at `revision`; `null` when none. */
  readonly get: (key: string, revision?: number) => Effect.Effect<KvEntry | null, JitHarnessSnapshot.SnapshotError>
  /** Every stored message of the keys `filter` matches, headers only (values are not fetched). */
  readonly listed: (filter: string) => Effect.Effect<ReadonlyArray<Listed>, JitHarnessSnapshot.SnapshotError>
}

const listHeaders = (kv: KV, filter: string) => async (): Promise<ReadonlyArray<Listed>> => {
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
}

export const make = (kv: KV, name: string): Bucket => {
  const where = (key: string, revision?: number) => `kv:${name}/${key}${revision === undefined ? "" : `@${revision}`}`
  return {
    kv,
    name,
    where,
    get: (key, revision) => io(where(key, revision), "cannot read", () => revision === undefined ? kv.get(key) : kv.get(key, { revision })),
    listed: (filter) => io(where(filter), "cannot list the history", listHeaders(kv, filter))
  }
}
