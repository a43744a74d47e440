/**
 * The root coordinator's protocol as one table (`operations`): each operation is served on
 * `coordinator.<principal>.<op>` (the principal: who asks, a subject token), with its payload (snake_case on the wire, camelCase in code: the renames are
 * declared here once, with `Schema.fromKey`), its success and its errors (`CoordinatorError`).
 * The server (`Coordinator`) and the client (`CoordinatorClient`) are both derived from it.
 *
 * - `admit`: a session under a named host `ExecutionProfile` with a request policy; answers the
 *   capability descriptor of JT-OUT and a first lease.
 * - `renew`: extends a live lease, grants more invocations (`more`), sets the concurrency slots it
 *   holds (`slots`).
 * - `release`: ends a lease; what the session reports unspent returns to its budget.
 * - `policy`: a profile's ceiling.
 * - `verify`: the facts of a live lease from the coordinator's own records (for workers).
 * - `ran`: the invocations a worker ran under each lease (for workers): what a lease spent is
 *   counted from these, never from the session host's word alone.
 * - `workers`: the workers whose capacity reports are live, of one pool or all.
 * - `leases`: the profiles and the sessions' leases and budgets, read only (`jitbox status`).
 *
 * @since 0.1.0
 */
import { HarnessError, JitPolicy } from "@jitbox/core"
import * as Schema from "effect/Schema"
import * as Ids from "./Ids.js"
import { LedgerError } from "./Ledger.js"
import * as Protocol from "./Protocol.js"
import { ProtocolError } from "./ProtocolError.js"
import { TransportError } from "./TransportError.js"
import * as WorkerCapacity from "./WorkerCapacity.js"

/**
 * A coordinator operation refused. `NotOwner`: the session's record (its live lease) belongs to
 * another principal than the one asking (renew, release, or admit of a session another principal
 * holds a live lease of). `NotAllowed`: the profile lists its `principals` and the asker is not
 * one of them.
 *
 * @since 0.1.0
 * @category errors
 */
