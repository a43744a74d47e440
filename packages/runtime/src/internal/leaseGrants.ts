/**
 * What the coordinator does for each operation of its protocol, over its typed ledger
 * (`leaseLedger`), as the principal the request's subject names (admit, renew and release check it): admit a session and grant its first lease, renew, release, verify a lease for
 * a worker, and report every lease for operators. Every grant is written (compare-and-set) before
 * it is answered; time is the context's `Clock`.
 */
import { HarnessError, type JitPolicy } from "@jitbox/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import {
  AdmissionError,
  type AdmitRequest,
  type Admitted,
  type CapabilityDescriptor,
  type Counts,
  type Lease,
  type LeaseFacts,
  type Leases,
  leasesLimits,
  type ProfileView,
  type RanRequest,
  type ReleaseRequest,
  type RenewRequest,
  type SessionBudget,
  type VerifyRequest
} from "../CoordinatorProtocol.js"
import * as ExecutionProfile from "../ExecutionProfile.js"
import * as Ids from "../Ids.js"
import { add, closed, type LeaseLedger, leaseSpent, none, type SessionRecord, withRan } from "./leaseLedger.js"

/** What the operations need. */
export interface Grants {
  readonly namespace: Ids.Namespace
  readonly profiles: ReadonlyMap<string, ExecutionProfile.ExecutionProfile>
  /** Invocations one grant adds to a lease. */
  readonly perGrant: number
  /** How long slots stay taken without a renewal. */
  readonly slotHoldMs: number
  readonly ledger: LeaseLedger
}

const newLeaseId = Ids.generator<Ids.LeaseId>("lease")

const profileOf = (grants: Grants, name: string) => {
  const profile = grants.profiles.get(name)
  return profile === undefined
    ? Effect.fail(new AdmissionError({ reason: "ProfileNotFound", detail: `no execution profile '${name}'; known: ${[...grants.profiles.keys()].join(", ")}` }))
    : Effect.succeed(profile)
}

const capabilityOf = (grants: Grants, request: AdmitRequest, profile: ExecutionProfile.ExecutionProfile, policy: JitPolicy.JitPolicy, consent: boolean): CapabilityDescriptor => ({
  kind: "jitbox-jit-capability",
  jitToolId: `jit_${grants.namespace}_${request.sessionId}`,
  toolSpecification: {
    restrictions: policy,
    deploymentConsent: consent,
    ...(request.instructions === undefined ? {} : { instructions: request.instructions })
  },
  contractVersion: request.contractVersion ?? "1",
  task: request.task ?? null,
  ...(profile.sandboxNodeId === undefined
    ? { executionProfile: profile.name, resourceGroupName: `jitbox-${grants.namespace}-${request.sessionId}` }
    : { backend: "worker", sandboxNodeId: profile.sandboxNodeId })
})

/** The profile, when `principal` may admit under it: one that lists `principals` admits only those. */
const admittingProfileOf = (grants: Grants, name: string, principal: Ids.Principal) =>
  Effect.flatMap(profileOf(grants, name), (profile) =>
    profile.principals === undefined || profile.principals.includes(principal)
      ? Effect.succeed(profile)
      : Effect.fail(new AdmissionError({ reason: "NotAllowed", detail: `principal '${principal}' may not admit sessions under the execution profile '${name}'` })))

const notOwner = (sessionId: string, owner: string, principal: string, what: string) =>
  new AdmissionError({ reason: "NotOwner", detail: `session '${sessionId}' was admitted by principal '${owner}'; principal '${principal}' may not ${what} it` })

/** `lease` holding `slots`, kept for it until `until` (never past its expiry); none: no date. */
const withSlots = (lease: Lease, slots: number, until: number): Lease => {
  const { slotsUntil: _previous, ...rest } = lease
  return slots > 0 ? { ...rest, slots, slotsUntil: Math.min(until, lease.expiresAt) } : { ...rest, slots }
}

/** The answer to an admission: the capability descriptor, the lease, and what it spent when resumed. */
const admittedOf = (grants: Grants, request: AdmitRequest, profile: ExecutionProfile.ExecutionProfile, record: SessionRecord, lease: Lease, spent?: Counts): Admitted => ({
  capability: capabilityOf(grants, request, profile, record.policy, record.consent),
  lease,
  policy: record.policy,
  deploymentConsent: record.consent,
  ...(profile.location === undefined ? {} : { location: profile.location }),
  ...(spent === undefined ? {} : { spent })
})

/** Whether an admission of a session with a live lease asks for what that lease already is. */
const resumes = (record: SessionRecord, profile: ExecutionProfile.ExecutionProfile, policy: JitPolicy.JitPolicy, consent: boolean): boolean =>
  record.profile === profile.name && record.consent === consent && JSON.stringify(record.policy) === JSON.stringify(policy)

/**
 * The owner's admission of a session whose lease lives: the same lease, extended, with the slots
 * it can take, and what it spent so far (the new host spends on from there). Nothing is revoked
 * and nothing is charged again.
 */
