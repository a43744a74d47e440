/**
 * Single activation: at most one host serves a session at a time. A host claims a session
 * (`claim(sessionId, ownerId)`) before it activates it, renews the claim while the session stays
 * active, and releases it when it passivates or forgets the session. A claim lapses `ttlMs`
 * (default 4 s, renewed every third of it) after it was made or last renewed, so when its host
 * dies another host takes the session over within seconds (a client asks again while the dead
 * host's claim holds it).
 *
 * Each session has one record, `{ v: 1, owner, expiresAt }`, written by compare-and-set on the
 * record's revision: of hosts racing for a session exactly one wins, and a renewal or a release
 * fails `Lost`, naming the new owner, once someone else has taken the session over. A live claim
 * of another owner is refused `Held`, naming it. The expiry is a timestamp in the record (epoch
 * milliseconds of the claimant's Effect `Clock`, so a test drives it with `TestClock`), compared
 * with the reader's clock: `ttlMs` must be well above the clock skew between hosts.
 *
 * The record is versioned (`v`): this version writes `v: 1`, and reads any version `v ≥ 1` that
 * carries an `owner` and an `expiresAt` (fields a later version adds are ignored), so a newer
 * host's live claim is still honoured. A record that does not decode at all (garbage, a value
 * someone with write access to the store put there, an oversized value, an expiry further ahead
 * than `horizonMs`) is no claim: it counts as expired, and a host takes it over by compare-and-set on its revision, so of two hosts racing for
 * it exactly one wins. Garbage can thus cost a session nothing but a take-over, never block it.
 *
 * `layerMemory` keeps the records in this process; `fromRecords` builds the service over any
 * compare-and-set store, and `fromRecordStore` over a `RecordStore`, as `KvSessionOwnership` in
 * `@jitbox/nats` does over a JetStream KV bucket.
 *
 * @since 0.1.0
 */
import { HarnessError, ParseIssues } from "@jitbox/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as Ids from "./Ids.js"
import * as RecordStore from "./RecordStore.js"

/**
 * A claim refused or lost. `Held`: another owner's live claim (`owner`, `expiresAt`). `Lost`:
 * the claim was taken over (`owner` is who holds the session now, if anyone) or released.
 * `Invalid`: a bad owner id. `Unavailable`: the store
 * failed (`sessionId` is empty when it failed to open).
 *
 * @since 0.1.0
 * @category errors
 */
export class OwnershipError extends Schema.TaggedError<OwnershipError>()("OwnershipError", {
  reason: Schema.Literal("Held", "Lost", "Invalid", "Unavailable"),
  sessionId: Schema.String,
  owner: Schema.optional(Schema.String),
  expiresAt: Schema.optional(Schema.Number),
  detail: Schema.String
}) {
  override get message(): string {
    return this.sessionId === "" ? this.detail : `session ${this.sessionId}: ${this.detail}`
  }
}

/** @since 0.1.0 @category schemas */
export const OwnerId = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256))

/** What the store keeps per session. @since 0.1.0 @category schemas */
export const ClaimRecord = Schema.Struct({
  v: Schema.Literal(1),
  owner: OwnerId,
  /** Epoch milliseconds: the claim is live while the reader's clock is before it. */
  expiresAt: Schema.Number.pipe(Schema.finite())
})

/**
 * What a reader needs of a claim record of any version (`v ≥ 1`): who holds the session and until
 * when. Other fields, which a later version may add, are ignored.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ClaimHead = Schema.Struct({
  v: Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)),
  owner: OwnerId,
  expiresAt: Schema.Number.pipe(Schema.finite())
})

/** A live claim: who holds a session, and until when. @since 0.1.0 @category models */
export interface Holder {
  readonly ownerId: string
  readonly expiresAt: number
}

/** @since 0.1.0 @category models */
export interface Claim {
  readonly sessionId: Ids.SessionId
  readonly ownerId: string
  /** When the claim lapses unless renewed (epoch milliseconds). */
  readonly expiresAt: () => number
  /** Extends the claim to `ttlMs` from now; `Lost` when someone else took the session over, or it was released. */
  readonly renew: Effect.Effect<void, OwnershipError>
  /** Gives the session up; nothing the second time; `Lost` when someone else had taken it over. */
  readonly release: Effect.Effect<void, OwnershipError>
}

/** @since 0.1.0 @category models */
export interface SessionOwnershipShape {
  /** How long a claim lives unless renewed. */
  readonly ttlMs: number
  /** Claims the session for `ownerId`: free, expired, undecodable, or already this owner's (a restarted host); `Held` otherwise. */
  readonly claim: (sessionId: Ids.SessionId, ownerId: string) => Effect.Effect<Claim, OwnershipError>
  /** The live claim on the session, if any. */
  readonly holder: (sessionId: Ids.SessionId) => Effect.Effect<Option.Option<Holder>, OwnershipError>
}

/** @since 0.1.0 @category tags */
export class SessionOwnership extends Context.Tag("@jitbox/runtime/SessionOwnership")<SessionOwnership, SessionOwnershipShape>() {}

