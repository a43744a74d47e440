/**
 * The records of a KV catalog besides packages: an entry `entry.<name>.<version_id>` (the JSON of
 * the `PublishedTool` as published, `proposed` and unreviewed) and its review
 * `review.<name>.<version_id>` (`{status, by, at, entry_sha256}`), written by different principals.
 * An entry's status is its review's when the review names the SHA-256 of the entry's stored bytes,
 * else `proposed`: an entry rewritten after its review is not what was approved.
 */
import { ParseIssues, SharedCatalog } from "@jitbox/core"
import type { KV, KvEntry } from "@nats-io/kv"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import { detail } from "./kvErrors.js"

/** The largest review read. */
export const maxReviewBytes = 4_096

export const Review = Schema.Struct({
  status: Schema.Literal("approved", "revoked"),
  by: Schema.String.pipe(Schema.maxLength(256)),
  at: Schema.Int.pipe(Schema.nonNegative()),
  /** The SHA-256 of the entry's stored bytes this review is about. */
  entry_sha256: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/))
})
export type Review = typeof Review.Type

const decodeEntry = Schema.decodeUnknownEither(Schema.parseJson(SharedCatalog.PublishedTool))
const decodeReview = Schema.decodeUnknownEither(Schema.parseJson(Review))

export const entryKey = (name: string, versionId: string): string => `entry.${name}.${versionId}`
export const reviewKey = (name: string, versionId: string): string => `review.${name}.${versionId}`

/** The name and version id of an `entry.` or `review.` key; `undefined` for any other key. */
export const partsOf = (key: string): { readonly name: string; readonly versionId: string } | undefined => {
  const match = /^(?:entry|review)\.([^.]+)\.([^.]+)$/.exec(key)
  return match === null ? undefined : { name: match[1]!, versionId: match[2]! }
}

export const invalid = (name: string, text: string) => new SharedCatalog.CatalogError({ name, reason: "Invalid", detail: text })

/** Runs `run`; a failure that is not already a `CatalogError` is one (`NoCatalog`: the bucket cannot be used) naming where. */
export const catalogIo = async <A>(bucket: string, key: string, what: string, run: () => Promise<A>): Promise<A> => {
  try {
    return await run()
  } catch (error) {
    if (error instanceof SharedCatalog.CatalogError) throw error
    throw new SharedCatalog.CatalogError({ name: key, reason: "NoCatalog", detail: `kv:${bucket}/${key}: ${what}: ${detail(error)}` })
  }
}

export const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

const utf8 = new TextDecoder("utf-8", { fatal: true })

/** A stored record's JSON, bounded by `maxBytes`. */
const textOf = (entry: KvEntry, maxBytes: number): string => {
  if (entry.value.length > maxBytes) throw invalid(entry.key, `the stored value is ${entry.value.length} bytes; this catalog reads at most ${maxBytes}`)
  try {
    return utf8.decode(entry.value)
  } catch {
    throw invalid(entry.key, "the stored value is not UTF-8")
  }
}

/** A stored entry: what was published, and the hash a review names. */
export interface StoredEntry {
  readonly entry: SharedCatalog.PublishedTool
  readonly sha256: string
}

/** The entry an `entry.` record holds; its key must name it. */
export const readEntry = (record: KvEntry, maxBytes: number): StoredEntry => {
  const decoded = decodeEntry(textOf(record, maxBytes))
  if (Either.isLeft(decoded)) throw invalid(record.key, `not a catalog entry: ${ParseIssues.describe(decoded.left, { limit: 300 })}`)
  const entry = decoded.right
  if (record.key !== entryKey(entry.name, entry.version_id)) throw invalid(record.key, `the key holds the entry of ${entry.name} ${entry.version_id}`)
  return { entry, sha256: sha256(record.value) }
}

/** The review a `review.` record holds; `undefined` for one that does not decode (it reviews nothing). */
export const readReview = (record: KvEntry | null): Review | undefined => {
  if (record === null || record.operation !== "PUT" || record.value.length > maxReviewBytes) return undefined
  const decoded = decodeReview(record.string())
  return Either.isRight(decoded) ? decoded.right : undefined
}

/** The entry as its review makes it. */
export const withReview = (stored: StoredEntry, review: Review | undefined): SharedCatalog.PublishedTool =>
  review === undefined || review.entry_sha256 !== stored.sha256
    ? { ...stored.entry, status: "proposed", reviewed: null }
    : { ...stored.entry, status: review.status, reviewed: { by: review.by, at: review.at } }

/** Every key `filter` matches, at most `limit` (more is `Invalid`: the bucket is not a catalog this reads). */
export const keysOf = async (kv: KV, filter: string, limit: number): Promise<Array<string>> => {
  const keys: Array<string> = []
  const iterator = await kv.keys(filter)
  for await (const key of iterator) {
    keys.push(key)
    if (keys.length > limit) {
      iterator.stop()
      throw invalid(filter, `more than ${limit} keys`)
    }
  }
  return keys
}
