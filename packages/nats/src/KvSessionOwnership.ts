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
import { detail, isConflict } from "./internal/kvErrors.js"
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

const decoder = new TextDecoder()
const decodeClaim = Schema.decodeUnknownEither(SessionOwnership.ClaimHead)

/**
 * The service over an open bucket. Throws `ConfigError` for a bad `ttlMs`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromBucket = (kv: KV, options: SessionOwnership.OwnershipOptions = {}): SessionOwnership.SessionOwnershipShape => {
  const keyOf = (sessionId: string) => `session.${sessionId}`
  const unavailable = (sessionId: string, what: string) => (error: unknown) =>
    new SessionOwnership.OwnershipError({ reason: "Unavailable", sessionId, detail: `${what}: ${detail(error)}` })
  return SessionOwnership.fromRecords({
    get: (sessionId) =>
      Effect.flatMap(
        Effect.tryPromise({ try: () => kv.get(keyOf(sessionId)), catch: unavailable(sessionId, "cannot read the claim") }),
        (entry) => {
          if (entry === null || entry.operation !== "PUT") return Effect.succeed(undefined)
          // Larger than any claim record: not read, and no claim (the next claim replaces it).
          if (entry.value.length > maxRecordBytes) return Effect.succeed({ value: null, revision: entry.revision })
          const text = decoder.decode(entry.value)
          let value: unknown = text
          try {
            value = JSON.parse(text)
          } catch {
            // Left as text: the record's schema refuses it.
          }
          return Effect.succeed({ value, revision: entry.revision })
        }
      ),
    put: (sessionId, value, expected) =>
      Effect.tryPromise({
        try: () => {
          const data = JSON.stringify(value)
          const written = expected === 0 ? kv.create(keyOf(sessionId), data) : kv.update(keyOf(sessionId), data, expected)
          return written.then((revision): number | undefined => revision, (error: unknown) => isConflict(error) ? undefined : Promise.reject(error))
        },
        catch: unavailable(sessionId, "cannot write the claim")
      }),
    remove: (sessionId, expected) =>
      Effect.tryPromise({
        try: () =>
          kv.delete(keyOf(sessionId), { previousSeq: expected }).then(() => true, (error: unknown) => isConflict(error) ? false : Promise.reject(error)),
        catch: unavailable(sessionId, "cannot delete the claim")
      })
  }, options)
}

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
  const unavailable = (error: unknown) =>
    new SessionOwnership.OwnershipError({ reason: "Unavailable", sessionId: "", detail: `cannot list the claims of '${bucket}': ${detail(error)}` })
  return Effect.tryPromise({
    try: async () => {
      const kv = await new Kvm(nc).open(bucket)
      const keys: Array<string> = []
      let truncated = false
      try {
        const listed = await kv.keys("session.>")
        for await (const key of listed) {
          if (keys.length >= options.limit) {
            truncated = true
            listed.stop()
            break
          }
          keys.push(key)
        }
      } catch (error) {
        if (/stream not found/i.test(detail(error))) return { claims: [], truncated: false }
        throw error
      }
      const claims: Array<Listed> = []
      for (const key of keys) {
        const entry = await kv.get(key)
        if (entry === null || entry.operation !== "PUT" || entry.value.length > maxRecordBytes) continue
        let value: unknown
        try {
          value = JSON.parse(decoder.decode(entry.value))
        } catch {
          continue
        }
        const record = decodeClaim(value)
        if (Either.isRight(record)) claims.push({ sessionId: key.slice("session.".length), ownerId: record.right.owner, expiresAt: record.right.expiresAt })
      }
      return { claims, truncated }
    },
    catch: unavailable
  })
}
