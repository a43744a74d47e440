/**
 * The runtime's `SessionOwnership` over a NATS JetStream KV bucket, shared by every host of a
 * deployment: one key per session (`session.<sessionId>`) holding the claim record
 * `{ v: 1, owner, expiresAt }`. Every write is a compare-and-set on the key's revision (`kv.create`
 * for a new claim, `kv.update` with the revision read for a take-over or a renewal, `kv.delete`
 * with the expected revision for a release), so the server itself decides which of two hosts wins.
 * nats-server 2.9 has no per-key TTL: the expiry is the timestamp in the record, compared with
 * the reader's Effect `Clock` (see the runtime's `SessionOwnership` for what that asks of clocks).
 * A value that is not a claim record (garbage, or larger than any record can be) is no claim: a
 * host takes the key over by `kv.update` on the revision it read, so only one host wins it.
 * A release leaves the key's delete marker (the bucket keeps one revision per key). `list` reads
 * every claim record, without writing or creating anything, for operators (`jitbox status`).
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
  const prefix = "session."
  const unavailable = (error: unknown) =>
    new SessionOwnership.OwnershipError({ reason: "Unavailable", sessionId: "", detail: `cannot list the claims of '${bucket}': ${detail(error)}` })
  return Effect.gen(function*() {
    const records = recordsOf(yield* Effect.tryPromise({ try: () => new Kvm(nc).open(bucket), catch: unavailable }))
    const keys = yield* records.keys(prefix, options.limit + 1).pipe(
      Effect.catchIf((error) => /stream not found/i.test(error.detail), () => Effect.succeed([])),
      Effect.mapError((error) => unavailable(error.detail))
    )
    const claims = yield* Effect.forEach(keys.slice(0, options.limit), (key) =>
      Effect.map(Effect.mapError(records.get(key), (error) => unavailable(error.detail)), (entry): ReadonlyArray<Listed> => {
        const record = decodeClaim(entry?.value)
        return Either.isRight(record) ? [{ sessionId: key.slice(prefix.length), ownerId: record.right.owner, expiresAt: record.right.expiresAt }] : []
      }))
    return { claims: claims.flat(), truncated: keys.length > options.limit }
  })
}
