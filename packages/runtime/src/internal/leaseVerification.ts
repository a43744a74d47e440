/**
 * A worker's admission of a request (worker side of the coordinator's `verify`): whether the
 * session's lease lets it run here, and with which environment (the credential its profile names).
 *
 * The coordinator's answer for a (session, lease) is kept for a quarter of the lease's lifetime
 * (at most 30 s) by the context's `Clock`; requests for the same lease while it is asked wait for
 * the same answer. At most `verifiedLimit` leases are kept (the oldest is dropped first). A hit is
 * a map read: no Effect runs on the invocation path unless the coordinator must be asked.
 */
import { HarnessError } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import * as CoordinatorClient from "../CoordinatorClient.js"
import type * as CoordinatorProtocol from "../CoordinatorProtocol.js"
import type * as Ids from "../Ids.js"
import type * as Subject from "../Subject.js"
import type * as Transport from "../Transport.js"
import type * as WorkerProtocol from "../WorkerProtocol.js"
import * as RanReports from "./ranReports.js"

/** Leases remembered as verified, at most. */
export const verifiedLimit = 4096

/** The longest a verified lease is trusted without asking again. */
export const maxTrustMs = 30_000

/** What a lease lets its request run with: the environment its profile's credential adds, if any. */
export type Admitted = Readonly<Record<string, string>> | undefined

export interface Options {
  readonly prefix: Subject.Prefix
  /** Who the worker asks the coordinator as (its NATS user; default `default`). */
  readonly principal?: string | undefined
  readonly requireAdmission: boolean
  readonly pool: Ids.PoolName
  readonly nodeId: Ids.WorkerId | undefined
  readonly credentials: Readonly<Record<string, string>>
  readonly verifyTimeoutMs: number | undefined
  /** How often it tells the coordinator what it ran under each lease (default 1 000 ms; `ranReports`). */
  readonly ranReportMs?: number | undefined
}

export interface LeaseVerification {
  /** Resolves when the request's lease allows it to run here; rejects with `NotAdmitted` (or the coordinator's failure) otherwise. */
  readonly admit: (request: WorkerProtocol.Activation, pinned: boolean) => Promise<Admitted>
  /** Counts an invocation the lease admitted, for the coordinator (`ranReports`); nothing without admission. */
  readonly ran: (request: WorkerProtocol.Activation) => void
  /** Leases trusted now. */
  readonly size: () => number
}

export const refuse = (name: string, detail: string) => new HarnessError.PolicyViolation({ name, reason: "NotAdmitted", detail })

/** Whether `facts` let a request of `name` run on this worker, and with which environment. */
export const check = (
  options: Options,
  facts: CoordinatorProtocol.LeaseFacts,
  name: string,
  pinned: boolean
): Either.Either<Admitted, HarnessError.PolicyViolation> => {
  if (!facts.deploymentConsent) return Either.left(refuse(name, `session '${facts.sessionId}' was admitted without deploymentConsent (JT-CFG-05)`))
  if (facts.sandboxNodeId !== undefined) {
    if (!pinned || facts.sandboxNodeId !== options.nodeId) return Either.left(refuse(name, `profile '${facts.profile}' pins its code to worker '${facts.sandboxNodeId}'`))
  } else if (facts.location !== undefined && facts.location !== options.pool) {
    return Either.left(refuse(name, `profile '${facts.profile}' runs in pool '${facts.location}', not '${options.pool}'`))
  }
  if (facts.credentialName === undefined) return Either.right(undefined)
  const secret = options.credentials[facts.credentialName]
  if (secret === undefined) {
    return Either.left(refuse(name, `profile '${facts.profile}' needs the credential '${facts.credentialName}', which this worker does not hold`))
  }
  return Either.right({ [facts.credentialName]: secret })
}

/** The worker's lease verification, on the coordinator of `prefix`, until the scope closes. */
export const make = (options: Options): Effect.Effect<LeaseVerification, never, Transport.Transport | Scope.Scope> =>
  Effect.gen(function*() {
    const coordinator = yield* CoordinatorClient.make({ prefix: options.prefix, principal: options.principal, timeoutMs: options.verifyTimeoutMs })
    const reports = options.requireAdmission ? yield* RanReports.make(coordinator, options.ranReportMs ?? RanReports.defaultIntervalMs) : undefined
    const run = Runtime.runPromise(yield* Effect.runtime<never>())
    const clock = yield* Effect.clock
    const trusted = new Map<string, { readonly facts: CoordinatorProtocol.LeaseFacts; readonly until: number }>()
    const asking = new Map<string, Promise<CoordinatorProtocol.LeaseFacts>>()

    const ask = (k: string, sessionId: Ids.SessionId, leaseId: Ids.LeaseId, name: string): Promise<CoordinatorProtocol.LeaseFacts> => {
      const pending = run(Effect.either(coordinator.verify({ sessionId, leaseId }))).then((answer) => {
        if (Either.isLeft(answer)) {
          if (answer.left._tag === "AdmissionError") throw refuse(name, `the coordinator does not admit it: ${answer.left.message}`)
          throw answer.left
        }
        const facts = answer.right
        if (trusted.size >= verifiedLimit) trusted.delete(trusted.keys().next().value!)
        trusted.set(k, { facts, until: clock.unsafeCurrentTimeMillis() + Math.min(maxTrustMs, facts.lifetimeSeconds * 250) })
        return facts
      }).finally(() => asking.delete(k))
      asking.set(k, pending)
      return pending
    }

    const facts = (sessionId: Ids.SessionId, leaseId: Ids.LeaseId, name: string): Promise<CoordinatorProtocol.LeaseFacts> | CoordinatorProtocol.LeaseFacts => {
      const k = `${sessionId}\u0000${leaseId}`
      const found = trusted.get(k)
      if (found !== undefined && found.until > clock.unsafeCurrentTimeMillis()) return found.facts
      if (found !== undefined) trusted.delete(k)
      return asking.get(k) ?? ask(k, sessionId, leaseId, name)
    }

    const admit = async (request: WorkerProtocol.Activation, pinned: boolean): Promise<Admitted> => {
      if (!options.requireAdmission) return undefined
      const name = request.toolName
      if (request.leaseId === undefined) {
        throw refuse(name, `session '${request.sessionId}' sent no lease: this worker runs code only for sessions the coordinator admitted`)
      }
      const verdict = check(options, await facts(request.sessionId, request.leaseId, name), name, pinned)
      if (Either.isLeft(verdict)) throw verdict.left
      return verdict.right
    }

    const ran = (request: WorkerProtocol.Activation): void => {
      if (reports !== undefined && request.leaseId !== undefined) reports.count(request.sessionId, request.leaseId)
    }

    return { admit, ran, size: () => trusted.size }
  })