/** @since 0.1.0 @category models */
export interface OwnershipOptions {
  /** How long a claim lives unless renewed (default 30 000 ms). */
  readonly ttlMs?: number | undefined
}

/** @since 0.1.0 @category constants */
export const defaultTtlMs = 4_000

/**
 * The longest lifetime of a claim (10 minutes): no host writes one lapsing further ahead, so a
 * record that does (a far-future expiry someone wrote into the store) is no claim and is taken over.
 *
 * @since 0.1.0
 * @category constants
 */
export const horizonMs = 600_000

/**
 * A compare-and-set store of one record per session: what `fromRecords` needs.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClaimRecords {
  /** The record and its revision; `undefined` when there is none. */
  readonly get: (sessionId: Ids.SessionId) => Effect.Effect<{ readonly value: unknown; readonly revision: number } | undefined, OwnershipError>
  /** Writes if the record is at revision `expected` (0: there is none) and answers the new revision; `undefined` when it is not. */
  readonly put: (sessionId: Ids.SessionId, value: unknown, expected: number) => Effect.Effect<number | undefined, OwnershipError>
  /** Deletes if the record is at revision `expected`; `false` when it is not. */
  readonly remove: (sessionId: Ids.SessionId, expected: number) => Effect.Effect<boolean, OwnershipError>
}

/** Rounds of read and compare-and-set a claim tries before it gives up `Unavailable`. */
const maxAttempts = 5

const decodeHead = Schema.decodeUnknownEither(ClaimHead)
const encodeRecord = Schema.encodeSync(ClaimRecord)
const decodeOwner = Schema.decodeUnknownEither(OwnerId)

const firstIssue = (error: ParseResult.ParseError): string => ParseIssues.describe(error, { limit: 300 })

const checkTtl = (options: OwnershipOptions): number => {
  const ttlMs = options.ttlMs ?? defaultTtlMs
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1 || ttlMs > horizonMs) {
    throw new HarnessError.ConfigError({ option: "ttlMs", detail: `a claim's lifetime is a positive integer of milliseconds up to ${horizonMs}, got ${String(options.ttlMs)}` })
  }
  return ttlMs
}

const until = (expiresAt: number): string => Number.isFinite(expiresAt) && Math.abs(expiresAt) < 8.64e15 ? new Date(expiresAt).toISOString() : String(expiresAt)

/**
 * A session's record, decoded, and its revision; `undefined` when there is none. A record that does
 * not decode reads as `record: undefined` at its revision: no claim, which the next claim replaces.
 */
type Read = (
  sessionId: Ids.SessionId
) => Effect.Effect<{ readonly record: typeof ClaimHead.Type | undefined; readonly revision: number } | undefined, OwnershipError>

/** Fails `Lost`, naming whoever holds the session now. */
type LostError = (sessionId: Ids.SessionId, what: string) => Effect.Effect<never, OwnershipError>

const reader = (records: ClaimRecords): Read => (sessionId) =>
  Effect.flatMap(records.get(sessionId), (entry): ReturnType<Read> => {
    if (entry === undefined) return Effect.succeed(undefined)
    const decoded = decodeHead(entry.value)
    if (Either.isRight(decoded)) return Effect.succeed({ record: decoded.right, revision: entry.revision })
    return Effect.as(
      Effect.logWarning(`jitbox: the claim record of session ${sessionId} does not decode; it counts as expired: ${firstIssue(decoded.left)}`),
      { record: undefined, revision: entry.revision }
    )
  })

const lostError = (read: Read): LostError => (sessionId, what) =>
  Effect.flatMap(Effect.either(read(sessionId)), (current) => {
    const owner = Either.isRight(current) ? current.right?.record?.owner : undefined
    return Effect.fail(
      new OwnershipError({
        reason: "Lost",
        sessionId,
        ...(owner === undefined ? {} : { owner }),
        detail: owner === undefined ? `${what}: the claim is gone` : `${what}: the session was taken over by ${owner}`
      })
    )
  })

/** A claim written at `firstRevision`: renewed and released by compare-and-set on its revision, one at a time. */
const makeClaim = (records: ClaimRecords, ttlMs: number, lost: LostError) =>
(sessionId: Ids.SessionId, ownerId: string, firstRevision: number, firstExpiry: number) =>
  Effect.map(Effect.makeSemaphore(1), (lock): Claim => {
    let revision = firstRevision
    let expiresAt = firstExpiry
    let released = false
    return {
      sessionId,
      ownerId,
      expiresAt: () => expiresAt,
      renew: lock.withPermits(1)(Effect.gen(function*() {
        if (released) return yield* Effect.fail(new OwnershipError({ reason: "Lost", sessionId, detail: "cannot renew: the claim was released" }))
        const next = (yield* Clock.currentTimeMillis) + ttlMs
        const written = yield* records.put(sessionId, encodeRecord({ v: 1, owner: ownerId, expiresAt: next }), revision)
        if (written === undefined) {
          released = true
          return yield* lost(sessionId, `${ownerId} cannot renew`)
        }
        revision = written
        expiresAt = next
      })),
      release: lock.withPermits(1)(Effect.gen(function*() {
        if (released) return
        const removed = yield* records.remove(sessionId, revision)
        released = true
        if (!removed) return yield* lost(sessionId, `${ownerId} cannot release`)
      }))
    }
  })