const resume = (grants: Grants, request: AdmitRequest, profile: ExecutionProfile.ExecutionProfile, record: SessionRecord, revision: number, now: number) =>
  Effect.gen(function*() {
    const extended: Lease = { ...record.lease!, expiresAt: now + record.policy.leaseLifetimeSeconds * 1000 }
    const slots = record.consent ? yield* grants.ledger.takeSlots(profile, extended, record.policy.maximumConcurrentInvocations, now, now + grants.slotHoldMs) : 0
    const lease = withSlots(extended, slots, now + grants.slotHoldMs)
    yield* grants.ledger.putSession({ ...record, lease }, revision)
    return admittedOf(grants, request, profile, record, lease, leaseSpent(record))
  })

/**
 * Admits a session as `principal`: the effective policy is the profile's ceiling narrowed by the
 * request. The owner admitting a session whose lease lives (a restart, or another host after a
 * crash) resumes that lease when it asks for the same profile, policy and consent; otherwise the
 * old lease ends, charged what it verifiably spent, and a new one is granted from what is left. A
 * session whose live lease another principal holds is refused (`NotOwner`); once its lease ended,
 * whoever may use the profile admits it and owns it.
 */
export const admit = (grants: Grants, principal: Ids.Principal, request: AdmitRequest) =>
  Effect.gen(function*() {
    const profile = yield* admittingProfileOf(grants, request.profile, principal)
    const policy = yield* Effect.try({
      try: () => ExecutionProfile.effectivePolicy(profile, request.policy),
      catch: (error) => error as HarnessError.ConfigError
    })
    const consent = request.deploymentConsent ?? false
    const now = yield* Clock.currentTimeMillis
    const found = yield* grants.ledger.session(request.sessionId)
    const live = found.record?.lease != null && found.record.lease.expiresAt > now
    if (live && found.record!.principal !== principal) return yield* notOwner(request.sessionId, found.record!.principal, principal, "admit")
    if (live && resumes(found.record!, profile, policy, consent)) return yield* resume(grants, request, profile, found.record!, found.revision, now)
    const previous = found.record === undefined ? undefined : closed(found.record, now)
    if (found.record?.lease != null) yield* grants.ledger.freeSlots(found.record.profile, found.record.lease.id)
    const used = previous?.used ?? none
    const granted: Lease = {
      id: newLeaseId(),
      sessionId: request.sessionId,
      expiresAt: now + policy.leaseLifetimeSeconds * 1000,
      lifetimeSeconds: policy.leaseLifetimeSeconds,
      invocations: consent ? Math.max(0, Math.min(grants.perGrant, policy.maximumInvocations - used.invocations)) : 0,
      tools: consent ? Math.max(0, policy.maximumTools - used.tools) : 0,
      repairs: consent ? Math.max(0, policy.maximumRepairs - used.repairs) : 0,
      slots: 0,
      runtimeEnvironments: consent ? policy.maximumRuntimeEnvironments : 0
    }
    const slots = consent ? yield* grants.ledger.takeSlots(profile, granted, policy.maximumConcurrentInvocations, now, now + grants.slotHoldMs) : 0
    const lease: Lease = withSlots(granted, slots, now + grants.slotHoldMs)
    const record: SessionRecord = { ...(previous?.ran === undefined ? {} : { ran: previous.ran }), format: 2, principal, sessionId: request.sessionId, profile: profile.name, policy, consent, used, lease }
    yield* grants.ledger.putSession(record, found.revision)
    return admittedOf(grants, request, profile, record, lease)
  })

/**
 * The session's live lease `leaseId`; an expired one is ended (counted whole) and refused. With
 * `asker` (renew, release), a record another principal owns is refused `NotOwner` and left as it is.
 */
const liveLease = (grants: Grants, sessionId: string, leaseId: string, asker?: { readonly principal: Ids.Principal; readonly what: string }) =>
  Effect.gen(function*() {
    const { record, revision } = yield* grants.ledger.session(sessionId)
    if (asker !== undefined && record !== undefined && record.principal !== asker.principal) {
      return yield* notOwner(sessionId, record.principal, asker.principal, asker.what)
    }
    const lease = record?.lease
    if (record === undefined || lease == null || lease.id !== leaseId) {
      return yield* new AdmissionError({ reason: "LeaseNotFound", detail: `session '${sessionId}' holds no lease '${leaseId}'` })
    }
    if (lease.expiresAt <= (yield* Clock.currentTimeMillis)) {
      yield* grants.ledger.freeSlots(record.profile, lease.id)
      yield* grants.ledger.endSession(closed(record, lease.expiresAt), revision)
      return yield* new AdmissionError({ reason: "LeaseExpired", detail: `the lease '${leaseId}' of session '${sessionId}' expired; admit the session again` })
    }
    return { record, revision, lease }
  })

