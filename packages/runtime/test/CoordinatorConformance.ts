/**
 * What the root coordinator and leased admission do over a transport and a ledger, as one suite:
 * Coordinator.test.ts runs it on the in-memory transport and ledger, packages/nats runs it on a
 * real nats-server with the JetStream KV ledger. Each test has a namespace of its own. A
 * "restart" closes the coordinator's scope and serves a new one over a ledger built anew for the
 * same namespace (on NATS: a new connection to the same bucket).
 */
import { HarnessError, JitHarness } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as Coordinator from "../src/Coordinator.js"
import * as CoordinatorClient from "../src/CoordinatorClient.js"
import * as CoordinatorProtocol from "../src/CoordinatorProtocol.js"
import * as ExecutionProfile from "../src/ExecutionProfile.js"
import * as Envelope from "../src/Envelope.js"
import * as Ids from "../src/Ids.js"
import * as LeasedAdmission from "../src/LeasedAdmission.js"
import { Ledger as LedgerTag, type Ledger } from "../src/Ledger.js"
import * as Subject from "../src/Subject.js"
import * as Transport from "../src/Transport.js"

let namespaces = 0
const freshNamespace = () => Ids.namespace(`coord${++namespaces}_${Math.random().toString(36).slice(2, 8)}`)

const profiles = ExecutionProfile.all([
  { name: "standard", policy: { allowedLanguages: ["Python", "JavaScript"], maximumInvocations: 100, maximumConcurrentInvocations: 2 } },
  { name: "pinned", sandboxNodeId: "node-7", location: "gpu" }
])

/** Lets the other side of the transport (and forked fibers) run. */
const settle = (ms = 5) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/** Waits (in real time, bounded) until `check` holds. */
const until = (check: () => boolean, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 400; i++) {
      if (check()) return
      yield* settle()
    }
    assert.fail(`timed out waiting for ${what}`)
  })

const one = `export const one = tool({ description: "Answers 1.", guidelines: "Use in tests." }, async () => 1)`

const code = { name: "t", language: "python" as const, duration: "short" as const, repair: false, examples: 0 }

