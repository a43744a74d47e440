/**
 * The coordinator's records in its `Ledger`, read and written through versioned codecs:
 *
 * - `session.<sid>`: the session's profile, effective policy and consent, what its ended leases
 *   spent, its live lease (in the very `Lease` shape the wire carries), what its host last
 *   reported the lease spent, and the invocations workers counted under it (`ran`);
 * - `profile.<name>`: which leases hold the profile's concurrency slots, until when.
 *
 * A session record carries `format: 2` and the principal that admitted the session (its owner);
 * one of `format: 1` (written before principals) is read as owned by `default` and written back as
 * `format: 2` by the next write. A profile record carries `format: 1`. A value that does not decode (another version, or garbage
 * written into the bucket) reads as no record at its revision, so the next write replaces it: a
 * bad value costs that session its history, never blocks it for good.
 *
 * Compaction: a session's record whose lease has ended (released, or expired) is kept for
 * `retentionMs` after it ended (`endedAt`; a record of an older coordinator without one is stamped
 * when the sweep first sees it), so a session admitted again within that time keeps what it spent;
 * then `compact` deletes it (compare-and-set on its revision, so a record written meanwhile stays).
 * A record whose lease ended having spent nothing is deleted by the first sweep after
 * `lateReportMs` (a worker's late count of the lease is charged until then): it would grant
 * nothing less than no record. An undecodable session record is deleted too. `compact` looks
 * at the `limit` least recently written session records per call.
 */
import { JitPolicy } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as CoordinatorProtocol from "../CoordinatorProtocol.js"
import type * as ExecutionProfile from "../ExecutionProfile.js"
import * as Ids from "../Ids.js"
import type { LedgerError, LedgerShape } from "../Ledger.js"

type Counts = CoordinatorProtocol.Counts
type Lease = CoordinatorProtocol.Lease

const sessionFields = {
  sessionId: Ids.SessionId,
  profile: Schema.String,
  policy: JitPolicy.JitPolicy,
  consent: Schema.Boolean,
  /** Spent by leases that ended (a lease that expired counts whole). */
  used: CoordinatorProtocol.Counts,
  lease: Schema.NullOr(CoordinatorProtocol.Lease),
  /** When its last lease ended (epoch milliseconds), while it holds none: the retention counts from here. */
  endedAt: Schema.optional(Schema.Number),
  /** What the session host last said its live lease spent (renewals report it). */
  reported: Schema.optional(CoordinatorProtocol.Counts),
  /**
   * The invocations workers reported running under `leaseId` (the live lease, or the last one to
   * end); `charged`, once that lease ended, is what it was charged, so a report arriving late adds
   * only what it was not charged.
   */
  ran: Schema.optional(Schema.Struct({ leaseId: Ids.LeaseId, invocations: Schema.Number, charged: Schema.optional(Schema.Number) }))
}

/** A session's record, as written: `format: 2`, with the principal that admitted the session (its owner). */
export const SessionRecord = Schema.Struct({
  format: Schema.Literal(2),
  /** Who admitted the session: only it renews or releases the lease, or admits the session while the lease lives. */
  principal: Ids.Principal,
  ...sessionFields
})

export type SessionRecord = typeof SessionRecord.Type

/** A session's record of a coordinator before principals (`format: 1`): read as owned by `default`. */
const SessionRecordV1 = Schema.Struct({ format: Schema.Literal(1), ...sessionFields })

/** Either format, read as the current one. */
const SessionRecordAny = Schema.Union(
  SessionRecord,
  Schema.transform(SessionRecordV1, Schema.typeSchema(SessionRecord), {
    strict: true,
    decode: ({ format: _, ...v1 }) => ({ format: 2 as const, principal: Ids.defaultPrincipal, ...v1 }),
    encode: ({ format: _, principal: __, ...record }) => ({ format: 1 as const, ...record })
  })
)

const Holder = Schema.Struct({ sessionId: Ids.SessionId, slots: Schema.Number, expiresAt: Schema.Number })

/** A profile's record: the leases holding its slots, by lease id. */
export const ProfileRecord = Schema.Struct({
  format: Schema.Literal(1),
  holders: Schema.Record({ key: Schema.String, value: Holder })
})

export type ProfileRecord = typeof ProfileRecord.Type

/**
 * How long a record whose lease ended is kept at least, whatever the retention: a worker's report
 * of what ran under the lease (sent every second) may arrive after the lease ended, and is charged.
 */
export const lateReportMs = 10_000

export const none: Counts = { invocations: 0, tools: 0, repairs: 0 }

export const add = (a: Counts, b: Counts): Counts => ({ invocations: a.invocations + b.invocations, tools: a.tools + b.tools, repairs: a.repairs + b.repairs })

