/**
 * The runtime's `RecordStore` over an open JetStream KV bucket: what `KvLedger` and
 * `KvSessionOwnership` keep their records in. A record is one key holding JSON. A write is a
 * compare-and-set on the key's revision (`kv.create` for a new key, `kv.update` at the revision
 * read), a removal too (`kv.delete` or `kv.purge` with `previousSeq`), so the server decides every
 * race. A key whose last message is a delete or purge marker reads as missing and is not listed.
 *
 * A value that is not JSON reads as its text, and one larger than `maxValueBytes` as `null`: the
 * reader's schema refuses either, and the next write replaces it at its revision.
 *
 * With `reclaim`, a removal then purges the key's subject up to its marker (`$JS.API.STREAM.PURGE`
 * with the marker's sequence, so a write that came after it stays) and the bucket keeps nothing of
 * the removed record; without the permission to purge the stream, the marker stays.
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
  readonly reclaim?: Reclaim | undefined
}

const encoder = new TextEncoder()
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

const writeError = (key: string, expected: number) => (error: unknown) =>
  new RecordStore.RecordError(
    isConflict(error)
      ? { reason: "Conflict", key, detail: `the record moved past revision ${expected}` }
      : { reason: "Unavailable", key, detail: detail(error) }
  )

/** A key is dot-separated tokens: the prefix `session.` lists as `session.>`. */
const filterOf = (prefix: string): string => prefix.endsWith(".") ? `${prefix}>` : prefix === "" ? ">" : prefix

const listKeys = async (kv: KV, prefix: string, limit: number): Promise<Array<string>> => {
  const found: Array<string> = []
  const keys = await kv.keys(filterOf(prefix))
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
  const removeAt = (key: string, expected: number) =>
    options.removal === "purge" ? kv.purge(key, { previousSeq: expected }) : kv.delete(key, { previousSeq: expected })
  return {
    get: (key) =>
      Effect.tryPromise({
        try: () => kv.get(key),
        catch: (error) => new RecordStore.RecordError({ reason: "Unavailable", key, detail: detail(error) })
      }).pipe(Effect.map((entry) =>
        entry === null || entry.operation !== "PUT" ? undefined : { value: parse(entry.value, maxValueBytes), revision: entry.revision }
      )),
    put: (key, value, expected) =>
      Effect.tryPromise({
        try: () => {
          const data = encoder.encode(JSON.stringify(value))
          return expected === 0 ? kv.create(key, data) : kv.update(key, data, expected)
        },
        catch: writeError(key, expected)
      }),
    remove: (key, expected) =>
      Effect.tryPromise({ try: () => removeAt(key, expected), catch: writeError(key, expected) }).pipe(
        Effect.zipRight(reclaim === undefined ? Effect.void : Effect.promise(() => reclaimMarker(kv, reclaim, key)))
      ),
    keys: (prefix, limit) =>
      Effect.tryPromise({
        try: () => listKeys(kv, prefix, limit),
        catch: (error) => new RecordStore.RecordError({ reason: "Unavailable", key: prefix, detail: `cannot list the keys: ${detail(error)}` })
      })
  }
}
