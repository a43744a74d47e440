/**
 * The root coordinator of one namespace: an Effect scoped actor serving `coordinator.*.*`
 * (`coordinator.<principal>.<op>`), one handler per operation of `CoordinatorProtocol.operations`
 * (the client is `CoordinatorClient`). The principal token says who asks: NATS lets each user
 * publish only its own principal's subjects (`jitbox auth config`), so the coordinator knows the
 * asker from the subject.
 *
 * - Ownership: a session's record keeps the principal that admitted it. `renew` and `release` by
 *   another principal fail `AdmissionError` `NotOwner`, and so does an `admit` of a session whose
 *   live lease another principal holds. A profile that lists `principals` admits only those
 *   (others: `NotAllowed`), which keeps its `credentialName` to them. `verify`, `policy`,
 *   `workers` and `leases` answer any principal.
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
 * - `ran`: a worker's count of the invocations it ran under each lease (every second while it
 *   runs any). NATS lets only workers publish it (`jitbox auth config`).
 *
 * Every grant is written to the `Ledger` (compare-and-set) before it is answered. What a lease
 * spent is counted from the records, not from the host's word: invocations are the most of what
 * the workers counted (`ran`) and what the host reported (renewals, release); tool versions and
 * repairs, which run nothing until called, are what the host reported (it renews each time it
 * creates a version). A lease that ran out, or was lost with its host, is charged that and no
 * more; the owner admitting its session again while the lease lives resumes it (a restart, or
 * another host after a crash) and is told what it spent. A profile's concurrency slots are held
 * per lease, so the sessions of one profile together never hold more than it allows.
 *
 * The ledger is compacted: a session's record whose lease ended is kept `ledgerRetentionMs`
 * (default 24 h) after the lease ended, so a session admitted again within that time keeps what it
 * spent, and one whose lease ended having spent nothing is deleted at once. A fiber on the context's
 * `Clock` sweeps the ledger every `sweepIntervalMs` (default 60 s), looking at the `sweepLimit`
 * (default 256) least recently written session records each time: the ledger holds the live
 * sessions and those that ended within the retention, however many sessions were ever admitted.
 * Time is the context's `Clock`. It answers NATS service discovery (`ServiceDiscovery`) as
 * `jitbox-coordinator`.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@jitbox/core"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { operations } from "./CoordinatorProtocol.js"
import type * as ExecutionProfile from "./ExecutionProfile.js"
import * as Ids from "./Ids.js"
import { Ledger } from "./Ledger.js"
import * as Protocol from "./Protocol.js"
import * as ServiceDiscovery from "./ServiceDiscovery.js"
import * as Subject from "./Subject.js"
import * as Transport from "./Transport.js"
import type { TransportError } from "./TransportError.js"
import * as WorkerCapacity from "./WorkerCapacity.js"
import * as LeaseGrants from "./internal/leaseGrants.js"
import * as LeaseLedger from "./internal/leaseLedger.js"
import { promiseRunner } from "./internal/promiseRunner.js"

/** @since 0.1.0 @category models */
export interface CoordinatorOptions {
  readonly namespace: Ids.Namespace
  readonly subjectRoot?: string | undefined
  readonly profiles: ReadonlyArray<ExecutionProfile.ExecutionProfile>
  /** Invocations one grant adds to a lease (default 256); the rest of the budget stays with the coordinator. */
  readonly invocationsPerGrant?: number | undefined
  /**
   * How long a lease keeps its concurrency slots without a renewal (default 30 000 ms): a session
   * that holds slots renews within it, and slots nobody renews (a session admitted and never
   * used, a host that died) go back to the profile.
   */
  readonly slotHoldMs?: number | undefined
  /** Its id in NATS service discovery (default: a fresh one). */
  readonly coordinatorId?: string | undefined
  /** Workers whose capacity it keeps at most (default 256; `WorkerCapacity`); a new worker's report finding the table full is dropped. */
  readonly maxWorkers?: number | undefined
  /** Report intervals a worker may miss before it is forgotten (default 3). */
  readonly capacityMisses?: number | undefined
  /** The longest a worker is kept without a report, whatever interval it claims (default 15 000 ms). */
  readonly capacityTtlMs?: number | undefined
  /** How long a session's ledger record is kept after its lease ended (default 24 h); 0: deleted by the next sweep. */
  readonly ledgerRetentionMs?: number | undefined
  /** How often the ledger is swept for ended records (default 60 000 ms). */
  readonly sweepIntervalMs?: number | undefined
  /** Session records one sweep looks at, at most (default 256). */
  readonly sweepLimit?: number | undefined
}