const most = (a: Counts, b: Counts): Counts => ({
  invocations: Math.max(a.invocations, b.invocations),
  tools: Math.max(a.tools, b.tools),
  repairs: Math.max(a.repairs, b.repairs)
})

/**
 * What the live lease has spent: the most of what its host said (`claim`, the renewals' reports)
 * and, for invocations, what the workers counted; never more than the lease granted.
 */
export const leaseSpent = (record: SessionRecord, claim?: Counts): Counts => {
  const lease = record.lease
  if (lease === null) return none
  const told = most(claim ?? none, record.reported ?? none)
  const counted = record.ran?.leaseId === lease.id ? record.ran.invocations : 0
  return {
    invocations: Math.min(lease.invocations, Math.max(0, told.invocations, counted)),
    tools: Math.min(lease.tools, Math.max(0, told.tools)),
    repairs: Math.min(lease.repairs, Math.max(0, told.repairs))
  }
}

/**
 * A lease that ends at `endedAt`, charged what it verifiably spent (`leaseSpent`): what the
 * workers counted, or more if its host said so (`claim`, at release). A lease that ran out or was
 * lost with its host costs what it spent, not its whole grant.
 */
export const closed = (record: SessionRecord, endedAt: number, claim?: Counts): SessionRecord => {
  const lease = record.lease
  if (lease === null) return record
  const charged = leaseSpent(record, claim)
  const { reported: _, ...rest } = record
  const counted = record.ran?.leaseId === lease.id ? record.ran.invocations : 0
  return { ...rest, used: add(record.used, charged), lease: null, endedAt, ran: { leaseId: lease.id, invocations: counted, charged: charged.invocations } }
}

/**
 * The record once a worker reported `invocations` more run under `leaseId`: counted toward the
 * live lease, or charged to the session when that lease already ended (a late report); none when
 * the record knows no such lease (the report is dropped).
 */
export const withRan = (record: SessionRecord, leaseId: string, invocations: number): SessionRecord | undefined => {
  if (record.lease !== null && record.lease.id === leaseId) {
    const before = record.ran?.leaseId === leaseId ? record.ran.invocations : 0
    return { ...record, ran: { leaseId: record.lease.id, invocations: before + invocations } }
  }
  const ran = record.ran
  if (ran === undefined || ran.leaseId !== leaseId || ran.charged === undefined) return undefined
  const counted = ran.invocations + invocations
  const more = Math.max(0, counted - ran.charged)
  return {
    ...record,
    used: { ...record.used, invocations: record.used.invocations + more },
    ran: { leaseId: ran.leaseId, invocations: counted, charged: ran.charged + more }
  }
}

/** Whether a record remembers nothing a new admission would not grant anyway. */
export const spentNothing = (record: SessionRecord): boolean =>
  record.used.invocations === 0 && record.used.tools === 0 && record.used.repairs === 0

const sessionKey = (sessionId: string) => `session.${sessionId}`
const profileKey = (name: string) => `profile.${name}`
const sessionPrefix = "session."

const decodeSession = Schema.decodeUnknownEither(SessionRecordAny)
const decodeProfile = Schema.decodeUnknownEither(ProfileRecord)

/** A record as read: its value (none when absent or undecodable) and the revision a write must name. */
export interface Read<A> {
  readonly record: A | undefined
  readonly revision: number
}

/** The ledger's records, typed. */
export interface LeaseLedger {
  readonly session: (sessionId: string) => Effect.Effect<Read<SessionRecord>, LedgerError>
  readonly putSession: (record: SessionRecord, revision: number) => Effect.Effect<number, LedgerError>
  /** Writes a record whose lease ended (the sweep deletes it). */
  readonly endSession: (record: SessionRecord, revision: number) => Effect.Effect<void, LedgerError>
  /**
   * Looks at the `limit` least recently written session records and deletes those whose lease
   * ended `retentionMs` ago or more (at `now`), and those that do not decode; answers how many it
   * deleted. A record written meanwhile is left alone. `step` wraps the listing and each record's
   * work (the coordinator runs them under the lock its operations take, one at a time with them).
   */
  readonly compact: (
    now: number,
    retentionMs: number,
    limit: number,
    step: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>
  ) => Effect.Effect<number, LedgerError>
  /** The sessions recorded (at most `limit`), by id. */
  readonly sessionIds: (limit: number) => Effect.Effect<ReadonlyArray<string>, LedgerError>
  /** The live holders of a profile's slots at `now`. */
  readonly holders: (profile: string, now: number) => Effect.Effect<ReadonlyArray<ProfileRecord["holders"][string]>, LedgerError>
  /** Takes up to `wanted` free slots of the profile for `lease` (dropping expired holders and the lease's own old claim). */
  /** Takes up to `wanted` free slots for `lease` until `until` (at most its expiry); answers how many. */
  readonly takeSlots: (profile: ExecutionProfile.ExecutionProfile, lease: Lease, wanted: number, now: number, until: number) => Effect.Effect<number, LedgerError>
  readonly freeSlots: (profile: string, leaseId: string) => Effect.Effect<void, LedgerError>
}