/** Extends a live lease, grants more invocations when asked, and sets the slots it holds. */
export const renew = (grants: Grants, principal: Ids.Principal, request: RenewRequest) =>
  Effect.gen(function*() {
    const { lease, record, revision } = yield* liveLease(grants, request.sessionId, request.leaseId, { principal, what: "renew" })
    const profile = yield* profileOf(grants, record.profile)
    const now = yield* Clock.currentTimeMillis
    const extended: Lease = { ...lease, expiresAt: now + record.policy.leaseLifetimeSeconds * 1000 }
    const most = record.policy.maximumConcurrentInvocations
    const wanted = request.slots === undefined || !Number.isSafeInteger(request.slots) ? most : Math.max(0, Math.min(most, request.slots))
    const slots = record.consent ? yield* grants.ledger.takeSlots(profile, extended, wanted, now, now + grants.slotHoldMs) : 0
    const left = record.policy.maximumInvocations - record.used.invocations
    const invocations = request.more && record.consent ? Math.min(left, lease.invocations + grants.perGrant) : lease.invocations
    const renewed: Lease = { ...withSlots(extended, slots, now + grants.slotHoldMs), invocations }
    const reported = request.spent === undefined ? record.reported : leaseSpent(record, request.spent)
    yield* grants.ledger.putSession({ ...record, lease: renewed, ...(reported === undefined ? {} : { reported }) }, revision)
    return renewed
  })

/** Ends a lease; what the session reports unspent returns to its budget. */
export const release = (grants: Grants, principal: Ids.Principal, request: ReleaseRequest) =>
  Effect.gen(function*() {
    const { record, revision } = yield* liveLease(grants, request.sessionId, request.leaseId, { principal, what: "release" })
    yield* grants.ledger.freeSlots(record.profile, request.leaseId)
    yield* grants.ledger.endSession(closed(record, yield* Clock.currentTimeMillis, request.spent), revision)
    return null
  })

/** Counts one worker's report toward each lease it names; a report the ledger cannot take is logged and dropped. */
export const ran = (grants: Grants, request: RanRequest) =>
  Effect.as(
    Effect.forEach(request.leases, ({ invocations, leaseId, sessionId }) =>
      Effect.gen(function*() {
        const { record, revision } = yield* grants.ledger.session(sessionId)
        const counted = record === undefined ? undefined : withRan(record, leaseId, invocations)
        if (counted !== undefined) yield* grants.ledger.putSession(counted, revision)
      }).pipe(Effect.catchAll((error) => Effect.logWarning(`jitbox: a worker's count of lease '${leaseId}' was not recorded: ${error.message}`))), { discard: true }),
    null
  )

/** A profile's ceiling. */
export const policy = (grants: Grants, request: { readonly profile: string }) =>
  Effect.map(profileOf(grants, request.profile), (profile) => profile.policy)

/** What the coordinator's records say of a live lease: a worker trusts these, never the invocation. */
export const verify = (grants: Grants, request: VerifyRequest) =>
  Effect.gen(function*() {
    const { lease, record } = yield* liveLease(grants, request.sessionId, request.leaseId)
    const profile = yield* profileOf(grants, record.profile)
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

const budgetOf = (record: SessionRecord, now: number): SessionBudget => {
  // read only: an expired lease counts here as it will when it is next touched
  const live = record.lease !== null && record.lease.expiresAt > now
  const current = live || record.lease === null ? record : closed(record, record.lease.expiresAt)
  const spent = live ? add(current.used, leaseSpent(current)) : current.used
  const maximum = current.policy
  return {
    sessionId: current.sessionId,
    profile: current.profile,
    principal: current.principal,
    deploymentConsent: current.consent,
    spent,
    left: {
      invocations: Math.max(0, maximum.maximumInvocations - spent.invocations),
      tools: Math.max(0, maximum.maximumTools - spent.tools),
      repairs: Math.max(0, maximum.maximumRepairs - spent.repairs)
    },
    lease: current.lease
  }
}

/** Every profile with the slots its live leases hold, and the sessions' budgets (live leases first). */
export const leases = (grants: Grants, request: { readonly limit?: number | undefined }) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const profiles: Array<ProfileView> = []
    for (const profile of grants.profiles.values()) {
      const holders = yield* grants.ledger.holders(profile.name, now)
      profiles.push({
        name: profile.name,
        ...(profile.location === undefined ? {} : { location: profile.location }),
        ...(profile.sandboxNodeId === undefined ? {} : { sandboxNodeId: profile.sandboxNodeId }),
        policy: profile.policy,
        slotsHeld: holders.reduce((sum, holder) => sum + holder.slots, 0),
        ...(profile.principals === undefined ? {} : { principals: profile.principals })
      })
    }
    const limit = request.limit ?? leasesLimits.default
    const ids = yield* grants.ledger.sessionIds(limit + 1)
    const sessions: Array<SessionBudget> = []
    for (const sessionId of ids.slice(0, limit)) {
      const { record } = yield* grants.ledger.session(sessionId)
      if (record !== undefined) sessions.push(budgetOf(record, now))
    }
    sessions.sort((a, b) => Number(b.lease !== null) - Number(a.lease !== null) || (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0))
    const answer: Leases = { profiles, sessions, truncated: ids.length > limit }
    return answer
  })
