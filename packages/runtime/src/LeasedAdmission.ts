/**
 * Core's `Admission` for one session, with budgets leased from the root coordinator.
 *
 * The session is admitted once (`coordinator.admit`); the lease it gets says how many tool
 * versions, repairs and invocations it may spend and how many concurrency slots of its profile
 * it holds. Spending is local: `trySpendInvocation` and `acquire` never wait on the coordinator.
 * A background fiber renews the lease before it runs out (a quarter of `leaseLifetimeSeconds`
 * ahead), asks for more invocations when few are left, for slots when calls wait (again every
 * `retryMs` while the profile has none free), and gives its slots back once no call has used one
 * for `retryMs`, so an idle session never holds a profile's concurrency from the others. A lease
 * that reached `expiresAt` (by the context's `Clock`) spends nothing more; a budget that is spent
 * stays spent. Without `deploymentConsent` (JT-CFG-05) no version is accepted and no code call
 * runs. Closing the scope releases the lease, reporting what was spent; a release the
 * coordinator does not confirm is logged as such (JT-HOST-06), never assumed.
 *
 * @since 0.1.0
 */
import { Admission, HarnessError, JitPolicy, Slots } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as CoordinatorClient from "./CoordinatorClient.js"
import type * as CoordinatorProtocol from "./CoordinatorProtocol.js"
import type * as Transport from "./Transport.js"

/** @since 0.1.0 @category models */
export type LeasedAdmissionOptions = CoordinatorProtocol.AdmitRequest & CoordinatorClient.Address & LeaseTimings

/** @since 0.1.0 @category models */
export interface LeaseTimings {
  /** How long one coordinator request may take (default 10 000 ms). */
  readonly timeoutMs?: number | undefined
  /** How often a session retries a renewal that failed, or asks for slots while calls wait (default 1 000 ms, by the `Clock`). */
  readonly retryMs?: number | undefined
}

/** @since 0.1.0 @category models */
export interface LeasedAdmission extends Admission.AdmissionShape {
  readonly capability: CoordinatorProtocol.CapabilityDescriptor
  readonly deploymentConsent: boolean
  /** The worker pool of the session's profile (`location`), when it names one. */
  readonly location: string | undefined
  /** The lease as last granted. */
  readonly lease: () => CoordinatorProtocol.Lease
  /** Whether the lease ran out (or the coordinator no longer knows it): nothing more is spent. */
  readonly expired: () => boolean
  /** Renewals the coordinator granted. */
  readonly renewals: () => number
}