/** What a sweep does with one decoded session record; answers whether it deleted it. */
const sweepOne = (ledger: LedgerShape, key: string, record: SessionRecord, revision: number, now: number, retentionMs: number) =>
  Effect.gen(function*() {
    const lease = record.lease
    if (lease !== null && lease.expiresAt > now) return false
    const endedAt = lease !== null ? lease.expiresAt : record.endedAt
    const ended = lease === null ? record : closed(record, lease.expiresAt)
    if (endedAt === undefined) {
      // written by a coordinator that kept no end time: the retention starts now
      yield* ledger.put(key, { ...ended, endedAt: now } satisfies SessionRecord, revision)
      return false
    }
    if (endedAt + Math.max(lateReportMs, spentNothing(ended) ? 0 : retentionMs) <= now) {
      if (lease !== null) yield* freeSlotsOf(ledger, record.profile, lease.id)
      yield* ledger.remove(key, revision)
      return true
    }
    return false
  })

const readProfileOf = (ledger: LedgerShape, name: string) =>
  Effect.map(ledger.get(profileKey(name)), (entry): Read<ProfileRecord> => {
    if (entry === undefined) return { record: undefined, revision: 0 }
    const decoded = decodeProfile(entry.value)
    return { record: Either.getOrUndefined(decoded), revision: entry.revision }
  })

const freeSlotsOf = (ledger: LedgerShape, profile: string, leaseId: string) =>
  Effect.gen(function*() {
    const { record, revision } = yield* readProfileOf(ledger, profile)
    if (record === undefined || !(leaseId in record.holders)) return
    const holders = { ...record.holders }
    delete holders[leaseId]
    yield* ledger.put(profileKey(profile), { format: 1, holders } satisfies ProfileRecord, revision)
  })

export const make = (ledger: LedgerShape): LeaseLedger => {
  const readProfile = (name: string) => readProfileOf(ledger, name)
  return {
    session: (sessionId) =>
      Effect.map(ledger.get(sessionKey(sessionId)), (entry) => {
        if (entry === undefined) return { record: undefined, revision: 0 }
        const decoded = decodeSession(entry.value)
        return { record: Either.isRight(decoded) && decoded.right.sessionId === sessionId ? decoded.right : undefined, revision: entry.revision }
      }),
    putSession: (record, revision) => ledger.put(sessionKey(record.sessionId), record, revision),
    endSession: (record, revision) => Effect.asVoid(ledger.put(sessionKey(record.sessionId), record, revision)),
    compact: (now, retentionMs, limit, step) =>
      Effect.gen(function*() {
        let removed = 0
        for (const key of yield* step(ledger.keys(sessionPrefix, limit))) {
          const outcome = yield* step(Effect.flatMap(ledger.get(key), (entry) => {
            if (entry === undefined) return Effect.succeed(false)
            return Either.match(decodeSession(entry.value), {
              onLeft: () => Effect.as(ledger.remove(key, entry.revision), true),
              onRight: (record) => sweepOne(ledger, key, record, entry.revision, now, retentionMs)
            })
          })).pipe(
            // written meanwhile: it is live again, or the next sweep looks at it
            Effect.catchIf((error) => error.reason === "Conflict", () => Effect.succeed(false))
          )
          if (outcome) removed++
        }
        return removed
      }),
    sessionIds: (limit) => Effect.map(ledger.keys(sessionPrefix, limit), (keys) => keys.map((key) => key.slice(sessionPrefix.length))),
    holders: (profile, now) =>
      Effect.map(readProfile(profile), ({ record }) => Object.values(record?.holders ?? {}).filter((holder) => holder.expiresAt > now)),
    takeSlots: (profile, lease, wanted, now, until) =>
      Effect.gen(function*() {
        const { record, revision } = yield* readProfile(profile.name)
        const holders: Record<string, ProfileRecord["holders"][string]> = {}
        for (const [id, holder] of Object.entries(record?.holders ?? {})) {
          if (holder.expiresAt > now && id !== lease.id) holders[id] = holder
        }
        const held = Object.values(holders).reduce((sum, holder) => sum + holder.slots, 0)
        const slots = Math.max(0, Math.min(wanted, profile.policy.maximumConcurrentInvocations - held))
        if (slots > 0) holders[lease.id] = { sessionId: lease.sessionId, slots, expiresAt: Math.min(until, lease.expiresAt) }
        yield* ledger.put(profileKey(profile.name), { format: 1, holders } satisfies ProfileRecord, revision)
        return slots
      }),
    freeSlots: (profile, leaseId) => freeSlotsOf(ledger, profile, leaseId)
  }
}
