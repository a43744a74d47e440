/**
 * The coordinator's `Ledger` in a NATS JetStream KV bucket (`@nats-io/kv`). Each record is one key;
 * a write is a compare-and-set on the key's revision (`kv.create` for a new key, `kv.update` with
 * the revision read), so two coordinators, or one restarted mid-write, never both win and a
 * grant is counted once. The bucket outlives every coordinator process: a restarted coordinator
 * reads the spent budgets and live leases back.
 *
 * @since 0.1.0
 */
import type { NatsConnection as NatsClient } from "@nats-io/transport-node"
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

/**
 * A `Ledger` over `kv`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromBucket = (kv: KV): Ledger.LedgerShape => ({
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
    try: () => new Kvm(nc).create(options.bucket, { history: 1, replicas: options.replicas ?? 1 }),
    catch: (error) => new Ledger.LedgerError({ reason: "Unavailable", key: "", detail: `cannot open the KV bucket '${options.bucket}': ${detail(error)}` })
  }).pipe(Effect.map(fromBucket))

/**
 * The ledger in a KV bucket, on the process's `NatsConnection`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: KvLedgerOptions): Layer.Layer<Ledger.Ledger, Ledger.LedgerError, NatsConnection.NatsConnection> =>
  Layer.effect(Ledger.Ledger, Effect.flatMap(NatsConnection.NatsConnection, ({ nc }) => make(nc, options)))