/**
 * Admits the session and keeps its lease until the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: LeasedAdmissionOptions
): Effect.Effect<LeasedAdmission, CoordinatorProtocol.CoordinatorError, Transport.Transport | Scope.Scope> =>
  Effect.gen(function*() {
    const client = yield* CoordinatorClient.make(options)
    const clock = yield* Effect.clock
    const retryMs = options.retryMs ?? 1_000
    const admitted = yield* client.admit(options)
    const policy: JitPolicy.JitPolicy = admitted.policy
    const consent = admitted.deploymentConsent
    const sessionId = options.sessionId

    let lease = admitted.lease
    let revoked = false
    // A lease holding the whole invocation budget has nothing more to ask for; nor has one granted
    // none with consent (the coordinator grants at least one while any is left).
    let upstreamSpent = lease.invocations >= policy.maximumInvocations || (consent && lease.invocations === 0)
    let renewals = 0
    const spent = { invocations: 0, tools: 0, repairs: 0 }
    const lowWater = Math.max(1, Math.ceil(lease.invocations / 2))
    const wake = yield* Queue.sliding<void>(1)

    const now = () => clock.unsafeCurrentTimeMillis()
    const expired = () => revoked || now() >= lease.expiresAt
    const left = () => lease.invocations - spent.invocations
    const needsMore = () => consent && !upstreamSpent && left() <= lowWater
    const most = policy.maximumConcurrentInvocations
    /** When a slot was last taken or given back, and when the coordinator last had none to add. */
    let lastUsed = now()
    let growRefusedAt = -Infinity
    const wantsSlots = () => consent && slots.waiting() > 0 && lease.slots < most && now() - growRefusedAt >= retryMs
    const wantsShrink = () => slots.waiting() === 0 && lease.slots > slots.running() && now() - lastUsed >= retryMs

    // a call waiting for a slot wakes the renewer only when the lease could hold more slots
    // while a renewal that gives slots back is in flight, no call takes more than it keeps: a call
    // taking one meanwhile would run on a slot the coordinator already counts as free
    let shrinkingTo = Infinity
    const slots = Slots.make(() => Math.min(lease.slots, shrinkingTo), () => {
      if (lease.slots < most) Queue.unsafeOffer(wake, undefined)
    })
    const acquire = (signal: AbortSignal | undefined): Promise<Admission.Release> =>
      slots.acquire(signal).then((release) => {
        lastUsed = now()
        return () => {
          lastUsed = now()
          release()
        }
      })

    const violation = (name: string, reason: HarnessError.PolicyViolation["reason"], detail: string) =>
      new HarnessError.PolicyViolation({ name, reason, detail })

    const renewOnce = Effect.gen(function*() {
      const more = needsMore()
      const before = lease.invocations
      const held = lease.slots
      const wanted = wantsSlots() ? most : wantsShrink() ? slots.running() : held
      if (wanted < held) shrinkingTo = wanted
      const result = yield* Effect.either(client.renew({ sessionId, leaseId: lease.id, more, slots: wanted })).pipe(
        Effect.onInterrupt(() => Effect.sync(() => shrinkingTo = Infinity))
      )
      if (result._tag === "Right") lease = result.right
      shrinkingTo = Infinity
      slots.pump()
      if (result._tag === "Right") {
        renewals++
        if (more && lease.invocations === before) upstreamSpent = true
        if (wanted > held && lease.slots <= held) growRefusedAt = now()
        return true
      }
      const error = result.left
      if (error._tag === "AdmissionError") {
        revoked = true
        return false
      }
      yield* Effect.logWarning(`jitbox: renewing the lease of session '${sessionId}' failed: ${error.message}`)
      yield* Effect.sleep(retryMs)
      return true
    })

    const renewer = Effect.gen(function*() {
      while (!expired()) {
        const t = now()
        let delay = Math.max(0, lease.expiresAt - lease.lifetimeSeconds * 250 - t)
        if (slots.waiting() > 0 && lease.slots < most) delay = Math.min(delay, Math.max(0, growRefusedAt + retryMs - t))
        // while it holds slots, it looks every retryMs whether they are still used
        if (lease.slots > 0) delay = Math.min(delay, Math.max(1, lease.slots > slots.running() ? lastUsed + retryMs - t : retryMs))
        if (!needsMore() && !wantsSlots() && !wantsShrink() && delay > 0) yield* Effect.race(Effect.sleep(delay), Queue.take(wake))
        if (expired()) return
        const renewAt = lease.expiresAt - lease.lifetimeSeconds * 250
        if (now() < renewAt && !needsMore() && !wantsSlots() && !wantsShrink()) continue
        if (!(yield* renewOnce)) return
      }
    })

    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        slots.clear()
        if (revoked) return
        const released = yield* Effect.either(client.release({ sessionId, leaseId: lease.id, spent }))
        if (released._tag === "Left") {
          yield* Effect.logWarning(
            `jitbox: the release of lease '${lease.id}' of session '${sessionId}' was not confirmed (${released.left.message}); the coordinator counts the lease as spent when it expires`
          )
        }
      })
    )
    // interruptible even when the admission is made inside an uninterruptible region (a session activating)
    yield* Effect.forkScoped(Effect.interruptible(renewer))

    const admission: LeasedAdmission = {
      policy,
      capability: admitted.capability,
      deploymentConsent: consent,
      location: admitted.location,
      lease: () => lease,
      grant: () => ({ id: lease.id, location: admitted.location, sandboxNodeId: admitted.capability.sandboxNodeId }),
      expired,
      renewals: () => renewals,
      checkVersion: ({ duration, examples, language, name, repair }) => {
        if (!consent) {
          throw violation(name, "ConsentRequired", `the session was admitted without deploymentConsent (JT-CFG-05): no model-written code runs`)
        }
        if (expired()) throw violation(name, "LeaseExpired", `the lease '${lease.id}' of session '${sessionId}' expired`)
        if (duration === "long" && !policy.allowLongRunning) {
          throw violation(name, "LongRunningNotAllowed", `'${name}' expects long invocations and the policy does not allow long-running tools`)
        }
        const needed = JitPolicy.policyLanguage(language)
        if (!policy.allowedLanguages.includes(needed)) {
          throw violation(name, "LanguageNotAllowed", `the policy allows ${policy.allowedLanguages.join(", ")}; '${name}' is ${needed}`)
        }
        if (spent.tools >= lease.tools) throw violation(name, "ToolBudgetExhausted", `the lease allows ${lease.tools} tool versions and all are used`)
        if (repair && spent.repairs >= lease.repairs) {
          throw violation(name, "RepairBudgetExhausted", `the lease allows ${lease.repairs} replacement versions and all are used`)
        }
        if (examples > left()) {
          throw violation(name, "InvocationBudgetExhausted", `running ${examples} examples needs more than the ${left()} invocations the lease has left`)
        }
      },
      commitVersion: (repair) => {
        spent.tools++
        if (repair) spent.repairs++
      },
      trySpendInvocation: () => {
        if (!consent || expired() || left() <= 0) {
          Queue.unsafeOffer(wake, undefined)
          return false
        }
        spent.invocations++
        if (needsMore()) Queue.unsafeOffer(wake, undefined)
        return true
      },
      refusal: () =>
        !consent
          ? "the session was admitted without deploymentConsent (JT-CFG-05): no model-written code runs"
          : expired()
          ? `the lease '${lease.id}' of session '${sessionId}' expired`
          : !upstreamSpent && left() <= 0
          ? `the ${lease.invocations} invocations granted so far to the lease of session '${sessionId}' are spent; more are being asked for`
          : undefined,
      acquire,
      timeoutSeconds: (duration) => duration === "long" ? policy.invocationTimeoutSeconds : policy.shortInvocationTimeoutSeconds,
      usage: () => ({ versions: spent.tools, repairs: spent.repairs, invocations: spent.invocations, running: slots.running(), waiting: slots.waiting() })
    }
    return admission
  })

/**
 * The harness's `Admission` from a coordinator lease.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: LeasedAdmissionOptions): Layer.Layer<Admission.Admission, CoordinatorProtocol.CoordinatorError, Transport.Transport> =>
  Layer.scoped(Admission.Admission, make(options))