/** @since 0.1.0 @category constants */
export const defaults = {
  slotHoldMs: 30_000,
  ledgerRetentionMs: 24 * 60 * 60 * 1000,
  sweepIntervalMs: 60_000,
  sweepLimit: 256
} as const

const checkInteger = (option: string, value: number, least: number) =>
  Number.isSafeInteger(value) && value >= least
    ? Effect.succeed(value)
    : Effect.fail(new HarnessError.ConfigError({ option, detail: `expected an integer ≥ ${least}, got ${value}` }))

/** The name coordinators answer NATS service discovery under (`nats micro ls`). @since 0.1.0 @category constants */
export const serviceName = "jitbox-coordinator"

/** @since 0.1.0 @category models */
export interface Coordinator {
  /** Its id in NATS service discovery. */
  readonly id: string
  /** Requests answered so far (each operation counts once). */
  readonly requests: () => number
}

/**
 * Serves the coordinator of `options.namespace` until the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: CoordinatorOptions
): Effect.Effect<Coordinator, TransportError | HarnessError.ConfigError, Scope.Scope | Transport.Transport | Ledger> =>
  Effect.gen(function*() {
    const perGrant = options.invocationsPerGrant ?? 256
    if (!Number.isSafeInteger(perGrant) || perGrant < 1) {
      return yield* new HarnessError.ConfigError({ option: "invocationsPerGrant", detail: `expected an integer ≥ 1, got ${perGrant}` })
    }
    const slotHoldMs = yield* checkInteger("slotHoldMs", options.slotHoldMs ?? defaults.slotHoldMs, 1)
    const retentionMs = yield* checkInteger("ledgerRetentionMs", options.ledgerRetentionMs ?? defaults.ledgerRetentionMs, 0)
    const sweepIntervalMs = yield* checkInteger("sweepIntervalMs", options.sweepIntervalMs ?? defaults.sweepIntervalMs, 1)
    const sweepLimit = yield* checkInteger("sweepLimit", options.sweepLimit ?? defaults.sweepLimit, 1)
    const prefix = Subject.prefix(options.namespace, options.subjectRoot)
    const grants: LeaseGrants.Grants = {
      namespace: options.namespace,
      profiles: new Map(options.profiles.map((profile) => [profile.name, profile])),
      perGrant,
      slotHoldMs,
      ledger: LeaseLedger.make(yield* Ledger)
    }
    const runner = promiseRunner(yield* Effect.runtime<never>())
    // The operations and each step of a sweep take turns: a listing of the ledger (the KV client's
    // `keys`) never runs while a record is being deleted, which would stall it.
    const lock = yield* Effect.makeSemaphore(1)
    const step = lock.withPermits(1)
    const run = <A, E>(effect: Effect.Effect<A, E>) => runner(step(effect))
    const sweep = Effect.flatMap(Clock.currentTimeMillis, (now) => grants.ledger.compact(now, retentionMs, sweepLimit, step)).pipe(
      Effect.catchAll((error) => Effect.logWarning(`jitbox: the ledger sweep failed, the next one tries again: ${error.message}`))
    )
    yield* Effect.forkScoped(Effect.interruptible(Effect.schedule(sweep, Schedule.spaced(Duration.millis(sweepIntervalMs)))))
    const workers = yield* WorkerCapacity.track({
      prefix,
      maxWorkers: options.maxWorkers,
      misses: options.capacityMisses,
      maxTtlMs: options.capacityTtlMs
    })
    // the asker is the subject's principal token: NATS permissions decide who may publish there
    const asker = (served?: Transport.ServeRequest): Ids.Principal =>
      (served === undefined ? undefined : Subject.coordinatorParts(served.subject)?.principal) ?? Ids.defaultPrincipal
    const handlers: Protocol.Handlers<typeof operations> = {
      admit: (request, served) => run(LeaseGrants.admit(grants, asker(served), request)),
      renew: (request, served) => run(LeaseGrants.renew(grants, asker(served), request)),
      release: (request, served) => run(LeaseGrants.release(grants, asker(served), request)),
      policy: (request) => run(LeaseGrants.policy(grants, request)),
      verify: (request) => run(LeaseGrants.verify(grants, request)),
      ran: (request) => run(LeaseGrants.ran(grants, request)),
      workers: ({ pool }) => workers.live(pool),
      leases: (request) => run(LeaseGrants.leases(grants, request))
    }
    const serve = Protocol.serve(operations, handlers, { kindOf: (subject) => Subject.coordinatorParts(subject)?.op ?? subject.slice(subject.lastIndexOf(".") + 1) })
    let answered = 0
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
    })
    return { id: service.id, requests: () => answered }
  })
