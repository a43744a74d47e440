/**
 * The runtime's `RecordStore` over an open JetStream KV bucket, for `KvLedger` and
 * `KvSessionOwnership`: a record is one key holding JSON; a write is `kv.create` (revision 0) or
 * `kv.update` at the revision read, a removal `kv.delete` or `kv.purge` with `previousSeq`, so the
 * server decides every race. A key whose last message is a marker reads as missing, unlisted. A
 * value that is not JSON reads as its text, one over `maxValueBytes` as `null`: the reader's
 * schema refuses either, and the next write replaces it at its revision. With `reclaim`, a removal
 * then purges the key's subject up to its marker (`$JS.API.STREAM.PURGE` with the marker's
 * sequence, so a later write stays); without the permission to, the marker stays.
 */
import type { JetStreamManager } from "@nats-io/jetstream"
import type { KV } from "@nats-io/kv"
import { RecordStore } from "@jitbox/runtime"
import * as Effect from "effect/Effect"
import { detail, isConflict } from "./kvErrors.js"

/** What removing a record's marker needs: the stream's manager and the bucket's name. */
export interface Reclaim {
  readonly jsm: JetStreamManager
  readonly bucket: string
}

export interface KvRecordsOptions {
  /** `delete` leaves a delete marker under the key; `purge` a purge marker, and none of the key's history. */
  readonly removal: "delete" | "purge"
  /** A larger value is not read (default: no bound). */
  readonly maxValueBytes?: number | undefined
  /** With it, a removal purges its marker too. */
  readonly reclaim?: Reclaim | undefined
}

const decoder = new TextDecoder()

/** A stored value as a record's value: parsed, or left as text for the reader's schema to refuse. */
const parse = (bytes: Uint8Array, maxValueBytes: number): unknown => {
  if (bytes.length > maxValueBytes) return null
  const text = decoder.decode(bytes)
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const unavailable = (key: string, what = "") => (error: unknown) => new RecordStore.RecordError({ reason: "Unavailable", key, detail: `${what}${detail(error)}` })

const writeError = (key: string, expected: number) => (error: unknown) =>
  isConflict(error)
    ? new RecordStore.RecordError({ reason: "Conflict", key, detail: `the record moved past revision ${expected}` })
    : unavailable(key)(error)

const listKeys = async (kv: KV, prefix: string, limit: number): Promise<Array<string>> => {
  const found: Array<string> = []
  // a key is dot-separated tokens: `session.` lists as `session.>`
  const keys = await kv.keys(prefix.endsWith(".") ? `${prefix}>` : prefix === "" ? ">" : prefix)
  for await (const key of keys) {
    if (found.length >= limit) {
      keys.stop()
      break
    }
    found.push(key)
  }
  return found
}

/** Purges the marker a removal left under `key`, up to its own sequence; failures leave the marker. */
const reclaimMarker = async (kv: KV, reclaim: Reclaim, key: string): Promise<void> => {
  try {
    const marker = await kv.get(key)
    if (marker === null || marker.operation === "PUT") return
    await reclaim.jsm.streams.purge(`KV_${reclaim.bucket}`, { filter: `$KV.${reclaim.bucket}.${key}`, seq: marker.revision + 1 })
  } catch {
    // the marker stays: a few bytes, never listed
  }
}

/** The store over `kv`. */
export const make = (kv: KV, options: KvRecordsOptions): RecordStore.RecordStore => {
  const maxValueBytes = options.maxValueBytes ?? Number.POSITIVE_INFINITY
  const { reclaim } = options
  return {
    get: (key) =>
      Effect.map(Effect.tryPromise({ try: () => kv.get(key), catch: unavailable(key) }), (entry) =>
        entry === null || entry.operation !== "PUT" ? undefined : { value: parse(entry.value, maxValueBytes), revision: entry.revision }),
    put: (key, value, expected) =>
      Effect.tryPromise({
        try: () => expected === 0 ? kv.create(key, JSON.stringify(value)) : kv.update(key, JSON.stringify(value), expected),
        catch: writeError(key, expected)
      }),
    remove: (key, expected) =>
      Effect.tryPromise({ try: () => kv[options.removal](key, { previousSeq: expected }), catch: writeError(key, expected) }).pipe(
        Effect.zipRight(reclaim === undefined ? Effect.void : Effect.promise(() => reclaimMarker(kv, reclaim, key)))
      ),
    keys: (prefix, limit) => Effect.tryPromise({ try: () => listKeys(kv, prefix, limit), catch: unavailable(prefix, "cannot list the keys: ") })
  }
}
