/**
 * The coordinator's `Ledger` in a NATS JetStream KV bucket (`@nats-io/kv`). Each record is one key;
 * a write is a compare-and-set on the key's revision (`kv.create` for a new key, `kv.update` with
 * the revision read), so two coordinators, or one restarted mid-write, never both win and a
 * grant is counted once. The bucket outlives every coordinator process: a restarted coordinator
 * reads the spent budgets and live leases back.
 *
 * A removal (the coordinator's ledger compaction) is `kv.purge` at the revision read (a
 * compare-and-set too: a record written meanwhile is not removed). nats-server 2.9 has no per-key
 * TTL (a bucket's `max_age` would expire live records as well), and a purge leaves a marker
 * message of a few bytes under the key, which `keys` never lists; with `reclaim`, the removal then
 * purges the key's subject up to that marker (`$JS.API.STREAM.PURGE` with the marker's sequence,
 * so a write that came after it stays), and the bucket keeps nothing of the removed record. Without
 * the permission to purge the stream, the marker stays and the removal still succeeds.
 *
 * @since 0.1.0
 */
import type { NatsConnection as NatsClient } from "@nats-io/transport-node"
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream"
import { type KV, Kvm } from "@nats-io/kv"
import { Ledger } from "@jitbox/runtime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { detail, isConflict } from "./internal/kvErrors.js"
import * as NatsConnection from "./NatsConnection.js"

/** @since 0.1.0 @category models */
export interface KvLedgerOptions {
  /** The bucket (default `jitbox-ledger-<namespace>`): letters, digits, `_` and `-`. */
  readonly bucket: string
  /** Replicas of the bucket's stream in a cluster (default 1). */
  readonly replicas?: number | undefined
}

/** The default bucket of a namespace. @since 0.1.0 @category constructors */
export const bucketOf = (namespace: string): string => `jitbox-ledger-${namespace}`

const encoder = new TextEncoder()

/** What removing a record's marker needs: the stream's manager and the bucket's name. @since 0.1.0 @category models */
export interface Reclaim {
  readonly jsm: JetStreamManager
  readonly bucket: string
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

/**
 * A `Ledger` over `kv`; with `reclaim`, a removal leaves nothing in the bucket.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromBucket = (kv: KV, reclaim?: Reclaim): Ledger.LedgerShape => ({
  get: (key) =>
    Effect.tryPromise({
      try: () => kv.get(key),
      catch: (error) => new Ledger.LedgerError({ reason: "Unavailable", key, detail: detail(error) })
    }).pipe(
      Effect.flatMap((entry) => {
        if (entry === null || entry.operation !== "PUT") return Effect.succeed(undefined)
        return Effect.try({
          try: () => ({ value: entry.json<unknown>(), revision: entry.revision }),
          catch: (error) => new Ledger.LedgerError({ reason: "Unavailable", key, detail: `the record does not parse: ${detail(error)}` })
        })
      })
    ),
  put: (key, value, expected) =>
    Effect.tryPromise({
      try: () => {
        const data = encoder.encode(JSON.stringify(value))
        return expected === 0 ? kv.create(key, data) : kv.update(key, data, expected)
      },
      catch: (error) =>
        new Ledger.LedgerError({
          reason: isConflict(error) ? "Conflict" : "Unavailable",
          key,
          detail: isConflict(error) ? `the record moved past revision ${expected}` : detail(error)
        })
    }),
  remove: (key, expected) =>
    Effect.tryPromise({
      try: () => kv.purge(key, { previousSeq: expected }),
      catch: (error) =>
        new Ledger.LedgerError({
          reason: isConflict(error) ? "Conflict" : "Unavailable",
          key,
          detail: isConflict(error) ? `the record moved past revision ${expected}` : detail(error)
        })
    }).pipe(Effect.zipRight(reclaim === undefined ? Effect.void : Effect.promise(() => reclaimMarker(kv, reclaim, key)))),
  keys: (prefix, limit) =>
    Effect.tryPromise({
      try: async () => {
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
      },
      catch: (error) => new Ledger.LedgerError({ reason: "Unavailable", key: prefix, detail: `cannot list the keys: ${detail(error)}` })
    })
})

/**
 * Opens (or creates) the bucket on an open connection.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (nc: NatsClient, options: KvLedgerOptions): Effect.Effect<Ledger.LedgerShape, Ledger.LedgerError> =>
  Effect.tryPromise({
    try: async () => {
      const kv = await new Kvm(nc).create(options.bucket, { history: 1, replicas: options.replicas ?? 1 })
      return fromBucket(kv, { jsm: await jetstreamManager(nc), bucket: options.bucket })
    },
    catch: (error) => new Ledger.LedgerError({ reason: "Unavailable", key: "", detail: `cannot open the KV bucket '${options.bucket}': ${detail(error)}` })
  })

/**
 * The ledger in a KV bucket, on the process's `NatsConnection`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: KvLedgerOptions): Layer.Layer<Ledger.Ledger, Ledger.LedgerError, NatsConnection.NatsConnection> =>
  Layer.effect(Ledger.Ledger, Effect.flatMap(NatsConnection.NatsConnection, ({ nc }) => make(nc, options)))
