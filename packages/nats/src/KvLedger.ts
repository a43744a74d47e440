/**
 * The coordinator's `Ledger` in a NATS JetStream KV bucket (`@nats-io/kv`). Each record is one key;
 * a write is a compare-and-set on the key's revision (`kv.create` for a new key, `kv.update` with
 * the revision read), so two coordinators, or one restarted mid-write, never both win and a
 * grant is counted once. The bucket outlives every coordinator process: a restarted coordinator
 * reads the spent budgets and live leases back.
 *
 * A removal (the coordinator's ledger compaction) is `kv.purge` at the revision read (a
 * compare-and-set too). nats-server 2.9 has no per-key TTL (a bucket's `max_age` would expire live
 * records as well); `make` also purges the marker a removal leaves (`reclaim`, see
 * `internal/kvRecords.ts`), so the bucket keeps nothing of the removed record.
 *
 * @since 0.1.0
 */
import type { NatsConnection as NatsClient } from "@nats-io/transport-node"
import { jetstreamManager } from "@nats-io/jetstream"
import { type KV, Kvm } from "@nats-io/kv"
import { Ledger } from "@jitbox/runtime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { detail } from "./internal/kvErrors.js"
import * as KvRecords from "./internal/kvRecords.js"
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

/** What removing a record's marker needs: the stream's manager and the bucket's name. @since 0.1.0 @category models */
export type Reclaim = KvRecords.Reclaim

/**
 * A `Ledger` over `kv`; with `reclaim`, a removal leaves nothing in the bucket.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromBucket = (kv: KV, reclaim?: Reclaim): Ledger.LedgerShape =>
  Ledger.fromRecords(KvRecords.make(kv, { removal: "purge", reclaim }))

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