export class AdmissionError extends Schema.TaggedError<AdmissionError>()("AdmissionError", {
  reason: Schema.Literal("ProfileNotFound", "LeaseExpired", "LeaseNotFound", "NotOwner", "NotAllowed"),
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.reason}: ${this.detail}`
  }
}

/** What a coordinator request can fail with, on the wire. @since 0.1.0 @category schemas */
export const CoordinatorError = Schema.Union(AdmissionError, HarnessError.ConfigError, LedgerError, ProtocolError, TransportError)

/** @since 0.1.0 @category models */
export type CoordinatorError = typeof CoordinatorError.Type

/** Invocations, tools and repairs. @since 0.1.0 @category schemas */
export const Counts = Schema.Struct({ invocations: Schema.Number, tools: Schema.Number, repairs: Schema.Number })

/** @since 0.1.0 @category models */
export type Counts = typeof Counts.Type

/**
 * A lease: what one session may spend until `expiresAt` (epoch milliseconds). Counts are totals
 * for the whole lease; a renewal raises them.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Lease = Schema.Struct({
  id: Ids.LeaseId,
  sessionId: Ids.SessionId,
  expiresAt: Schema.Number,
  lifetimeSeconds: Schema.Number,
  invocations: Schema.Number,
  tools: Schema.Number,
  repairs: Schema.Number,
  /** Concurrency slots of the profile this lease holds. */
  slots: Schema.Number,
  /**
   * Until when (epoch milliseconds) the coordinator keeps the slots for this lease: a session that
   * holds slots renews before then, and slots nobody renews go back to the profile (so a lease
   * nobody uses cannot hold them for its lifetime). Absent when it holds none.
   */
  slotsUntil: Schema.optional(Schema.Number),
  runtimeEnvironments: Schema.Number
})

/** @since 0.1.0 @category models */
export type Lease = typeof Lease.Type

/**
 * Where a profile's code runs: the worker pool it names (`location`), or the one worker it pins
 * (`sandboxNodeId`, served one invocation at a time); neither, the default pool.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Placement = {
  location: Schema.optional(Schema.String),
  sandboxNodeId: Schema.optional(Schema.String)
}

/**
 * The capability descriptor of JT-OUT: `kind`, `jitToolId` (run-scoped registration id),
 * `toolSpecification` (the effective restrictions), `contractVersion`, `task`, and either
 * `executionProfile` with `resourceGroupName` (a host lease label) or, for a profile pinned to a
 * named worker, `backend` with `sandboxNodeId` in their place (JT-OUT-08).
 *
 * @since 0.1.0
 * @category schemas
 */
export const CapabilityDescriptor = Schema.Struct({
  kind: Schema.Literal("jitbox-jit-capability"),
  jitToolId: Schema.String,
  toolSpecification: Schema.Struct({
    restrictions: JitPolicy.JitPolicy,
    deploymentConsent: Schema.Boolean,
    instructions: Schema.optional(Schema.String)
  }),
  contractVersion: Schema.String,
  task: Schema.Unknown,
  executionProfile: Schema.optional(Schema.String),
  resourceGroupName: Schema.optional(Schema.String),
  backend: Schema.optional(Schema.String),
  sandboxNodeId: Schema.optional(Schema.String)
})

/** @since 0.1.0 @category models */
export type CapabilityDescriptor = typeof CapabilityDescriptor.Type

/**
 * What the coordinator's records say of a live lease (`verify`): a worker trusts these, never the
 * invocation's own fields. `expiresAt` is epoch milliseconds on the coordinator's clock.
 *
 * @since 0.1.0
 * @category schemas
 */
export const LeaseFacts = Schema.Struct({
  sessionId: Lease.fields.sessionId,
  leaseId: Lease.fields.id,
  expiresAt: Lease.fields.expiresAt,
  lifetimeSeconds: Lease.fields.lifetimeSeconds,
  profile: Schema.String,
  deploymentConsent: Schema.Boolean,
  ...Placement,
  credentialName: Schema.optional(Schema.String)
})

/** @since 0.1.0 @category models */
export type LeaseFacts = typeof LeaseFacts.Type

/**
 * One profile as `leases` answers it: its ceiling, its pool or pinned worker, and the concurrency
 * slots its live leases hold now.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ProfileView = Schema.Struct({
  name: Schema.String,
  ...Placement,
  policy: JitPolicy.JitPolicy,
  slotsHeld: Schema.Number,
  /** The principals that may admit sessions under it, when it lists them. */
  principals: Schema.optional(Schema.Array(Schema.String))
})

/** @since 0.1.0 @category models */
export type ProfileView = typeof ProfileView.Type

/**
 * One session as `leases` answers it. `spent`: what its ended leases spent and what its live lease
 * has spent so far (the most its host reported and its workers counted); `left`: the policy's
 * maximum less `spent`. `principal`: who admitted it (its owner).
 *
 * @since 0.1.0
 * @category schemas
 */
export const SessionBudget = Schema.Struct({
  sessionId: Ids.SessionId,
  profile: Schema.String,
  /** The principal that admitted it: only it renews or releases its lease (absent from coordinators before principals). */
  principal: Schema.optional(Schema.String),
  deploymentConsent: Schema.Boolean,
  spent: Counts,
  left: Counts,
  lease: Schema.NullOr(Lease)
})

/** @since 0.1.0 @category models */
export type SessionBudget = typeof SessionBudget.Type

/**
 * The answer to `leases`: every profile, and the sessions of the ledger (at most the limit asked
 * for; `truncated` when there are more), sessions with a live lease first.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Leases = Schema.Struct({
  profiles: Schema.Array(ProfileView),
  sessions: Schema.Array(SessionBudget),
  truncated: Schema.Boolean
})

/** @since 0.1.0 @category models */
export type Leases = typeof Leases.Type

/** How many sessions `leases` answers by default, and at most. @since 0.1.0 @category constants */
export const leasesLimits = { default: 256, max: 1_024 } as const


/**
 * What `admit` answers: the capability descriptor, the first lease, the effective policy, the
 * consent, and the profile's worker pool (`location`) when it names one.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Admitted = Schema.Struct({
  capability: CapabilityDescriptor,
  lease: Lease,
  policy: JitPolicy.JitPolicy,
  deploymentConsent: Schema.Boolean,
  location: Schema.optional(Schema.String),
  /**
   * What the lease already spent, when the admission resumed the session's live lease (its owner
   * admitted it again: a restart, or another host after a crash): the most the host last reported
   * and the workers counted. The session spends on from there.
   */
  spent: Schema.optional(Counts)
})

/** @since 0.1.0 @category models */
export type Admitted = typeof Admitted.Type

/**
 * A request to admit a session: the profile, the request policy (narrowing the profile), and
 * `deploymentConsent` (JT-CFG-05: without it no model-written code runs).
 *
 * @since 0.1.0
 * @category schemas
 */
export const AdmitRequest = Schema.Struct({
  sessionId: Schema.propertySignature(Ids.SessionId).pipe(Schema.fromKey("session_id")),
  profile: Schema.String,
  policy: Schema.optional(Protocol.objectOf<JitPolicy.JitPolicyInput>("JitPolicyInput")),
  /** Absent: false. */
  deploymentConsent: Schema.optional(Schema.Boolean).pipe(Schema.fromKey("deployment_consent")),
  task: Schema.optional(Schema.Unknown),
  contractVersion: Schema.optional(Schema.String).pipe(Schema.fromKey("contract_version")),
  instructions: Schema.optional(Schema.String)
})

/** @since 0.1.0 @category models */
export type AdmitRequest = typeof AdmitRequest.Type

const LeaseRef = {
  sessionId: Schema.propertySignature(Ids.SessionId).pipe(Schema.fromKey("session_id")),
  leaseId: Schema.propertySignature(Ids.LeaseId).pipe(Schema.fromKey("lease_id"))
}

/**
 * A renewal: `more` asks for more invocations; `slots`, the concurrency slots the session wants to
 * hold (default: all its policy allows; fewer gives slots back); `spent`, what the lease has spent
 * so far (a session reports it with each renewal, and renews when it creates a tool version).
 *
 * @since 0.1.0
 * @category schemas
 */
export const RenewRequest = Schema.Struct({ ...LeaseRef, more: Schema.Boolean, slots: Schema.optional(Schema.Number), spent: Schema.optional(Counts) })

/** @since 0.1.0 @category models */
export type RenewRequest = typeof RenewRequest.Type

/** The end of a lease, with what it spent. @since 0.1.0 @category schemas */
export const ReleaseRequest = Schema.Struct({ ...LeaseRef, spent: Counts })

/** @since 0.1.0 @category models */
export type ReleaseRequest = typeof ReleaseRequest.Type

/** @since 0.1.0 @category schemas */
export const VerifyRequest = Schema.Struct(LeaseRef)

/** How many leases one `ran` report names, at most. @since 0.1.0 @category constants */
export const ranLimit = 256

/**
 * A worker's count of the invocations it ran under each lease since its last report.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RanRequest = Schema.Struct({
  leases: Schema.Array(Schema.Struct({ ...LeaseRef, invocations: Schema.Int.pipe(Schema.between(1, 1_000_000)) })).pipe(Schema.maxItems(ranLimit))
})

/** @since 0.1.0 @category models */
export type RanRequest = typeof RanRequest.Type

/** @since 0.1.0 @category models */
export type VerifyRequest = typeof VerifyRequest.Type

const errors = { error: CoordinatorError } as const

/**
 * The coordinator's operations, each served on `coordinator.<principal>.<op>`.
 *
 * @since 0.1.0
 * @category protocol
 */
export const operations = Protocol.table({
  admit: { payload: AdmitRequest.fields, success: Admitted, method: "admit", args: (request: AdmitRequest) => request, ...errors },
  renew: { payload: RenewRequest.fields, success: Lease, method: "renew", args: (request: RenewRequest) => request, ...errors },
  release: { payload: ReleaseRequest.fields, success: Schema.Null, method: "release", args: (request: ReleaseRequest) => request, ...errors },
  policy: { payload: { profile: Schema.String }, success: JitPolicy.JitPolicy, method: "policy", args: (profile: string) => ({ profile }), ...errors },
  verify: { payload: VerifyRequest.fields, success: LeaseFacts, method: "verify", args: (request: VerifyRequest) => request, ...errors },
  ran: { payload: RanRequest.fields, success: Schema.Null, method: "ran", args: (request: RanRequest) => request, ...errors },
  /** The workers whose reports are live, of one pool or all, by worker id. */
  workers: {
    payload: { pool: Schema.optional(Schema.String) },
    success: Schema.Array(WorkerCapacity.WorkerCapacity),
    method: "workers",
    args: (pool?: string) => ({ pool }),
    ...errors
  },
  /** The profiles and the sessions' leases and budgets, from the ledger (read only; at most `limit` sessions, default 256). */
  leases: {
    payload: { limit: Schema.optional(Schema.Int.pipe(Schema.between(1, leasesLimits.max))) },
    success: Leases,
    method: "leases",
    args: (limit?: number) => ({ limit }),
    ...errors
  }
})

/** @since 0.1.0 @category models */
export type Operations = typeof operations

/** The operation names. @since 0.1.0 @category constants */
export const kinds = Object.keys(operations) as ReadonlyArray<keyof Operations & string>