export const coordinatorConformance = (
  name: string,
  transport: () => Layer.Layer<Transport.Transport, unknown>,
  ledger: (namespace: Ids.Namespace) => Layer.Layer<Ledger, unknown>
) =>
  describe(`Coordinator and LeasedAdmission on ${name}`, () => {
    /** Serves a coordinator in its own scope; closing the scope stops it (a "restart" is close + start). */
    const startCoordinator = (namespace: Ids.Namespace, options: Partial<Coordinator.CoordinatorOptions> = {}) =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(ledger(namespace), scope)
        const coordinator = yield* Coordinator.make({ namespace, profiles, ...options }).pipe(
          Effect.provide(context),
          Scope.extend(scope)
        )
        return { coordinator, stop: Scope.close(scope, Exit.void) }
      })

    const admission = (namespace: Ids.Namespace, sessionId: string, extra: Partial<LeasedAdmission.LeasedAdmissionOptions> = {}) =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const leased = yield* LeasedAdmission.make({
          namespace,
          sessionId: Ids.sessionId(sessionId),
          profile: "standard",
          deploymentConsent: true,
          ...extra
        }).pipe(Scope.extend(scope))
        return { leased, close: Scope.close(scope, Exit.void) }
      })

    const run = <A, E>(effect: Effect.Effect<A, E, Transport.Transport | Scope.Scope>) =>
      effect.pipe(Effect.scoped, Effect.provide(transport() as Layer.Layer<Transport.Transport>))

    it.effect("a ledger record that does not decode (garbage, another format) is replaced by the next grant, never a permanent block", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const records = Context.get(yield* Layer.build(ledger(namespace)), LedgerTag)
        yield* records.put("session.s1", "garbage", 0)
        yield* records.put("profile.standard", { holders: "nope" }, 0)
        yield* startCoordinator(namespace)
        const client = yield* CoordinatorClient.make({ namespace })
        const admitted = yield* client.admit({ sessionId: Ids.sessionId("s1"), profile: "standard", deploymentConsent: true })
        assert.strictEqual(admitted.lease.slots, 2)
        assert.strictEqual(admitted.lease.sessionId, "s1")
        const renewed = yield* client.renew({ sessionId: Ids.sessionId("s1"), leaseId: admitted.lease.id, more: true })
        assert.strictEqual(renewed.id, admitted.lease.id)
        const view = yield* client.leases()
        assert.deepStrictEqual(view.sessions.map((session) => session.sessionId), ["s1"])
        assert.strictEqual(view.profiles.find((profile) => profile.name === "standard")?.slotsHeld, 2)
      })))

    it.effect("the ledger is compacted: once the leases of many made-up sessions end, the session records return to the live ones (TestClock)", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const records = Context.get(yield* Layer.build(ledger(namespace)), LedgerTag)
        yield* startCoordinator(namespace, { ledgerRetentionMs: 60_000, sweepIntervalMs: 1_000, sweepLimit: 8 })
        const client = yield* CoordinatorClient.make({ namespace })
        const policy = { leaseLifetimeSeconds: 30 }
        const admit = (name: string, deploymentConsent = true) =>
          client.admit({ sessionId: Ids.sessionId(name), profile: "standard", policy, deploymentConsent })
        // Counted through the coordinator's `leases`, which takes turns with the sweep's steps.
        const sessionKeys = Effect.map(client.leases(), (view) => view.sessions.map((session) => `session.${session.sessionId}`).sort())
        // Made-up sessions, never renewed: half with consent (an expired lease is charged what it spent: nothing here), half without (granted nothing).
        for (let i = 0; i < 30; i++) yield* admit(`fake${i}`, i % 2 === 0)
        // Released having spent nothing: kept only while a worker's late count could still arrive.
        const idle = yield* admit("idle")
        yield* client.release({ sessionId: Ids.sessionId("idle"), leaseId: idle.lease.id, spent: { invocations: 0, tools: 0, repairs: 0 } })
        // Released having spent some: kept for the retention, so an admission within it keeps what was spent.
        const spent = yield* admit("spent")
        yield* client.release({ sessionId: Ids.sessionId("spent"), leaseId: spent.lease.id, spent: { invocations: 2, tools: 0, repairs: 0 } })
        let live = (yield* admit("live")).lease
        assert.strictEqual((yield* sessionKeys).length, 33)
        // Within the retention the spent budget is remembered.
        yield* TestClock.adjust("10 seconds")
        live = yield* client.renew({ sessionId: Ids.sessionId("live"), leaseId: live.id, more: false })
        const view = yield* client.leases()
        assert.deepStrictEqual(view.sessions.find((session) => session.sessionId === "spent")?.spent.invocations, 2)
        // The live session renews every 10 s; everything else ends (at 30 s) and is swept after the
        // retention (60 s), at most 8 records a sweep. Each step moves the clock 1 s and lets a sweep
        // under way finish (its store is real I/O), until only the live session is left.
        for (let i = 0; i < 1_000 && (yield* sessionKeys).join() !== "session.live"; i++) {
          yield* TestClock.adjust("1 second")
          if (i % 10 === 9) live = yield* client.renew({ sessionId: Ids.sessionId("live"), leaseId: live.id, more: false })
          yield* settle(10)
        }
        yield* settle(50)
        assert.deepStrictEqual(yield* sessionKeys, ["session.live"])
        assert.deepStrictEqual(yield* records.keys("session.", 1_000), ["session.live"])
        assert.deepStrictEqual((yield* client.leases()).sessions.map((session) => session.sessionId), ["live"])
        // A made-up session admitted again starts afresh; the live one renews as before.
        assert.strictEqual((yield* admit("fake0")).lease.invocations, (yield* admit("never-seen")).lease.invocations)
        assert.strictEqual((yield* client.renew({ sessionId: Ids.sessionId("live"), leaseId: live.id, more: false })).id, live.id)
      })))

    it.effect("leases: each profile with the slots held, each session with its live lease, what it spent and what is left; read only", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        yield* startCoordinator(namespace)
        const client = yield* CoordinatorClient.make({ namespace })
        const empty = yield* client.leases()
        assert.deepStrictEqual(empty.sessions, [])
        assert.deepStrictEqual(empty.profiles.map((profile) => [profile.name, profile.slotsHeld, profile.location]), [["standard", 0, undefined], ["pinned", 0, "gpu"]])
        const policy = { maximumInvocations: 20, allowedLanguages: ["JavaScript" as const] }
        const live = yield* client.admit({ sessionId: Ids.sessionId("s2"), profile: "standard", policy, deploymentConsent: true })
        const ended = yield* client.admit({ sessionId: Ids.sessionId("s1"), profile: "standard", policy, deploymentConsent: true })
        yield* client.release({ sessionId: Ids.sessionId("s1"), leaseId: ended.lease.id, spent: { invocations: 7, tools: 3, repairs: 0 } })
        const view = yield* client.leases()
        assert.isFalse(view.truncated)
        assert.strictEqual(view.profiles[0]!.slotsHeld, 2)
        assert.strictEqual(view.profiles[0]!.policy.maximumInvocations, 100)
        assert.deepStrictEqual(view.sessions.map((session) => [session.sessionId, session.lease?.id ?? null]), [["s2", live.lease.id], ["s1", null]])
        assert.deepStrictEqual(view.sessions[1]!.spent, { invocations: 7, tools: 3, repairs: 0 })
        assert.deepStrictEqual(view.sessions[1]!.left, { invocations: 13, tools: 5, repairs: 1 })
        assert.deepStrictEqual(view.sessions[0]!.left, { invocations: 20, tools: 8, repairs: 1 })
        const limited = yield* client.leases(1)
        assert.isTrue(limited.truncated)
        assert.strictEqual(limited.sessions.length, 1)
        // nothing was written: the live lease renews as before
        assert.strictEqual((yield* client.renew({ sessionId: Ids.sessionId("s2"), leaseId: live.lease.id, more: false })).id, live.lease.id)
      })))

    it.effect("admission returns the capability descriptor of JT-OUT with the effective policy", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        yield* startCoordinator(namespace)
        const client = yield* CoordinatorClient.make({ namespace })
        const admitted = yield* client.admit({
          sessionId: Ids.sessionId("s1"),
          profile: "standard",
          policy: { maximumInvocations: 20, allowedLanguages: ["JavaScript"] },
          deploymentConsent: true,
          task: { goal: "sum" },
          contractVersion: "2",
          instructions: "Use it for sums."
        })
        const capability = admitted.capability
        assert.strictEqual(capability.kind, "jitbox-jit-capability")
        assert.strictEqual(capability.jitToolId, `jit_${namespace}_s1`)
        assert.strictEqual(capability.executionProfile, "standard")
        assert.strictEqual(capability.resourceGroupName, `jitbox-${namespace}-s1`)
        assert.strictEqual(capability.contractVersion, "2")
        assert.deepStrictEqual(capability.task, { goal: "sum" })
        assert.strictEqual(capability.toolSpecification.instructions, "Use it for sums.")
        assert.strictEqual(capability.toolSpecification.deploymentConsent, true)
        assert.strictEqual(capability.toolSpecification.restrictions.maximumInvocations, 20)
        assert.deepStrictEqual(capability.toolSpecification.restrictions.allowedLanguages, ["JavaScript"])
        assert.strictEqual(admitted.lease.invocations, 20)
        assert.strictEqual(admitted.lease.slots, 2)

        const pinned = yield* client.admit({ sessionId: Ids.sessionId("s2"), profile: "pinned", deploymentConsent: true })
        assert.strictEqual(pinned.capability.backend, "worker")
        assert.strictEqual(pinned.capability.sandboxNodeId, "node-7")
        assert.strictEqual(pinned.capability.executionProfile, undefined)
        assert.strictEqual(pinned.capability.resourceGroupName, undefined)
        assert.strictEqual(pinned.location, "gpu")
      })))

    it.effect("a request for more than its profile, or an unknown profile, is a typed error across the wire", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        yield* startCoordinator(namespace)
        const client = yield* CoordinatorClient.make({ namespace })
        const wider = yield* Effect.flip(client.admit({ sessionId: Ids.sessionId("s1"), profile: "standard", policy: { maximumInvocations: 101 } }))
        assert.instanceOf(wider, HarnessError.ConfigError)
        assert.strictEqual((wider as HarnessError.ConfigError).option, "policy.maximumInvocations")
        const language = yield* Effect.flip(client.admit({ sessionId: Ids.sessionId("s1"), profile: "standard", policy: { allowedLanguages: ["Bash"] } }))
        assert.strictEqual((language as HarnessError.ConfigError).option, "policy.allowedLanguages")
        const unknown = yield* Effect.flip(client.admit({ sessionId: Ids.sessionId("s1"), profile: "premium" }))
        assert.instanceOf(unknown, CoordinatorProtocol.AdmissionError)
        assert.strictEqual((unknown as CoordinatorProtocol.AdmissionError).reason, "ProfileNotFound")
        const ceiling = yield* client.policy("standard")
        assert.strictEqual(ceiling.maximumInvocations, 100)
      })))

    it.effect("a session is its admitting principal's: renew, release and admit by another principal are refused NotOwner; the owner keeps its lease and budget", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        yield* startCoordinator(namespace)
        const owner = yield* CoordinatorClient.make({ namespace, principal: "sessions" })
        const other = yield* CoordinatorClient.make({ namespace, principal: "sessions2" })
        const sessionId = Ids.sessionId("victim")
        const policy = { maximumInvocations: 20, allowedLanguages: ["JavaScript" as const] }
        const admitted = yield* owner.admit({ sessionId, profile: "standard", policy, deploymentConsent: true })
        const leaseId = admitted.lease.id
        const refusals = [
          yield* Effect.flip(other.renew({ sessionId, leaseId, more: true, slots: 0 })),
          yield* Effect.flip(other.release({ sessionId, leaseId, spent: { invocations: 0, tools: 0, repairs: 0 } })),
          yield* Effect.flip(other.admit({ sessionId, profile: "standard", policy, deploymentConsent: true })),
          // the default principal is a principal like any other
          yield* Effect.flip((yield* CoordinatorClient.make({ namespace })).release({ sessionId, leaseId, spent: { invocations: 0, tools: 0, repairs: 0 } }))
        ]
        for (const refusal of refusals) {
          assert.instanceOf(refusal, CoordinatorProtocol.AdmissionError)
          assert.strictEqual((refusal as CoordinatorProtocol.AdmissionError).reason, "NotOwner")
        }
        // the owner's lease lives on, with its slots and its whole budget
        const view = yield* owner.leases()
        const victim = view.sessions.find((session) => session.sessionId === "victim")!
        assert.strictEqual(victim.lease?.id, leaseId)
        assert.strictEqual(victim.principal, "sessions")
        assert.strictEqual(victim.lease?.slots, 2)
        assert.deepStrictEqual(victim.spent, { invocations: 0, tools: 0, repairs: 0 })
        assert.deepStrictEqual(victim.left, { invocations: 20, tools: 8, repairs: 1 })
        const renewed = yield* owner.renew({ sessionId, leaseId, more: false })
        assert.strictEqual(renewed.id, leaseId)
        assert.strictEqual(renewed.slots, 2)
        // verify answers any principal (workers ask as their own)
        const facts = yield* (yield* CoordinatorClient.make({ namespace, principal: "worker-default" })).verify({ sessionId, leaseId })
        assert.strictEqual(facts.profile, "standard")
        yield* owner.release({ sessionId, leaseId, spent: { invocations: 3, tools: 1, repairs: 0 } })
        // once its lease ended, another principal may admit it: it keeps what was spent, and is the new owner's
        const again = yield* other.admit({ sessionId, profile: "standard", policy, deploymentConsent: true })
        assert.strictEqual(again.lease.invocations, 17)
        const late = yield* Effect.flip(owner.renew({ sessionId, leaseId: again.lease.id, more: false }))
        assert.strictEqual((late as CoordinatorProtocol.AdmissionError).reason, "NotOwner")
      })))

    it.effect("a LeasedAdmission renews and releases as its principal", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const { coordinator } = yield* startCoordinator(namespace)
        const { close, leased } = yield* admission(namespace, "s1", { principal: "sessions" })
        const other = yield* CoordinatorClient.make({ namespace, principal: "sessions2" })
        const stolen = yield* Effect.flip(other.admit({ sessionId: Ids.sessionId("s1"), profile: "standard", deploymentConsent: true }))
        assert.strictEqual((stolen as CoordinatorProtocol.AdmissionError).reason, "NotOwner")
        const before = coordinator.requests()
        yield* close
        assert.isAbove(coordinator.requests(), before)
        const view = yield* other.leases()
        assert.isNull(view.sessions.find((session) => session.sessionId === "s1")?.lease ?? null)
        assert.isFalse(leased.expired())
        const bad = yield* Effect.exit(LeasedAdmission.make({ namespace, sessionId: Ids.sessionId("s2"), profile: "standard", principal: "a.b" }))
        assert.isTrue(Exit.isFailure(bad))
      })))

    it.effect("a profile that lists principals admits only those: others are refused NotAllowed and its credential never reaches them", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const secret = ExecutionProfile.make({ name: "secret", credentialName: "API_KEY", principals: ["sessions"] })
        yield* startCoordinator(namespace, { profiles: [...profiles, secret] })
        const listed = yield* CoordinatorClient.make({ namespace, principal: "sessions" })
        const other = yield* CoordinatorClient.make({ namespace, principal: "sessions2" })
        const refused = yield* Effect.flip(other.admit({ sessionId: Ids.sessionId("s2"), profile: "secret", deploymentConsent: true }))
        assert.instanceOf(refused, CoordinatorProtocol.AdmissionError)
        assert.strictEqual((refused as CoordinatorProtocol.AdmissionError).reason, "NotAllowed")
        const defaulted = yield* Effect.flip((yield* CoordinatorClient.make({ namespace })).admit({ sessionId: Ids.sessionId("s3"), profile: "secret" }))
        assert.strictEqual((defaulted as CoordinatorProtocol.AdmissionError).reason, "NotAllowed")
        // nothing was recorded for the refused sessions
        const view = yield* listed.leases()
        assert.deepStrictEqual(view.sessions.map((session) => session.sessionId), [])
        assert.deepStrictEqual(view.profiles.find((profile) => profile.name === "secret")?.principals, ["sessions"])
        assert.isUndefined(view.profiles.find((profile) => profile.name === "standard")?.principals)
        const admitted = yield* listed.admit({ sessionId: Ids.sessionId("s1"), profile: "secret", deploymentConsent: true })
        const facts = yield* other.verify({ sessionId: Ids.sessionId("s1"), leaseId: admitted.lease.id })
        assert.strictEqual(facts.credentialName, "API_KEY")
        // profiles without principals admit anyone
        yield* other.admit({ sessionId: Ids.sessionId("s4"), profile: "standard", deploymentConsent: true })
      })))

    it.effect("a session record written before principals (format 1) is read as owned by default", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const records = Context.get(yield* Layer.build(ledger(namespace)), LedgerTag)
        yield* startCoordinator(namespace)
        const now = Date.now() + 3_600_000
        const lease = { id: "lease_old_1", sessionId: "old", expiresAt: now, lifetimeSeconds: 300, invocations: 10, tools: 2, repairs: 0, slots: 0, runtimeEnvironments: 1 }
        const policy = yield* (yield* CoordinatorClient.make({ namespace })).policy("standard")
        yield* records.put("session.old", { format: 1, sessionId: "old", profile: "standard", policy, consent: true, used: { invocations: 1, tools: 0, repairs: 0 }, lease }, 0)
        const other = yield* CoordinatorClient.make({ namespace, principal: "sessions" })
        const refused = yield* Effect.flip(other.renew({ sessionId: Ids.sessionId("old"), leaseId: Ids.leaseId("lease_old_1"), more: false }))
        assert.strictEqual((refused as CoordinatorProtocol.AdmissionError).reason, "NotOwner")
        const renewed = yield* (yield* CoordinatorClient.make({ namespace })).renew({ sessionId: Ids.sessionId("old"), leaseId: Ids.leaseId("lease_old_1"), more: false })
        assert.strictEqual(renewed.id, "lease_old_1")
        const written = yield* records.get("session.old")
        assert.strictEqual((written!.value as { format: number; principal: string }).format, 2)
        assert.strictEqual((written!.value as { format: number; principal: string }).principal, "default")
      })))

    it.effect("a session spends its lease locally: no coordinator request per call; a version created is reported once", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const { coordinator } = yield* startCoordinator(namespace)
        const client = yield* CoordinatorClient.make({ namespace })
        const { leased } = yield* admission(namespace, "s1", { policy: { maximumInvocations: 50 } })
        assert.strictEqual(coordinator.requests(), 1)
        leased.checkVersion(code)
        leased.commitVersion(false)
        yield* until(() => coordinator.requests() === 2, "the version's report")
        yield* settle(20)
        assert.deepStrictEqual((yield* client.leases()).sessions[0]!.spent, { invocations: 0, tools: 1, repairs: 0 })
        const before = coordinator.requests()
        for (let i = 0; i < 30; i++) {
          assert.isTrue(leased.trySpendInvocation())
          const release = yield* Effect.promise(() => leased.acquire(undefined))
          release()
        }
        yield* settle(20)
        assert.strictEqual(coordinator.requests(), before)
        assert.deepStrictEqual(leased.usage(), { versions: 1, repairs: 0, invocations: 30, running: 0, waiting: 0 })
      })))

    it.effect("the lease is renewed in the background before it expires (TestClock)", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const { coordinator } = yield* startCoordinator(namespace)
        const { leased } = yield* admission(namespace, "s1", { policy: { leaseLifetimeSeconds: 60 } })
        assert.strictEqual(leased.lease().expiresAt, 60_000)
        assert.strictEqual(leased.lease().slots, 2)
        yield* settle()
        // Idle for retryMs (1 s), the session gives its concurrency slots back to the profile.
        yield* TestClock.adjust("1 second")
        yield* until(() => leased.renewals() === 1, "the slots given back")
        assert.strictEqual(leased.lease().slots, 0)
        assert.strictEqual(leased.lease().expiresAt, 61_000)
        yield* TestClock.adjust("43 seconds")
        yield* settle(20)
        assert.strictEqual(leased.renewals(), 1)
        // At 46 s (a quarter of the lifetime ahead) the lease is renewed for another 60 s.
        yield* TestClock.adjust("2 seconds")
        yield* until(() => leased.renewals() === 2, "a renewal")
        assert.strictEqual(leased.lease().expiresAt, 46_000 + 60_000)
        assert.strictEqual(coordinator.requests(), 3)
        yield* TestClock.adjust("21 seconds")
        assert.isFalse(leased.expired())
        assert.isTrue(leased.trySpendInvocation())
      })))

    it.effect("a lease nobody renews expires: the session spends nothing more and the coordinator refuses it", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const first = yield* startCoordinator(namespace)
        const { leased } = yield* admission(namespace, "s1", { policy: { leaseLifetimeSeconds: 30 }, retryMs: 60_000 })
        const leaseId = leased.lease().id
        yield* first.stop
        yield* TestClock.adjust("31 seconds")
        assert.isTrue(leased.expired())
        assert.isFalse(leased.trySpendInvocation())
        assert.throws(() => leased.checkVersion(code), /expired/)
        yield* startCoordinator(namespace)
        const client = yield* CoordinatorClient.make({ namespace })
        const refused = yield* Effect.flip(client.renew({ sessionId: Ids.sessionId("s1"), leaseId: leaseId, more: false }))
        assert.instanceOf(refused, CoordinatorProtocol.AdmissionError)
        assert.strictEqual((refused as CoordinatorProtocol.AdmissionError).reason, "LeaseExpired")
      })))

    it.effect("an exhausted maximumInvocations stays exhausted across a coordinator restart", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const first = yield* startCoordinator(namespace)
        const one = yield* admission(namespace, "s1", { policy: { maximumInvocations: 3, maximumConcurrentInvocations: 1 } })
        for (let i = 0; i < 3; i++) assert.isTrue(one.leased.trySpendInvocation())
        assert.isFalse(one.leased.trySpendInvocation())
        yield* one.close
        yield* first.stop
        const second = yield* startCoordinator(namespace)
        const again = yield* admission(namespace, "s1", { policy: { maximumInvocations: 3, maximumConcurrentInvocations: 1 } })
        assert.strictEqual(again.leased.lease().invocations, 0)
        assert.isFalse(again.leased.trySpendInvocation())
        // known spent from the admission itself, before any renewal: a call is refused BudgetExhausted, not "being asked for"
        assert.strictEqual(again.leased.renewals(), 0)
        assert.isUndefined(again.leased.refusal!())
        yield* again.close
        yield* second.stop
      })))

    it.effect("a restart neither loses nor doubles a budget: the owner resumes its live lease; a lost lease is charged what its workers counted", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const first = yield* startCoordinator(namespace)
        const policy = { maximumInvocations: 10, leaseLifetimeSeconds: 30 }
        const one = yield* admission(namespace, "s1", { policy })
        assert.strictEqual(one.leased.lease().invocations, 10)
        for (let i = 0; i < 4; i++) assert.isTrue(one.leased.trySpendInvocation())
        yield* one.close // releases, reporting 4 spent
        yield* first.stop
        yield* startCoordinator(namespace)
        const client = yield* CoordinatorClient.make({ namespace })
        const sessionId = Ids.sessionId("s1")
        const second = yield* client.admit({ sessionId, profile: "standard", policy, deploymentConsent: true })
        assert.strictEqual(second.lease.invocations, 6)
        assert.isUndefined(second.spent)
        // Its host reports 1 spent at a renewal; a worker counts 2; then the host dies. The owner
        // admitting the session again (another host) resumes the same lease, told what it spent.
        yield* client.renew({ sessionId, leaseId: second.lease.id, more: false, spent: { invocations: 1, tools: 1, repairs: 0 } })
        yield* client.ran({ leases: [{ sessionId, leaseId: second.lease.id, invocations: 2 }] })
        const resumed = yield* client.admit({ sessionId, profile: "standard", policy, deploymentConsent: true })
        assert.strictEqual(resumed.lease.id, second.lease.id)
        assert.strictEqual(resumed.lease.invocations, 6)
        assert.deepStrictEqual(resumed.spent, { invocations: 2, tools: 1, repairs: 0 })
        const live = (yield* client.leases()).sessions[0]!
        assert.deepStrictEqual(live.spent, { invocations: 6, tools: 1, repairs: 0 })
        assert.deepStrictEqual(live.left.invocations, 4)
        // Nobody renews or releases it and it runs out: charged what was counted (the workers' 2
        // invocations, the host's 1 tool), not its whole grant.
        yield* TestClock.adjust("31 seconds")
        const third = yield* client.admit({ sessionId, profile: "standard", policy, deploymentConsent: true })
        assert.notStrictEqual(third.lease.id, second.lease.id)
        assert.strictEqual(third.lease.invocations, 4)
        assert.strictEqual(third.lease.tools, 7)
        // A LeasedAdmission of the owner resumes the live lease and spends on from what it spent.
        yield* client.ran({ leases: [{ sessionId, leaseId: third.lease.id, invocations: 1 }] })
        const host = yield* admission(namespace, "s1", { policy })
        assert.strictEqual(host.leased.lease().id, third.lease.id)
        for (let i = 0; i < 3; i++) assert.isTrue(host.leased.trySpendInvocation())
        assert.isFalse(host.leased.trySpendInvocation())
        yield* host.close
        assert.strictEqual((yield* client.leases()).sessions[0]!.left.invocations, 0)
      })))

    it.effect("what a lease is charged comes from the workers' counts: a release claiming less is charged what ran, and a late count still counts", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        yield* startCoordinator(namespace)
        const client = yield* CoordinatorClient.make({ namespace })
        const worker = yield* CoordinatorClient.make({ namespace, principal: "worker-default" })
        const sessionId = Ids.sessionId("s1")
        const policy = { maximumInvocations: 20 }
        const first = yield* client.admit({ sessionId, profile: "standard", policy, deploymentConsent: true })
        yield* worker.ran({ leases: [{ sessionId, leaseId: first.lease.id, invocations: 5 }] })
        yield* client.release({ sessionId, leaseId: first.lease.id, spent: { invocations: 0, tools: 0, repairs: 0 } })
        const second = yield* client.admit({ sessionId, profile: "standard", policy, deploymentConsent: true })
        assert.strictEqual(second.lease.invocations, 15)
        // a count of the first lease arriving after it ended is charged too; one of an unknown lease is dropped
        yield* worker.ran({ leases: [{ sessionId, leaseId: first.lease.id, invocations: 3 }, { sessionId, leaseId: Ids.leaseId("lease_made_up"), invocations: 9 }] })
        yield* client.release({ sessionId, leaseId: second.lease.id, spent: { invocations: 0, tools: 0, repairs: 0 } })
        const view = (yield* client.leases()).sessions[0]!
        assert.deepStrictEqual(view.spent.invocations, 8)
        // a report naming more leases than allowed, or a count below one, is refused whole by the coordinator
        const subject = Subject.coordinator(Subject.prefix(namespace), Ids.principal("worker-default"), Ids.token("ran"))
        const entry = { session_id: "s1", lease_id: first.lease.id, invocations: 1 }
        for (const leases of [Array.from({ length: CoordinatorProtocol.ranLimit + 1 }, () => entry), [{ ...entry, invocations: 0 }]]) {
          const reply = yield* Transport.request(subject, Envelope.encode("ran", { leases }), { timeoutMs: 5_000 })
          const parsed = JSON.parse(Transport.text(reply)) as { kind: string; error: { _tag: string; reason: string } }
          assert.strictEqual(parsed.error._tag, "ProtocolError")
          assert.strictEqual(parsed.error.reason, "Decode")
        }
        assert.deepStrictEqual((yield* client.leases()).sessions[0]!.spent.invocations, 8)
      })))

    it.effect("two sessions under one profile never hold more than its maximumConcurrentInvocations together", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        yield* startCoordinator(namespace)
        const a = yield* admission(namespace, "a", { retryMs: 1_000 })
        const b = yield* admission(namespace, "b", { retryMs: 1_000 })
        assert.strictEqual(a.leased.lease().slots + b.leased.lease().slots, 2)
        let running = 0
        let most = 0
        const done = new Map<LeasedAdmission.LeasedAdmission, number>([[a.leased, 0], [b.leased, 0]])
        const work = (leased: LeasedAdmission.LeasedAdmission) =>
          Effect.promise(async () => {
            const release = await leased.acquire(undefined)
            running++
            most = Math.max(most, running)
            await new Promise((resolve) => setTimeout(resolve, 2))
            running--
            release()
            done.set(leased, done.get(leased)! + 1)
          })
        const fibers = yield* Effect.forkAll([...Array.from({ length: 6 }, () => work(a.leased)), ...Array.from({ length: 6 }, () => work(b.leased))])
        yield* until(() => done.get(a.leased) === 6 && b.leased.usage().waiting === 6, "session a's calls")
        assert.strictEqual(done.get(b.leased), 0)
        // a goes idle: after retryMs it gives its slots back, and b's next renewal (it has waiting calls) takes them.
        for (let i = 0; i < 400 && done.get(b.leased)! < 6; i++) {
          yield* TestClock.adjust("1 second")
          yield* settle()
        }
        assert.strictEqual(done.get(b.leased), 6)
        yield* fibers.await
        assert.strictEqual(a.leased.lease().slots, 0, "the idle session holds no slot")
        assert.strictEqual(most, 2)
        yield* a.close
      })))

    it.effect("the slots of a lease nobody renews go back to the profile after slotHoldMs: made-up sessions cannot hold them for the lease's life (TestClock)", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        yield* startCoordinator(namespace, { slotHoldMs: 30_000 })
        const client = yield* CoordinatorClient.make({ namespace })
        const made = yield* client.admit({ sessionId: Ids.sessionId("made-up"), profile: "standard", deploymentConsent: true })
        assert.strictEqual(made.lease.slots, 2)
        assert.strictEqual(made.lease.slotsUntil, made.lease.expiresAt - made.lease.lifetimeSeconds * 1000 + 30_000)
        const real = yield* client.admit({ sessionId: Ids.sessionId("real"), profile: "standard", deploymentConsent: true })
        assert.strictEqual(real.lease.slots, 0, "the made-up session holds them all")
        assert.isUndefined(real.lease.slotsUntil)
        yield* TestClock.adjust("31 seconds")
        const renewed = yield* client.renew({ sessionId: Ids.sessionId("real"), leaseId: real.lease.id, more: false })
        assert.strictEqual(renewed.slots, 2, "nobody renewed the made-up session's slots: they went back to the profile")
      })))

    it.effect("a session using its slots renews them before slotHoldMs and keeps them; another waits (TestClock)", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        yield* startCoordinator(namespace, { slotHoldMs: 9_000 })
        const busy = yield* admission(namespace, "busy", { retryMs: 1_000 })
        const releases = yield* Effect.promise(() => Promise.all([busy.leased.acquire(undefined), busy.leased.acquire(undefined)]))
        const client = yield* CoordinatorClient.make({ namespace })
        for (let second = 0; second < 30; second++) {
          yield* TestClock.adjust("1 second")
          yield* settle()
        }
        assert.strictEqual(busy.leased.lease().slots, 2)
        assert.isAbove(busy.leased.lease().slotsUntil ?? 0, (yield* Clock.currentTimeMillis), "renewed before the hold ran out")
        const other = yield* client.admit({ sessionId: Ids.sessionId("other"), profile: "standard", deploymentConsent: true })
        assert.strictEqual(other.lease.slots, 0, "the busy session's slots were never free")
        for (const release of releases) release()
        yield* busy.close
      })))

    it.effect("a call taking a slot while its idle session gives slots back never runs on a slot the coordinator counts as free", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        yield* startCoordinator(namespace)
        // renewals take 100 ms (real time) on their way, so a call can come in while one is in flight
        const direct = yield* Transport.Transport
        const slow: Transport.TransportShape = {
          ...direct,
          request: async (subject, payload, options) => {
            if (subject.endsWith(".renew")) await new Promise((resolve) => setTimeout(resolve, 100))
            return direct.request(subject, payload, options)
          }
        }
        const { leased } = yield* admission(namespace, "a", { retryMs: 1_000 }).pipe(Effect.provideService(Transport.Transport, slow))
        assert.strictEqual(leased.lease().slots, 2)
        const release = yield* Effect.promise(() => leased.acquire(undefined))
        release()
        // idle past retryMs: the renewer gives its slots back; a call comes in while that renewal is on its way
        yield* TestClock.adjust("1 second")
        yield* settle(20)
        const taken = leased.acquire(undefined)
        let held: (() => void) | undefined
        void taken.then((release) => held = release)
        // until the call has a slot and every renewal on its way has come back
        for (let i = 0, after = 0; i < 400 && after < 40; i++) {
          yield* settle()
          assert.isAtLeast(leased.lease().slots, leased.usage().running, "the lease holds a slot for every call running")
          if (held !== undefined) after++
          else if (i % 40 === 39) yield* TestClock.adjust("1 second")
        }
        assert.isDefined(held, "the call got a slot")
        held!()
      })))

    it.effect("a session admitted without deploymentConsent cannot run code", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        yield* startCoordinator(namespace)
        const { leased } = yield* admission(namespace, "s1", { deploymentConsent: false })
        assert.isFalse(leased.deploymentConsent)
        assert.isFalse(leased.capability.toolSpecification.deploymentConsent)
        assert.deepStrictEqual([leased.lease().invocations, leased.lease().tools, leased.lease().slots], [0, 0, 0])
        const error = (() => {
          try {
            leased.checkVersion(code)
          } catch (error) {
            return error
          }
        })()
        assert.instanceOf(error, HarnessError.PolicyViolation)
        assert.strictEqual((error as HarnessError.PolicyViolation).reason, "ConsentRequired")
        assert.isFalse(leased.trySpendInvocation())
      })))

    it.effect("a harness spends a leased admission: code only with consent, and no coordinator request per call", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const { coordinator } = yield* startCoordinator(namespace)
        const policy = { allowedLanguages: ["JavaScript"] as const, maximumInvocations: 3, maximumConcurrentInvocations: 1 }
        const refused = yield* admission(namespace, "s0", { deploymentConsent: false, policy })
        const unconsented = new JitHarness({ admission: refused.leased })
        const error = yield* Effect.promise(() => unconsented.createTool({ entrypoint: "one", source: one }).then(() => undefined, (error: unknown) => error))
        assert.instanceOf(error, HarnessError.PolicyViolation)
        assert.strictEqual((error as HarnessError.PolicyViolation).reason, "ConsentRequired")

        const { leased } = yield* admission(namespace, "s1", { policy })
        const harness = new JitHarness({ admission: leased })
        yield* Effect.promise(() => harness.createTool({ entrypoint: "one", source: one }))
        yield* settle(20) // the version created is reported at once (a renewal)
        const before = coordinator.requests()
        for (let i = 0; i < 3; i++) assert.strictEqual(yield* Effect.promise(() => harness.callTool("one")), 1)
        const spent = yield* Effect.promise(() => harness.callTool("one").then(() => undefined, (error: unknown) => error))
        assert.instanceOf(spent, HarnessError.ToolRejected)
        assert.strictEqual((spent as HarnessError.ToolRejected).reason, "BudgetExhausted")
        yield* settle(20)
        assert.strictEqual(coordinator.requests(), before)
      })))

    it.effect("a session running low asks for more in the background, up to its budget and no further", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const { coordinator } = yield* startCoordinator(namespace, { invocationsPerGrant: 4 })
        const { leased } = yield* admission(namespace, "s1", { policy: { maximumInvocations: 10 } })
        assert.strictEqual(leased.lease().invocations, 4)
        let spent = 0
        for (let round = 0; round < 10 && spent < 10; round++) {
          while (leased.trySpendInvocation()) spent++
          yield* until(() => leased.lease().invocations > spent || leased.lease().invocations === 10, "more invocations")
        }
        assert.strictEqual(spent, 10)
        assert.isFalse(leased.trySpendInvocation())
        yield* settle(20)
        // admit, 4 → 8, 8 → 10, and at most one more ask that finds the budget spent
        assert.isAtMost(coordinator.requests(), 4)
      })))

    it.effect("a message that does not decode gets a typed error reply and changes nothing", () =>
      run(Effect.gen(function*() {
        const namespace = freshNamespace()
        const { coordinator } = yield* startCoordinator(namespace)
        const subject = Subject.coordinator(Subject.prefix(namespace), Ids.defaultPrincipal, Ids.token("admit"))
        for (const payload of ["{ not json", Envelope.encode("admit", { session_id: "a.b", profile: "standard" }), Envelope.encode("renew", {})]) {
          const reply = yield* Transport.request(subject, payload, { timeoutMs: 5_000 })
          const parsed = JSON.parse(Transport.text(reply)) as { kind: string; error: { _tag: string; reason: string } }
          assert.strictEqual(parsed.kind, "error")
          assert.strictEqual(parsed.error._tag, "ProtocolError")
          assert.strictEqual(parsed.error.reason, "Decode")
        }
        assert.strictEqual(coordinator.requests(), 3)
        const client = yield* CoordinatorClient.make({ namespace })
        const admitted = yield* client.admit({ sessionId: Ids.sessionId("a"), profile: "standard", deploymentConsent: true })
        assert.strictEqual(admitted.lease.invocations, 100) // a request leaving it out gets the profile's
      })))
  })
