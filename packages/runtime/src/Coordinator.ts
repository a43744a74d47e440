/**
 * The root coordinator of one namespace: an Effect scoped actor serving `coordinator.<op>`.
 *
 * - `admit`: a session under a named host `ExecutionProfile` with a request policy. The effective
 *   policy is their intersection (`ExecutionProfile.effectivePolicy`); the reply is the capability
 *   descriptor of JT-OUT and a first lease. Without `deployment_consent` (JT-CFG-05) the lease
 *   grants no tools, invocations or concurrency: no model-written code can run.
 * - `renew`: extends a live lease by `leaseLifetimeSeconds`, grants more invocations, and sets the
 *   concurrency slots of its profile the lease holds to what the session wants (as far as the
 *   profile has them free): an idle session gives its slots back, a busy one takes free ones.
 * - `release`: ends a lease; what the session reports unspent returns to its budget.
 * - `policy`: a profile's ceiling.
 * - `verify`: for a worker handed an invocation, the facts of a live lease from the coordinator's
 *   own records (profile, consent, pool, pinned worker, credential name), so a worker runs code
 *   only for a session the coordinator admitted, whatever the message claims.
 * - `workers`: the workers whose capacity reports are live (`WorkerCapacity`), of one pool or all.
 * - `leases`: what the ledger holds, read only, for operators (`jitbox status`): each profile with
 *   the slots its live leases hold, and each session (at most `limit`) with its live lease, what its
 *   ended leases spent and what its budget has left.
 *
 * Every grant is written to the `Ledger` (compare-and-set) before it is answered. A lease that ran
 * out (or that a new admission of the same session replaces) counts as fully spent: a budget is
 * never handed out twice, whatever a crashed session had spent. A profile's concurrency slots are
 * held per lease, so the sessions of one profile together never hold more than it allows.
 * Time is the context's `Clock`. It answers NATS service discovery (`ServiceDiscovery`) as
 * `jitbox-coordinator`.
 *
 * @since 0.1.0
 */
import { HarnessError, JitPolicy } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Envelope from "./Envelope.js"
import * as ExecutionProfile from "./ExecutionProfile.js"
import * as Ids from "./Ids.js"
import { Ledger, LedgerError } from "./Ledger.js"
import * as ServiceDiscovery from "./ServiceDiscovery.js"
import * as Subject from "./Subject.js"
import * as Transport from "./Transport.js"
import { TransportError } from "./TransportError.js"
import * as WorkerCapacity from "./WorkerCapacity.js"

