/**
 * The root coordinator of one namespace: an Effect scoped actor serving `coordinator.<op>`, one
 * handler per operation of `CoordinatorProtocol.operations` (the client is `CoordinatorClient`).
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
import type * as Scope from "effect/Scope"
import {
  AdmissionError,
  type AdmitRequest,
  type CapabilityDescriptor,
  type Counts,
  type Lease,
  type LeaseFacts,
  type Leases,
  leasesLimits,
  operations,
  type ProfileView,
  type ReleaseRequest,
  type RenewRequest,
  type SessionBudget,
  type VerifyRequest
} from "./CoordinatorProtocol.js"
import * as ExecutionProfile from "./ExecutionProfile.js"
import * as Ids from "./Ids.js"
import { Ledger } from "./Ledger.js"
import * as Protocol from "./Protocol.js"
import * as ServiceDiscovery from "./ServiceDiscovery.js"
import * as Subject from "./Subject.js"
import * as Transport from "./Transport.js"
import type { TransportError } from "./TransportError.js"
import * as WorkerCapacity from "./WorkerCapacity.js"
import { promiseRunner } from "./internal/promiseRunner.js"

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

    const admit = (request: AdmitRequest) =>
      Effect.gen(function*() {
        const profile = yield* profileOf(request.profile)
        const policy = yield* Effect.try({
          try: () => ExecutionProfile.effectivePolicy(profile, request.policy),
          catch: (error) => error as HarnessError.ConfigError
        })
        const consent = request.deploymentConsent ?? false
        const now = clock.unsafeCurrentTimeMillis()
        const found = yield* readSession(request.sessionId)
        // A session admitted again (another process, a restart) keeps what it spent; its old lease ends whole.
        const previous = found === undefined ? undefined : closed(found.record)
        if (found?.record.lease != null) yield* freeSlots(found.record.profile, found.record.lease.id)
        const used = previous?.used ?? none
        const id = newLeaseId()
        const expiresAt = now + policy.leaseLifetimeSeconds * 1000
        const slots = consent ? yield* takeSlots(profile, id, request.sessionId, policy.maximumConcurrentInvocations, expiresAt, undefined) : 0
        const lease: LeaseRecord = {
          id,
          expiresAt,
          invocations: consent ? Math.max(0, Math.min(perGrant, policy.maximumInvocations - used.invocations)) : 0,
          tools: consent ? Math.max(0, policy.maximumTools - used.tools) : 0,
          repairs: consent ? Math.max(0, policy.maximumRepairs - used.repairs) : 0,
          slots,
          runtimeEnvironments: consent ? policy.maximumRuntimeEnvironments : 0
        }
        const record: SessionRecord = { sessionId: request.sessionId, profile: profile.name, policy, consent, used, lease }
        yield* ledger.put(sessionKey(request.sessionId), record, found?.revision ?? 0)
        const capability: CapabilityDescriptor = {
          kind: "jitbox-jit-capability",
          jitToolId: `jit_${options.namespace}_${request.sessionId}`,
          toolSpecification: {
            restrictions: policy,
            deploymentConsent: consent,
            ...(request.instructions === undefined ? {} : { instructions: request.instructions })
          },
          contractVersion: request.contractVersion ?? "1",
          task: request.task ?? null,
          ...(profile.sandboxNodeId === undefined
            ? { executionProfile: profile.name, resourceGroupName: `jitbox-${options.namespace}-${request.sessionId}` }
            : { backend: "worker", sandboxNodeId: profile.sandboxNodeId })
        }
        return { capability, lease: leaseOf(record, lease), policy, deploymentConsent: consent, location: profile.location }
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

    const renew = (request: RenewRequest) =>
      Effect.gen(function*() {
        const { lease, record, revision } = yield* liveLease(request.sessionId, request.leaseId)
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

    const release = (request: ReleaseRequest) =>
      Effect.gen(function*() {
        const { record, revision } = yield* liveLease(request.sessionId, request.leaseId)
        yield* freeSlots(record.profile, request.leaseId)
        yield* ledger.put(sessionKey(record.sessionId), closed(record, request.spent), revision)
        return null
      })

    const policyOf = (request: { readonly profile: string }) => Effect.map(profileOf(request.profile), (profile) => profile.policy)

    const verify = (request: VerifyRequest) =>
      Effect.gen(function*() {
        const { lease, record } = yield* liveLease(request.sessionId, request.leaseId)
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

    const leases = (request: { readonly limit?: number | undefined }) =>
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

    const run = promiseRunner(runtime)
    const workers = yield* WorkerCapacity.track({ prefix, maxWorkers: options.maxWorkers, misses: options.capacityMisses })
    const handlers: Protocol.Handlers<typeof operations> = {
      admit: (request) => run(admit(request)),
      renew: (request) => run(renew(request)),
      release: (request) => run(release(request)),
      policy: (request) => run(policyOf(request)),
      verify: (request) => run(verify(request)),
      workers: ({ pool }) => workers.live(pool),
      leases: (request) => run(leases(request))
    }
    const serve = Protocol.serve(operations, handlers, { kindOf: (subject) => subject.slice(subject.lastIndexOf(".") + 1) })
    const endpoint = { name: "coordinator", subject: Subject.coordinatorAll(prefix), queueGroup: "coordinator", stats: ServiceDiscovery.counter() }
    yield* Transport.serve(endpoint.subject, { concurrency: 1, queue: endpoint.queueGroup }, ServiceDiscovery.measure(endpoint.stats, (message) => {
      answered++
      return serve(message)
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
