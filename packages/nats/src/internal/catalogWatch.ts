/**
 * A KV catalog's `watch`: a KV watch of `review.>` that reports, for each review written after
 * the call, the entry as that review makes it. The watch starts asynchronously: the stream's last
 * sequence is read first, every review stored after it is reported, and of those stored before
 * (which the watch delivers first, as the keys' last values) the ones whose `at` is not earlier
 * than the call, so a review written while the watch was being set up is not missed.
 */
import type { SharedCatalog } from "@jitbox/core"
import type { KV, KvWatchEntry } from "@nats-io/kv"
import * as Records from "./catalogRecords.js"

export interface WatchOptions {
  /** When `watch` was called (the reviews' clock). */
  readonly since: number
  /** The entry with its current review. */
  readonly entry: (name: string, versionId: string) => Promise<SharedCatalog.PublishedTool>
  readonly listener: (entry: SharedCatalog.PublishedTool) => void
}

const report = async (change: KvWatchEntry, before: number, options: WatchOptions): Promise<void> => {
  const parts = Records.partsOf(change.key)
  const review = Records.readReview(change)
  if (parts === undefined || review === undefined) return
  if (change.revision <= before && review.at < options.since) return
  const entry = await options.entry(parts.name, parts.versionId).catch(() => undefined)
  if (entry !== undefined) options.listener(entry)
}

/** Watches until the returned function is called; a watch that cannot start or breaks reports nothing more. */
export const watch = (kv: KV, options: WatchOptions): () => void => {
  let stopped = false
  let stop: (() => void) | undefined
  void (async () => {
    const before = (await kv.status()).streamInfo.state.last_seq
    const changes = await kv.watch({ key: "review.>", ignoreDeletes: true })
    stop = () => changes.stop()
    if (stopped) return changes.stop()
    // one at a time, so that the listener sees the reviews in the order they were written
    for await (const change of changes) await report(change, before, options)
  })().catch(() => undefined)
  return () => {
    stopped = true
    stop?.()
  }
}