/** Whether a claim holds at `now`: not lapsed, and not lapsing further ahead than any host writes one (garbage). */
const isLive = (record: typeof ClaimHead.Type, now: number): boolean => record.expiresAt > now && record.expiresAt <= now + horizonMs

/** Why another owner's live claim refuses this one. */
const held = (sessionId: Ids.SessionId, record: typeof ClaimHead.Type) =>
  new OwnershipError({
    reason: "Held",
    sessionId,
    owner: record.owner,
    expiresAt: record.expiresAt,
    detail: `held by ${record.owner} until ${until(record.expiresAt)}`
  })

/** Claims a session: free, expired, undecodable or already this owner's, in up to `maxAttempts` rounds of read and compare-and-set. */
const claimer = (records: ClaimRecords, ttlMs: number, read: Read, lost: LostError) => {
  const claimAt = makeClaim(records, ttlMs, lost)
  return (sessionId: Ids.SessionId, ownerId: string): Effect.Effect<Claim, OwnershipError> =>
    Effect.gen(function*() {
      const owner = decodeOwner(ownerId)
      if (Either.isLeft(owner)) {
        return yield* Effect.fail(new OwnershipError({ reason: "Invalid", sessionId, detail: `bad owner id: ${firstIssue(owner.left)}` }))
      }
      for (let attempt = 0; attempt < maxAttempts; attempt++) {
        const now = yield* Clock.currentTimeMillis
        const current = yield* read(sessionId)
        if (current?.record !== undefined && current.record.owner !== ownerId && isLive(current.record, now)) {
          return yield* Effect.fail(held(sessionId, current.record))
        }
        const expiresAt = now + ttlMs
        const revision = yield* records.put(sessionId, encodeRecord({ v: 1, owner: ownerId, expiresAt }), current?.revision ?? 0)
        if (revision !== undefined) return yield* claimAt(sessionId, ownerId, revision, expiresAt)
      }
      return yield* Effect.fail(
        new OwnershipError({ reason: "Unavailable", sessionId, detail: `${maxAttempts} attempts to claim it lost the race to other writers` })
      )
    })
}

/**
 * The service over a compare-and-set store. Throws `ConfigError` for a bad `ttlMs`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromRecords = (records: ClaimRecords, options: OwnershipOptions = {}): SessionOwnershipShape => {
  const ttlMs = checkTtl(options)
  const read = reader(records)
  const holder = (sessionId: Ids.SessionId) =>
    Effect.flatMap(read(sessionId), (current) =>
      Effect.map(Clock.currentTimeMillis, (now) =>
        current?.record === undefined || !isLive(current.record, now)
          ? Option.none()
          : Option.some({ ownerId: current.record.owner, expiresAt: current.record.expiresAt })))
  return { ttlMs, claim: claimer(records, ttlMs, read, lostError(read)), holder }
}

const keyOf = (sessionId: Ids.SessionId) => `session.${sessionId}`
const isConflict = (error: RecordStore.RecordError) => error.reason === "Conflict"

const unavailable = (sessionId: Ids.SessionId, what: string) => (error: RecordStore.RecordError) =>
  new OwnershipError({ reason: "Unavailable", sessionId, detail: `${what}: ${error.detail}` })

/** The service over a record store, keys `session.<sessionId>`. Throws `ConfigError` for a bad `ttlMs`. @since 0.1.0 @category constructors */
export const fromRecordStore = (store: RecordStore.RecordStore, options: OwnershipOptions = {}): SessionOwnershipShape => fromRecords({
  get: (sessionId) => Effect.mapError(store.get(keyOf(sessionId)), unavailable(sessionId, "cannot read the claim")),
  put: (sessionId, value, expected) =>
    store.put(keyOf(sessionId), value, expected).pipe(
      Effect.catchIf(isConflict, () => Effect.succeed(undefined)),
      Effect.mapError(unavailable(sessionId, "cannot write the claim"))
    ),
  remove: (sessionId, expected) =>
    store.remove(keyOf(sessionId), expected).pipe(
      Effect.as(true),
      Effect.catchIf(isConflict, () => Effect.succeed(false)),
      Effect.mapError(unavailable(sessionId, "cannot delete the claim"))
    )
}, options)

/** Claim records in this process. Throws `ConfigError` for a bad `ttlMs`. @since 0.1.0 @category constructors */
export const makeMemory = (options: OwnershipOptions = {}): SessionOwnershipShape => fromRecordStore(RecordStore.makeMemory(), options)

/**
 * Ownership within this process: every `Sessions` host built with one instance of the layer shares it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (options: OwnershipOptions = {}): Layer.Layer<SessionOwnership, HarnessError.ConfigError> =>
  Layer.effect(SessionOwnership, Effect.try({ try: () => makeMemory(options), catch: (error) => error as HarnessError.ConfigError }))
