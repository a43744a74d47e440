/**
 * The runtime's `SessionOwnership` over a NATS JetStream KV bucket, shared by every host of a
 * deployment: one key per session (`session.<sessionId>`) holding the claim record
 * `{ v: 1, owner, expiresAt }`, in the package's KV record store (`internal/kvRecords.ts`): a claim
 * is `kv.create` or `kv.update` at the revision read, a renewal `kv.update`, a release `kv.delete`
 * at the claim's revision (leaving the key's delete marker), so the server decides which of two
 * hosts wins. nats-server 2.9 has no per-key TTL: the expiry is the timestamp in the record,
 * compared with the reader's Effect `Clock` (see the runtime's `SessionOwnership`). A value that
 * is not a claim record (garbage, or larger than 4 KiB) is no claim: a host takes the key over by
 * `kv.update` at the revision it read, so only one host wins it. `list` reads every claim record,
 * without writing or creating anything, for operators (`jitbox status`).
 *
 * @since 0.1.0
 */
import { HarnessError } from "@jitbox/core"
import { SessionOwnership } from "@jitbox/runtime"
import { type KV, Kvm } from "@nats-io/kv"
import type { NatsConnection as NatsClient } from "@nats-io/transport-node"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { detail } from "./internal/kvErrors.js"
import * as KvRecords from "./internal/kvRecords.js"
import * as NatsConnection from "./NatsConnection.js"

/** @since 0.1.0 @category models */
export interface KvSessionOwnershipOptions extends SessionOwnership.OwnershipOptions {
  /** The deployment's namespace: the bucket is `jitbox-owners-<namespace>` unless `bucket` is given. */
  readonly namespace?: string | undefined
  /** The bucket (letters, digits, `_` and `-`); one of `bucket` and `namespace` is required. */
  readonly bucket?: string | undefined
  /** Replicas of the bucket's stream in a cluster, when this creates it (default 1). */
  readonly replicas?: number | undefined
}

/** The default bucket of a namespace. @since 0.1.0 @category constructors */
export const bucketOf = (namespace: string): string => `jitbox-owners-${namespace}`

/** A claim record is a few dozen bytes; a larger value is not one. */
const maxRecordBytes = 4_096

const decodeClaim = Schema.decodeUnknownEither(SessionOwnership.ClaimHead)

/** The bucket's records: a release leaves the key's delete marker. */
const recordsOf = (kv: KV) => KvRecords.make(kv, { removal: "delete", maxValueBytes: maxRecordBytes })

/**
 * The service over an open bucket. Throws `ConfigError` for a bad `ttlMs`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromBucket = (kv: KV, options: SessionOwnership.OwnershipOptions = {}): SessionOwnership.SessionOwnershipShape =>
  SessionOwnership.fromRecordStore(recordsOf(kv), options)

/**
 * Opens (or creates) the bucket on an open connection.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromConnection = (
  nc: NatsClient,
  options: KvSessionOwnershipOptions
): Effect.Effect<SessionOwnership.SessionOwnershipShape, SessionOwnership.OwnershipError | HarnessError.ConfigError> =>
  Effect.gen(function*() {
    const bucket = options.bucket ?? (options.namespace === undefined ? undefined : bucketOf(options.namespace))
    if (bucket === undefined) {
      return yield* Effect.fail(new HarnessError.ConfigError({ option: "bucket", detail: "a KV session ownership needs a bucket or a namespace" }))
    }
    const kv = yield* Effect.tryPromise({
      try: () => new Kvm(nc).create(bucket, { history: 1, replicas: options.replicas ?? 1 }),
      catch: (error) =>
        new SessionOwnership.OwnershipError({ reason: "Unavailable", sessionId: "", detail: `cannot open the KV bucket '${bucket}': ${detail(error)}` })
    })
    return yield* Effect.try({ try: () => fromBucket(kv, options), catch: (error) => error as HarnessError.ConfigError })
  })

/**
 * The service on the process's `NatsConnection`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: KvSessionOwnershipOptions
): Effect.Effect<SessionOwnership.SessionOwnershipShape, SessionOwnership.OwnershipError | HarnessError.ConfigError, NatsConnection.NatsConnection> =>
  Effect.flatMap(NatsConnection.NatsConnection, ({ nc }) => fromConnection(nc, options))

/** @since 0.1.0 @category layers */
export const layer = (
  options: KvSessionOwnershipOptions
): Layer.Layer<SessionOwnership.SessionOwnership, SessionOwnership.OwnershipError | HarnessError.ConfigError, NatsConnection.NatsConnection> =>
  Layer.effect(SessionOwnership.SessionOwnership, make(options))

/** A claim as `list` reads it: the session, who holds it, and until when (epoch milliseconds). @since 0.1.0 @category models */
export interface Listed {
  readonly sessionId: string
  readonly ownerId: string
  readonly expiresAt: number
}

/**
 * The claim records of a bucket (at most `limit`), for operators: read only, so a bucket that does
 * not exist yet is not created and reads as none. Records that do not decode are left out; the
 * caller compares `expiresAt` with its clock to tell live claims from lapsed ones.
 *
 * @since 0.1.0
 * @category constructors
 */
export const list = (
  nc: NatsClient,
  options: { readonly namespace?: string | undefined; readonly bucket?: string | undefined; readonly limit: number }
): Effect.Effect<{ readonly claims: ReadonlyArray<Listed>; readonly truncated: boolean }, SessionOwnership.OwnershipError> => {
  const bucket = options.bucket ?? bucketOf(options.namespace ?? "")
  const unavailable = (why: string) =>
    new SessionOwnership.OwnershipError({ reason: "Unavailable", sessionId: "", detail: `cannot list the claims of '${bucket}': ${why}` })
  return Effect.gen(function*() {
    const records = recordsOf(yield* Effect.tryPromise({ try: () => new Kvm(nc).open(bucket), catch: (error) => unavailable(detail(error)) }))
    // a bucket that does not exist yet has no claims
    const keys = yield* Effect.catchIf(records.keys("session.", options.limit + 1), (error) => /stream not found/i.test(error.detail), () => Effect.succeed([]))
    const entries = yield* Effect.forEach(keys.slice(0, options.limit), (key) => Effect.map(records.get(key), (entry) => [key, decodeClaim(entry?.value)] as const))
    const claims = entries.flatMap(([key, record]) =>
      Either.isRight(record) ? [{ sessionId: key.slice("session.".length), ownerId: record.right.owner, expiresAt: record.right.expiresAt }] : []
    )
    return { claims, truncated: keys.length > options.limit }
  }).pipe(Effect.catchTag("RecordError", (error) => Effect.fail(unavailable(error.detail))))
}