/** A coordinator operation refused. @since 0.1.0 @category errors */
export class AdmissionError extends Schema.TaggedError<AdmissionError>()("AdmissionError", {
  reason: Schema.Literal("ProfileNotFound", "LeaseExpired", "LeaseNotFound"),
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.reason}: ${this.detail}`
  }
}

/** What a coordinator request can fail with, on the wire. @since 0.1.0 @category schemas */
export const CoordinatorError = Schema.Union(AdmissionError, HarnessError.ConfigError, LedgerError, TransportError)

/** @since 0.1.0 @category models */
export type CoordinatorError = typeof CoordinatorError.Type

const Counts = Schema.Struct({ invocations: Schema.Number, tools: Schema.Number, repairs: Schema.Number })

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
  id: Schema.String,
  sessionId: Schema.String,
  expiresAt: Schema.Number,
  lifetimeSeconds: Schema.Number,
  invocations: Schema.Number,
  tools: Schema.Number,
  repairs: Schema.Number,
  /** Concurrency slots of the profile this lease holds. */
  slots: Schema.Number,
  runtimeEnvironments: Schema.Number
})

/** @since 0.1.0 @category models */
export type Lease = typeof Lease.Type

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

/** @since 0.1.0 @category models */
export interface Admitted {
  readonly capability: CapabilityDescriptor
  readonly lease: Lease
  readonly policy: JitPolicy.JitPolicy
  readonly deploymentConsent: boolean
  /** The profile's worker pool (`location`), when it names one. */
  readonly location?: string | undefined
}

/** A request to admit a session. @since 0.1.0 @category models */
export interface AdmitRequest {
  readonly sessionId: Ids.SessionId
  readonly profile: string
  readonly policy?: JitPolicy.JitPolicyInput | undefined
  readonly deploymentConsent?: boolean | undefined
  readonly task?: unknown
  readonly contractVersion?: string | undefined
  readonly instructions?: string | undefined
}

const V = Schema.Literal(Envelope.version)

const requests = {
  admit: Schema.Struct({
    v: V,
    kind: Schema.Literal("admit"),
    session_id: Ids.SessionId,
    profile: Schema.String,
    policy: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
    deployment_consent: Schema.optionalWith(Schema.Boolean, { default: () => false }),
    task: Schema.optional(Schema.Unknown),
    contract_version: Schema.optional(Schema.String),
    instructions: Schema.optional(Schema.String)
  }),
  renew: Schema.Struct({
    v: V,
    kind: Schema.Literal("renew"),
    session_id: Ids.SessionId,
    lease_id: Schema.String,
    more: Schema.Boolean,
    /** The concurrency slots the session wants to hold (default: all its policy allows); fewer gives slots back. */
    slots: Schema.optional(Schema.Number)
  }),
  release: Schema.Struct({ v: V, kind: Schema.Literal("release"), session_id: Ids.SessionId, lease_id: Schema.String, spent: Counts }),
  policy: Schema.Struct({ v: V, kind: Schema.Literal("policy"), profile: Schema.String }),
  verify: Schema.Struct({ v: V, kind: Schema.Literal("verify"), session_id: Ids.SessionId, lease_id: Schema.String }),
  workers: Schema.Struct({ v: V, kind: Schema.Literal("workers"), pool: Schema.optional(Schema.String) }),
  leases: Schema.Struct({ v: V, kind: Schema.Literal("leases"), limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 1_024))) })
} as const

/**
 * What the coordinator's records say of a live lease (`verify`): a worker trusts these, never the
 * invocation's own fields. `expiresAt` is epoch milliseconds on the coordinator's clock.
 *
 * @since 0.1.0
 * @category schemas
 */
export const LeaseFacts = Schema.Struct({
  sessionId: Schema.String,
  leaseId: Schema.String,
  expiresAt: Schema.Number,
  lifetimeSeconds: Schema.Number,
  profile: Schema.String,
  deploymentConsent: Schema.Boolean,
  location: Schema.optional(Schema.String),
  sandboxNodeId: Schema.optional(Schema.String),
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
  location: Schema.optional(Schema.String),
  sandboxNodeId: Schema.optional(Schema.String),
  policy: JitPolicy.JitPolicy,
  slotsHeld: Schema.Number
})

/** @since 0.1.0 @category models */
export type ProfileView = typeof ProfileView.Type

/**
 * One session as `leases` answers it. `spent`: what its ended leases spent (a lease that expired
 * counts whole); `left`: its budget not yet charged (the policy's maximum less `spent`), out of
 * which its live `lease`, if any, was granted.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SessionBudget = Schema.Struct({
  sessionId: Schema.String,
  profile: Schema.String,
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

/** The operations, each served on `coordinator.<op>`. @since 0.1.0 @category constants */
export const operations = ["admit", "renew", "release", "policy", "verify", "workers", "leases"] as const

/** @since 0.1.0 @category models */
export interface CoordinatorOptions {
  readonly namespace: Ids.Namespace
  readonly subjectRoot?: string | undefined
  readonly profiles: ReadonlyArray<ExecutionProfile.ExecutionProfile>
  /** Invocations one grant adds to a lease (default 256); the rest of the budget stays with the coordinator. */
  readonly invocationsPerGrant?: number | undefined
  /** Its id in NATS service discovery (default: a fresh one). */
  readonly coordinatorId?: string | undefined
  /** Workers whose capacity it keeps at most (default 1 024; `WorkerCapacity`). */
  readonly maxWorkers?: number | undefined
  /** Report intervals a worker may miss before it is forgotten (default 3). */
  readonly capacityMisses?: number | undefined
}

/** The name coordinators answer NATS service discovery under (`nats micro ls`). @since 0.1.0 @category constants */
export const serviceName = "jitbox-coordinator"

/** @since 0.1.0 @category models */
export interface Coordinator {
  /** Its id in NATS service discovery. */
  readonly id: string
  /** Requests answered so far (each operation counts once). */
  readonly requests: () => number
}

interface LeaseRecord {
  readonly id: string
  readonly expiresAt: number
  readonly invocations: number
  readonly tools: number
  readonly repairs: number
  readonly slots: number
  readonly runtimeEnvironments: number
}

interface SessionRecord {
  readonly sessionId: string
  readonly profile: string
  readonly policy: JitPolicy.JitPolicy
  readonly consent: boolean
  /** Spent by leases that ended (a lease that expired counts whole). */
  readonly used: Counts
  readonly lease: LeaseRecord | null
}

interface ProfileRecord {
  readonly holders: Record<string, { readonly sessionId: string; readonly slots: number; readonly expiresAt: number }>
}

const sessionKey = (sessionId: string) => `session.${sessionId}`
const profileKey = (name: string) => `profile.${name}`
const newLeaseId = Ids.generator<Ids.LeaseId>("lease")
const none: Counts = { invocations: 0, tools: 0, repairs: 0 }

const add = (a: Counts, b: Counts): Counts => ({ invocations: a.invocations + b.invocations, tools: a.tools + b.tools, repairs: a.repairs + b.repairs })

/** A lease that ends: everything it granted counts, unless the session reported what it spent. */
const closed = (record: SessionRecord, spent?: Counts): SessionRecord => {
  const lease = record.lease
  if (lease === null) return record
  const charged = spent === undefined ? lease : {
    invocations: Math.min(Math.max(0, spent.invocations), lease.invocations),
    tools: Math.min(Math.max(0, spent.tools), lease.tools),
    repairs: Math.min(Math.max(0, spent.repairs), lease.repairs)
  }
  return { ...record, used: add(record.used, { invocations: charged.invocations, tools: charged.tools, repairs: charged.repairs }), lease: null }
}

/**
 * Serves the coordinator of `options.namespace` until the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: CoordinatorOptions): Effect.Effect<Coordinator, TransportError, Scope.Scope | Transport.Transport | Ledger> =>
  Effect.gen(function*() {
    const ledger = yield* Ledger
    const clock = yield* Effect.clock
    const runtime = yield* Effect.runtime<never>()
    const prefix = Subject.prefix(options.namespace, options.subjectRoot)
    const profiles = new Map(options.profiles.map((profile) => [profile.name, profile]))
    const perGrant = options.invocationsPerGrant ?? 256
    if (!Number.isSafeInteger(perGrant) || perGrant < 1) {
      return yield* Effect.die(new HarnessError.ConfigError({ option: "invocationsPerGrant", detail: `expected an integer ≥ 1, got ${perGrant}` }))
    }
    let answered = 0

    const profileOf = (name: string) => {
      const profile = profiles.get(name)
      return profile === undefined
        ? Effect.fail(new AdmissionError({ reason: "ProfileNotFound", detail: `no execution profile '${name}'; known: ${[...profiles.keys()].join(", ")}` }))
        : Effect.succeed(profile)
    }

    const readSession = (sessionId: string) =>
      Effect.map(ledger.get(sessionKey(sessionId)), (entry) => entry === undefined ? undefined : { record: entry.value as SessionRecord, revision: entry.revision })

    /** Takes up to `wanted` free slots of the profile for `leaseId` (dropping expired and `drop` holders). */
    const takeSlots = (profile: ExecutionProfile.ExecutionProfile, leaseId: string, sessionId: string, wanted: number, expiresAt: number, drop: string | undefined) =>
      Effect.gen(function*() {
        const now = clock.unsafeCurrentTimeMillis()
        const entry = yield* ledger.get(profileKey(profile.name))
        const holders: ProfileRecord["holders"] = {}
        for (const [id, holder] of Object.entries((entry?.value as ProfileRecord | undefined)?.holders ?? {})) {
          if (holder.expiresAt > now && id !== drop && id !== leaseId) holders[id] = holder
        }
        const held = Object.values(holders).reduce((sum, holder) => sum + holder.slots, 0)
        const slots = Math.max(0, Math.min(wanted, profile.policy.maximumConcurrentInvocations - held))
        if (slots > 0) holders[leaseId] = { sessionId, slots, expiresAt }
        yield* ledger.put(profileKey(profile.name), { holders }, entry?.revision ?? 0)
        return slots
      })

    const freeSlots = (profileName: string, leaseId: string) =>
      Effect.gen(function*() {
        const entry = yield* ledger.get(profileKey(profileName))
        if (entry === undefined) return
        const holders = { ...(entry.value as ProfileRecord).holders }
        if (!(leaseId in holders)) return
        delete holders[leaseId]
        yield* ledger.put(profileKey(profileName), { holders }, entry.revision)
      })

    const leaseOf = (record: SessionRecord, lease: LeaseRecord): Lease => ({
      ...lease,
      sessionId: record.sessionId,
      lifetimeSeconds: record.policy.leaseLifetimeSeconds
    })

    const admit = (request: typeof requests.admit.Type) =>
      Effect.gen(function*() {
        const profile = yield* profileOf(request.profile)
        const policy = yield* Effect.try({
          try: () => ExecutionProfile.effectivePolicy(profile, request.policy as JitPolicy.JitPolicyInput | undefined),
          catch: (error) => error as HarnessError.ConfigError
        })
        const consent = request.deployment_consent
        const now = clock.unsafeCurrentTimeMillis()
        const found = yield* readSession(request.session_id)
        // A session admitted again (another process, a restart) keeps what it spent; its old lease ends whole.
        const previous = found === undefined ? undefined : closed(found.record)
        if (found?.record.lease != null) yield* freeSlots(found.record.profile, found.record.lease.id)
        const used = previous?.used ?? none
        const id = newLeaseId()
        const expiresAt = now + policy.leaseLifetimeSeconds * 1000
        const slots = consent ? yield* takeSlots(profile, id, request.session_id, policy.maximumConcurrentInvocations, expiresAt, undefined) : 0
        const lease: LeaseRecord = {
          id,
          expiresAt,
          invocations: consent ? Math.max(0, Math.min(perGrant, policy.maximumInvocations - used.invocations)) : 0,
          tools: consent ? Math.max(0, policy.maximumTools - used.tools) : 0,
          repairs: consent ? Math.max(0, policy.maximumRepairs - used.repairs) : 0,
          slots,
          runtimeEnvironments: consent ? policy.maximumRuntimeEnvironments : 0
        }
        const record: SessionRecord = { sessionId: request.session_id, profile: profile.name, policy, consent, used, lease }
        yield* ledger.put(sessionKey(request.session_id), record, found?.revision ?? 0)
        const capability: CapabilityDescriptor = {
          kind: "jitbox-jit-capability",
          jitToolId: `jit_${options.namespace}_${request.session_id}`,
          toolSpecification: {
            restrictions: policy,
            deploymentConsent: consent,
            ...(request.instructions === undefined ? {} : { instructions: request.instructions })
          },
          contractVersion: request.contract_version ?? "1",
          task: request.task ?? null,
          ...(profile.sandboxNodeId === undefined
            ? { executionProfile: profile.name, resourceGroupName: `jitbox-${options.namespace}-${request.session_id}` }
            : { backend: "worker", sandboxNodeId: profile.sandboxNodeId })
        }
        const admitted: Admitted = { capability, lease: leaseOf(record, lease), policy, deploymentConsent: consent, location: profile.location }
        return admitted
      })

    const liveLease = (sessionId: string, leaseId: string) =>
      Effect.gen(function*() {
        const found = yield* readSession(sessionId)
        const lease = found?.record.lease
        if (found === undefined || lease == null || lease.id !== leaseId) {
          return yield* new AdmissionError({ reason: "LeaseNotFound", detail: `session '${sessionId}' holds no lease '${leaseId}'` })
        }
        if (lease.expiresAt <= clock.unsafeCurrentTimeMillis()) {
          yield* freeSlots(found.record.profile, lease.id)
          yield* ledger.put(sessionKey(sessionId), closed(found.record), found.revision)
          return yield* new AdmissionError({ reason: "LeaseExpired", detail: `the lease '${leaseId}' of session '${sessionId}' expired; admit the session again` })
        }
        return { record: found.record, revision: found.revision, lease }
      })

    const renew = (request: typeof requests.renew.Type) =>
      Effect.gen(function*() {
        const { lease, record, revision } = yield* liveLease(request.session_id, request.lease_id)
        const profile = yield* profileOf(record.profile)
        const expiresAt = clock.unsafeCurrentTimeMillis() + record.policy.leaseLifetimeSeconds * 1000
        const most = record.policy.maximumConcurrentInvocations
        const wanted = request.slots === undefined || !Number.isSafeInteger(request.slots) ? most : Math.max(0, Math.min(most, request.slots))
        const slots = record.consent ? yield* takeSlots(profile, lease.id, record.sessionId, wanted, expiresAt, undefined) : 0
        const left = record.policy.maximumInvocations - record.used.invocations
        const invocations = request.more && record.consent ? Math.min(left, lease.invocations + perGrant) : lease.invocations
        const renewed: LeaseRecord = { ...lease, expiresAt, slots, invocations }
        yield* ledger.put(sessionKey(record.sessionId), { ...record, lease: renewed }, revision)
        return leaseOf(record, renewed)
      })

    const release = (request: typeof requests.release.Type) =>
      Effect.gen(function*() {
        const { record, revision } = yield* liveLease(request.session_id, request.lease_id)
        yield* freeSlots(record.profile, request.lease_id)
        yield* ledger.put(sessionKey(record.sessionId), closed(record, request.spent), revision)
        return null
      })

    const policyOf = (request: typeof requests.policy.Type) => Effect.map(profileOf(request.profile), (profile) => profile.policy)

    const verify = (request: typeof requests.verify.Type) =>
      Effect.gen(function*() {
        const { lease, record } = yield* liveLease(request.session_id, request.lease_id)
        const profile = yield* profileOf(record.profile)
        const facts: LeaseFacts = {
          sessionId: record.sessionId,
          leaseId: lease.id,
          expiresAt: lease.expiresAt,
          lifetimeSeconds: record.policy.leaseLifetimeSeconds,
          profile: profile.name,
          deploymentConsent: record.consent,
          ...(profile.location === undefined ? {} : { location: profile.location }),
          ...(profile.sandboxNodeId === undefined ? {} : { sandboxNodeId: profile.sandboxNodeId }),
          ...(profile.credentialName === undefined ? {} : { credentialName: profile.credentialName })
        }
        return facts
      })

    const leases = (request: typeof requests.leases.Type) =>
      Effect.gen(function*() {
        const now = clock.unsafeCurrentTimeMillis()
        const profileViews: Array<ProfileView> = []
        for (const profile of profiles.values()) {
          const entry = yield* ledger.get(profileKey(profile.name))
          const holders = Object.values((entry?.value as ProfileRecord | undefined)?.holders ?? {})
          profileViews.push({
            name: profile.name,
            ...(profile.location === undefined ? {} : { location: profile.location }),
            ...(profile.sandboxNodeId === undefined ? {} : { sandboxNodeId: profile.sandboxNodeId }),
            policy: profile.policy,
            slotsHeld: holders.reduce((sum, holder) => holder.expiresAt > now ? sum + holder.slots : sum, 0)
          })
        }
        const limit = request.limit ?? leasesLimits.default
        const keys = yield* ledger.keys("session.", limit + 1)
        const sessions: Array<SessionBudget> = []
        for (const key of keys.slice(0, limit)) {
          const found = yield* readSession(key.slice("session.".length))
          if (found === undefined) continue
          // read only: an expired lease counts whole here as it will when it is next touched
          const live = found.record.lease !== null && found.record.lease.expiresAt > now
          const record = live ? found.record : closed(found.record)
          const maximum = record.policy
          sessions.push({
            sessionId: record.sessionId,
            profile: record.profile,
            deploymentConsent: record.consent,
            spent: record.used,
            left: {
              invocations: Math.max(0, maximum.maximumInvocations - record.used.invocations),
              tools: Math.max(0, maximum.maximumTools - record.used.tools),
              repairs: Math.max(0, maximum.maximumRepairs - record.used.repairs)
            },
            lease: record.lease === null ? null : leaseOf(record, record.lease)
          })
        }
        sessions.sort((a, b) => Number(b.lease !== null) - Number(a.lease !== null) || (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0))
        const answer: Leases = { profiles: profileViews, sessions, truncated: keys.length > limit }
        return answer
      })

    const encodeError = Schema.encodeSync(CoordinatorError)
    const run = Runtime.runPromise(runtime)
    const workers = yield* WorkerCapacity.track({ prefix, maxWorkers: options.maxWorkers, misses: options.capacityMisses })
    const endpoint = { name: "coordinator", subject: Subject.coordinatorAll(prefix), queueGroup: "coordinator", stats: ServiceDiscovery.counter() }
    yield* Transport.serve(endpoint.subject, { concurrency: 1, queue: endpoint.queueGroup }, ServiceDiscovery.measure(endpoint.stats, (message) => {
      answered++
      const decoded = Envelope.decodeKind(requests, message.data, message.subject)
      if (decoded instanceof TransportError) return Envelope.encode("error", { error: encodeError(decoded) })
      const op = message.subject.slice(message.subject.lastIndexOf(".") + 1)
      if (op !== decoded.kind) {
        return Envelope.encode("error", {
          error: encodeError(new TransportError({ reason: "Decode", subject: message.subject, detail: `kind '${decoded.kind}' sent to '${op}'` }))
        })
      }
      const effect: Effect.Effect<unknown, CoordinatorError> = decoded.kind === "admit"
        ? admit(decoded)
        : decoded.kind === "renew"
        ? renew(decoded)
        : decoded.kind === "release"
        ? release(decoded)
        : decoded.kind === "verify"
        ? verify(decoded)
        : decoded.kind === "workers"
        ? Effect.sync(() => workers.live(decoded.pool))
        : decoded.kind === "leases"
        ? leases(decoded)
        : policyOf(decoded)
      return run(
        effect.pipe(
          Effect.match({
            onSuccess: (value) => Envelope.encode("ok", { value }),
            onFailure: (error) => Envelope.encode("error", { error: encodeError(error) })
          })
        )
      )
    }))
    const service = yield* ServiceDiscovery.advertise({
      name: serviceName,
      version: ServiceDiscovery.runtimeVersion,
      id: options.coordinatorId,
      description: "admission, leases and policy of a jitbox namespace",
      metadata: { namespace: options.namespace },
      endpoints: [endpoint]
    }).pipe(Effect.catchTag("ConfigError", Effect.die))
    return { id: service.id, requests: () => answered }
  })

/** An admission as it crosses the wire. */
const AdmittedReply = Schema.Struct({
  capability: CapabilityDescriptor,
  lease: Lease,
  policy: JitPolicy.JitPolicy,
  deploymentConsent: Schema.Boolean,
  location: Schema.optional(Schema.String)
})

const decodeReply = <A, I>(schema: Schema.Schema<A, I>, op: string) => (value: unknown): Effect.Effect<A, TransportError> =>
  Effect.mapError(
    Schema.decodeUnknown(schema)(value),
    (error) => new TransportError({ reason: "Decode", subject: `coordinator.${op}`, detail: error.message.slice(0, 500) })
  )

const Reply = Schema.Union(
  Schema.Struct({ v: V, kind: Schema.Literal("ok"), value: Schema.Unknown }),
  Schema.Struct({ v: V, kind: Schema.Literal("error"), error: CoordinatorError })
)

/** @since 0.1.0 @category models */
export interface CoordinatorClient {
  readonly admit: (request: AdmitRequest) => Effect.Effect<Admitted, CoordinatorError>
  readonly renew: (sessionId: Ids.SessionId, leaseId: string, more: boolean, slots?: number) => Effect.Effect<Lease, CoordinatorError>
  readonly release: (sessionId: Ids.SessionId, leaseId: string, spent: Counts) => Effect.Effect<void, CoordinatorError>
  readonly policy: (profile: string) => Effect.Effect<JitPolicy.JitPolicy, CoordinatorError>
  /** The facts of a live lease, from the coordinator's records (for workers). */
  readonly verify: (sessionId: Ids.SessionId, leaseId: string) => Effect.Effect<LeaseFacts, CoordinatorError>
  /** The workers whose reports are live, of one pool or all, by worker id. */
  readonly workers: (pool?: string) => Effect.Effect<ReadonlyArray<WorkerCapacity.WorkerCapacity>, CoordinatorError>
  /** The profiles and the sessions' leases and budgets, from the ledger (read only; at most `limit` sessions, default 256). */
  readonly leases: (limit?: number) => Effect.Effect<Leases, CoordinatorError>
}

/** Where a coordinator is: its namespace (and subject root), or the subject prefix itself. @since 0.1.0 @category models */
export type Address =
  | { readonly namespace: Ids.Namespace; readonly subjectRoot?: string | undefined }
  | { readonly prefix: Subject.Prefix }

const prefixOf = (address: Address): Subject.Prefix =>
  "prefix" in address ? address.prefix : Subject.prefix(address.namespace, address.subjectRoot)

/**
 * The coordinator of a namespace as seen from a session's process.
 *
 * @since 0.1.0
 * @category constructors
 */
export const client = (
  options: Address & { readonly timeoutMs?: number | undefined }
): Effect.Effect<CoordinatorClient, never, Transport.Transport> =>
  Effect.gen(function*() {
    const transport = yield* Transport.Transport
    const prefix = prefixOf(options)
    const timeoutMs = options.timeoutMs ?? 10_000
    const call = (op: (typeof operations)[number], fields: Record<string, unknown>): Effect.Effect<unknown, CoordinatorError> => {
      const subject = Subject.coordinator(prefix, Ids.token(op))
      return Transport.request(subject, Envelope.encode(op, fields), { timeoutMs }).pipe(
        Effect.provideService(Transport.Transport, transport),
        Effect.flatMap((reply) => {
          const decoded = Envelope.decode(Reply, reply.data, subject)
          if (decoded instanceof TransportError) return Effect.fail(decoded)
          return decoded.kind === "ok" ? Effect.succeed(decoded.value) : Effect.fail(decoded.error)
        })
      )
    }
    return {
      admit: (request) =>
        call("admit", {
          session_id: request.sessionId,
          profile: request.profile,
          ...(request.policy === undefined ? {} : { policy: request.policy }),
          deployment_consent: request.deploymentConsent ?? false,
          ...(request.task === undefined ? {} : { task: request.task }),
          ...(request.contractVersion === undefined ? {} : { contract_version: request.contractVersion }),
          ...(request.instructions === undefined ? {} : { instructions: request.instructions })
        }).pipe(Effect.flatMap(decodeReply(AdmittedReply, "admit"))) as Effect.Effect<Admitted, CoordinatorError>,
      renew: (sessionId, leaseId, more, slots) =>
        call("renew", { session_id: sessionId, lease_id: leaseId, more, ...(slots === undefined ? {} : { slots }) }).pipe(
          Effect.flatMap(decodeReply(Lease, "renew"))
        ),
      release: (sessionId, leaseId, spent) => Effect.asVoid(call("release", { session_id: sessionId, lease_id: leaseId, spent })),
      policy: (profile) => call("policy", { profile }).pipe(Effect.flatMap(decodeReply(JitPolicy.JitPolicy, "policy"))),
      verify: (sessionId, leaseId) =>
        call("verify", { session_id: sessionId, lease_id: leaseId }).pipe(Effect.flatMap(decodeReply(LeaseFacts, "verify"))),
      workers: (pool) =>
        call("workers", pool === undefined ? {} : { pool }).pipe(Effect.flatMap(decodeReply(Schema.Array(WorkerCapacity.WorkerCapacity), "workers"))),
      leases: (limit) => call("leases", limit === undefined ? {} : { limit }).pipe(Effect.flatMap(decodeReply(Leases, "leases")))
    }
  })
