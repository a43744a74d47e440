/**
 * The sessions this process hosts, as actors (`SessionActor`): the runtime's `Sessions`. A
 * session activates on first use, from the `SnapshotStore` (or the template snapshot): when an
 * embedded caller uses it (`get(sid)`), or when a remote caller, finding nobody serving
 * `session.<sid>.call`, asks `sessions.activate` (this host answers in the `sessions` queue
 * group). It is passivated once it has been idle for `idleTimeout` (no call or request running,
 * no request attached): its snapshot is stored first, and if that fails it stays active. `forget`
 * releases it at once (LIFE-06; the stored snapshot stays).
 *
 * An embedded caller talks to the harness directly: `get(sid)` answers a `LocalSession` whose
 * `callTool` is the harness's own, with no message and no Effect on the way. It is both the
 * core's `Session` (what an agent loop needs) and the runtime's `SessionApi` (what an
 * application needs), and it stays valid across passivations: its next use activates the session
 * again.
 *
 * With `admission`, each session is admitted by the namespace's root coordinator when it
 * activates (`LeasedAdmission`): its harness spends the budgets the coordinator leases, its lease
 * travels with each message its `RemoteCodeRunner` sends (the harness's `CallHost.grant`, read from
 * its `Admission`; workers check it), `leases` shows it while the session is active, and it is released when the session is passivated. Without `admission`, a session whose policy
 * requires a root coordinator (`requireRootCoordinator`, true by default) runs no model-written
 * code: every new version is refused with `PolicyViolation` `RootCoordinatorRequired` (D-19).
 *
 * With a `SessionOwnership` in the context, a session is active in at most one host: the host
 * claims it before loading it (another host's live claim fails the activation with
 * `OwnershipError` `Held`, naming that host), renews the claim every third of its `ttlMs` while the
 * session is active, and releases it after closing the session. A host that loses its claim (it
 * could not renew in time, or another host took the session over) closes the session at once,
 * without storing it again: every change was stored when it was made, and the new owner's state
 * must not be overwritten.
 *
 * Idle time is measured with the context's `Clock`, so a test drives it with `TestClock`.
 *
 * @since 0.1.0
 */
import { EventFeed, type JitHarnessOptions, type JitHarnessSnapshot } from "@jitbox/core"
import type { BaseTools, CallOptions, SessionShape } from "@jitbox/core"
import { Admission, HarnessError, JitPolicy, Sessions as CoreSessions } from "@jitbox/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as os from "node:os"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Envelope from "./Envelope.js"
import type * as CoordinatorProtocol from "./CoordinatorProtocol.js"
import * as LeasedAdmission from "./LeasedAdmission.js"
import * as SessionLeases from "./SessionLeases.js"
import * as SessionOwnership from "./SessionOwnership.js"
import * as Ids from "./Ids.js"
import * as Protocol from "./Protocol.js"
import type { SessionApi } from "./SessionApi.js"
import * as SessionActor from "./SessionActor.js"
import * as SessionProtocol from "./SessionProtocol.js"
import type * as SnapshotStore from "./SnapshotStore.js"
import * as Subject from "./Subject.js"
import * as Transport from "./Transport.js"
import { TransportError } from "./TransportError.js"
import * as WireError from "./WireError.js"
import { promiseRunner } from "./internal/promiseRunner.js"
import * as SessionClaim from "./internal/sessionClaim.js"

/** @since 0.1.0 @category models */
export interface SessionsOptions {
  readonly prefix: Subject.Prefix
  /** Every session's harness options (base tools, policy, …). */
  readonly harness?: Omit<JitHarnessOptions, "sessionId"> | undefined
  /** The toolbox a session starts with when the store has none for it (SNAP-03). */
  readonly template?: JitHarnessSnapshot.JitHarnessSnapshot | undefined
  /** How long a session may be idle before it is passivated (default 5 minutes). */
  readonly idleTimeout?: Duration.DurationInput | undefined
  /** Whether this host answers `sessions.activate` for remote callers (default true). */
  readonly activation?: boolean | undefined
  readonly callConcurrency?: number | undefined
  readonly manageConcurrency?: number | undefined
  readonly backlog?: number | undefined
  readonly graceMs?: number | undefined
  /** This host's name in `SessionOwnership` claims (default: host name, pid and a random part). */
  readonly ownerId?: string | undefined
  /** Admit every session with the namespace's root coordinator under a named execution profile. */
  readonly admission?: SessionAdmission | undefined
}

/**
 * How the sessions of a host are admitted: the profile, the request policy (default: the
 * harness's `policy`), and `deploymentConsent` (JT-CFG-05: without it no model-written code runs).
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionAdmission extends LeasedAdmission.LeaseTimings {
  readonly profile: string
  readonly policy?: JitPolicy.JitPolicyInput | undefined
  readonly deploymentConsent?: boolean | undefined
  readonly task?: unknown
  readonly contractVersion?: string | undefined
  readonly instructions?: string | undefined
}

/** @since 0.1.0 @category constants */
export const defaults = {
  idleTimeout: Duration.minutes(5),
  /** The queue group of `sessions.activate`. */
  activationQueue: "sessions"
} as const

/** @since 0.1.0 @category models */
export interface SessionsShape extends CoreSessions.SessionsShape {
  /** The session `sessionId` in this process; a bad id throws `ConfigError`. Activates on first use. */
  readonly get: (sessionId: string) => LocalSession
  /** Stores and releases the session's toolbox (LIFE-06); rejects with `SnapshotError` (and keeps it) when it cannot be stored. */
  readonly forget: (sessionId: string) => Promise<void>
  /** The session's actor, activated if it is not. */
  readonly activate: (sessionId: Ids.SessionId) => Effect.Effect<SessionActor.SessionActor, SessionActor.ActivationError>
  /** Stores and releases the session if it is active and idle (`force`: even if busy); answers whether it did. */
  readonly passivate: (
    sessionId: Ids.SessionId,
    options?: { readonly force?: boolean }
  ) => Effect.Effect<boolean, JitHarnessSnapshot.SnapshotError>
  /** The sessions active now. */
  readonly active: () => ReadonlyArray<Ids.SessionId>
  /** The coordinator leases the active sessions hold now (with `admission`), for gauges. */
  readonly leases: SessionLeases.SessionLeasesShape
}

/** @since 0.1.0 @category tags */
export class Sessions extends Context.Tag("@jitbox/runtime/Sessions")<Sessions, SessionsShape>() {}

type Slot =
  | { readonly state: "activating"; readonly pending: Promise<SessionActor.SessionActor> }
  | { readonly state: "active"; readonly actor: SessionActor.SessionActor; readonly scope: Scope.CloseableScope }
  | { readonly state: "closing"; readonly closed: Promise<void> }

/** What a `LocalSession` needs of its host. */
interface Host {
  readonly acquire: (sessionId: Ids.SessionId) => Promise<SessionActor.SessionActor>
  readonly activeActor: (sessionId: Ids.SessionId) => SessionActor.SessionActor | undefined
  readonly forget: (sessionId: string) => Promise<void>
}

/**
 * A session hosted in this process: the core's `Session` and the runtime's `SessionApi`, on the
 * harness directly. The application API's methods are the session protocol's (`SessionProtocol.manage`),
 * each running the actor's own handler once the session is active.
 *
 * @since 0.1.0
 * @category models
 */
export interface LocalSession extends SessionProtocol.ManageFacade {}

/**
 * @since 0.1.0
 * @category models
 */
export class LocalSession implements SessionShape, SessionApi {
  /** The session's events, across activations (relayed from each harness while someone listens). */
  private readonly feed: EventFeed.EventFeed
  private connected: SessionActor.SessionActor | undefined

  constructor(readonly sessionId: Ids.SessionId, private readonly host: Host) {
    this.feed = new EventFeed.EventFeed(sessionId)
    const { forget: _forget, ...operations } = Protocol.facade(
      SessionProtocol.manage,
      (kind, payload) => this.with((actor) => Protocol.local(actor.handlers)(kind, payload))
    )
    Object.assign(this, operations)
  }

  /** Resolves once the session is active; rejects with why it cannot be. */
  get ready(): Promise<void> {
    return this.host.acquire(this.sessionId).then(() => undefined)
  }

  private with<A>(f: (actor: SessionActor.SessionActor) => A | Promise<A>): Promise<A> {
    const actor = this.host.activeActor(this.sessionId)
    if (actor !== undefined) {
      try {
        return Promise.resolve(f(actor))
      } catch (error) {
        return Promise.reject(error)
      }
    }
    return this.host.acquire(this.sessionId).then(f)
  }

  /** Relays the actor's events into the session's feed while the feed has listeners. */
  relay(actor: SessionActor.SessionActor): void {
    if (!this.feed.active || this.connected === actor) return
    this.connected = actor
    const feed = this.feed
    const stop = actor.harness.events.listen((event) => {
      if (feed.active) feed.emit(event)
      else {
        stop()
        this.connected = undefined
      }
    })
  }

  private follow(): void {
    const actor = this.host.activeActor(this.sessionId)
    if (actor !== undefined) this.relay(actor)
  }

  readonly events: SessionShape["events"] = {
    subscribe: (options) => {
      const subscription = this.feed.subscribe(options)
      this.follow()
      return subscription
    },
    listen: (listener) => {
      const stop = this.feed.listen(listener)
      this.follow()
      return stop
    },
    stream: (options) => this.feed.stream(options).pipe(Stream.onStart(Effect.sync(() => this.follow())))
  }

  /** Calls the harness directly once the session is active (no message, no Effect). */
  callTool(name: string, args?: unknown, options?: CallOptions): Promise<unknown> {
    const actor = this.host.activeActor(this.sessionId)
    if (actor !== undefined) return actor.harness.callTool(name, args, options)
    return this.host.acquire(this.sessionId).then((active) => active.harness.callTool(name, args, options))
  }

  /** Binds one request's base tools until `detach`; the session is not passivated while one is attached. */
  attach(request: object, tools?: BaseTools): Promise<void> {
    return this.with((actor) => actor.harness.attach(request, tools))
  }

  detach(request: object): void {
    this.host.activeActor(this.sessionId)?.harness.detach(request)
  }

  /** Stores and releases the session where it is active (LIFE-06): the host's `forget`, not the actor's. */
  forget(): Promise<void> {
    return this.host.forget(this.sessionId)
  }
}


/** The decoded policy when it requires a root coordinator and no admission is configured; a bad policy throws `ConfigError`. */
const requiresRootCoordinator = (options: SessionsOptions): JitPolicy.JitPolicy | undefined => {
  const input = options.harness?.policy
  if (options.admission !== undefined || input === undefined) return undefined
  const policy = JitPolicy.make(input)
  return policy.requireRootCoordinator ? policy : undefined
}

/** A coordinator's refusal as the error an activation fails with. */
const notAdmitted = (sessionId: Ids.SessionId) => (error: CoordinatorProtocol.CoordinatorError): SessionActor.ActivationError =>
  error._tag === "AdmissionError" || error._tag === "LedgerError"
    ? new HarnessError.PolicyViolation({ name: sessionId, reason: "NotAdmitted", detail: `the coordinator did not admit session '${sessionId}': ${error.message}` })
    : error

/**
 * A host of sessions, serving until the scope closes; closing it closes every session it holds
 * (without storing them again: every change was stored when it was made).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: SessionsOptions
): Effect.Effect<SessionsShape, TransportError | HarnessError.ConfigError, Scope.Scope | Transport.Transport | SnapshotStore.SnapshotStore> =>
  Effect.gen(function*() {
    // The sessions' scopes are children of this one, closed last: after the host stops taking work.
    const hostScope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
    const transport = yield* Transport.Transport
    const context = yield* Effect.context<Transport.Transport | SnapshotStore.SnapshotStore>()
    const run = promiseRunner(yield* Effect.runtime<never>())
    const idleMs = Duration.toMillis(Duration.decode(options.idleTimeout ?? defaults.idleTimeout))
    const slots = new Map<Ids.SessionId, Slot>()
    let closed = false
    /** The admissions of the active sessions, by session id (each removed when its session's scope closes). */
    const admissions = new Map<Ids.SessionId, LeasedAdmission.LeasedAdmission>()
    const ownership = Option.getOrUndefined(yield* Effect.serviceOption(SessionOwnership.SessionOwnership))
    const ownerId = options.ownerId ?? `${os.hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`
    const rootRequired = yield* Effect.try({ try: () => requiresRootCoordinator(options), catch: (error) => error as HarnessError.ConfigError })
    const locals = new Map<Ids.SessionId, LocalSession>()

    const activeActor = (sessionId: Ids.SessionId): SessionActor.SessionActor | undefined => {
      if (closed) return undefined
      const slot = slots.get(sessionId)
      return slot?.state === "active" ? slot.actor : undefined
    }

    const start = (sessionId: Ids.SessionId) =>
      // The scope is forked and closed on failure atomically; the actor itself is built
      // interruptible, so the runtime its harness captures (timers, fibers) can be interrupted.
      Effect.uninterruptibleMask((restore) => Effect.gen(function*() {
        const scope = yield* Scope.fork(hostScope, ExecutionStrategy.sequential)
        const exit = yield* restore(Effect.zipRight(claim(sessionId), Effect.flatMap(admissionOf(sessionId), (admission) =>
          SessionActor.make({
            prefix: options.prefix,
            sessionId,
            harness: admission === undefined ? options.harness : { ...options.harness, policy: undefined },
            template: options.template,
            callConcurrency: options.callConcurrency,
            manageConcurrency: options.manageConcurrency,
            backlog: options.backlog,
            graceMs: options.graceMs,
            onForget: () => forgetFromWire(sessionId)
          }).pipe(admission === undefined ? (effect) => effect : Effect.provideService(Admission.Admission, admission))
        ))).pipe(Scope.extend(scope), Effect.provide(context), Effect.exit)
        if (Exit.isFailure(exit)) {
          yield* Scope.close(scope, exit)
          return yield* Effect.failCause(exit.cause)
        }
        return { actor: exit.value, scope }
      }))

    /** Claims the session for this host until the session's scope closes (a no-op without `SessionOwnership`). */
    const claim = (sessionId: Ids.SessionId): Effect.Effect<void, SessionOwnership.OwnershipError, Scope.Scope> =>
      ownership === undefined ? Effect.void : SessionClaim.hold(ownership, ownerId, sessionId, (why) =>
        Effect.zipRight(
          Effect.logWarning(`jitbox: session ${sessionId} is closed here: ${why}`),
          Effect.forkIn(release(sessionId, () => true, true), hostScope)
        ))

    /** The session's admission: its coordinator lease, a refusal (D-19), or none (the harness's own policy). */
    const admissionOf = (
      sessionId: Ids.SessionId
    ): Effect.Effect<Admission.AdmissionShape | undefined, SessionActor.ActivationError, Scope.Scope | Transport.Transport> => {
      const admission = options.admission
      if (admission === undefined) {
        if (rootRequired === undefined) return Effect.succeed(undefined)
        return Effect.succeed(Admission.refusing(
          rootRequired,
          "RootCoordinatorRequired",
          `the policy requires a root coordinator (requireRootCoordinator) and no coordinator admitted session '${sessionId}': host it with an admission, or set requireRootCoordinator to false`
        ))
      }
      return Effect.gen(function*() {
        const leased = yield* LeasedAdmission.make({
          prefix: options.prefix,
          sessionId,
          profile: admission.profile,
          policy: admission.policy ?? options.harness?.policy,
          deploymentConsent: admission.deploymentConsent,
          task: admission.task,
          contractVersion: admission.contractVersion,
          instructions: admission.instructions,
          timeoutMs: admission.timeoutMs,
          retryMs: admission.retryMs
        }).pipe(Effect.mapError(notAdmitted(sessionId)))
        yield* Effect.acquireRelease(Effect.sync(() => admissions.set(sessionId, leased)), () =>
          Effect.sync(() => {
            if (admissions.get(sessionId) === leased) admissions.delete(sessionId)
          }))
        return leased
      })
    }

    const acquire = (sessionId: Ids.SessionId): Promise<SessionActor.SessionActor> => {
      if (closed) return Promise.reject(new HarnessError.HarnessReleased({ sessionId, operation: "activating the session" }))
      const slot = slots.get(sessionId)
      if (slot?.state === "active") return Promise.resolve(slot.actor)
      if (slot?.state === "activating") return slot.pending
      if (slot?.state === "closing") return slot.closed.then(() => acquire(sessionId))
      const started = run(start(sessionId))
      const pending = started.then(({ actor }) => actor)
      const activating: Slot = { state: "activating", pending }
      slots.set(sessionId, activating)
      started.then(({ actor, scope }) => {
        if (slots.get(sessionId) === activating) slots.set(sessionId, { state: "active", actor, scope })
        locals.get(sessionId)?.relay(actor)
      }, () => {
        if (slots.get(sessionId) === activating) slots.delete(sessionId)
      })
      return pending
    }

    /** Stores (unless `stored`), then closes, an active session; `stillIdle` is asked again after the save. */
    const release = (sessionId: Ids.SessionId, stillIdle: (actor: SessionActor.SessionActor) => boolean, stored = false) =>
      Effect.gen(function*() {
        const slot = slots.get(sessionId)
        if (slot?.state !== "active" || !stillIdle(slot.actor)) return false
        if (!stored) yield* slot.actor.persist
        if (slots.get(sessionId) !== slot || !stillIdle(slot.actor)) return false
        let closed!: () => void
        const closing: Slot = { state: "closing", closed: new Promise<void>((resolve) => closed = resolve) }
        slots.set(sessionId, closing)
        yield* Scope.close(slot.scope, Exit.void)
        if (slots.get(sessionId) === closing) slots.delete(sessionId)
        closed()
        return true
      }).pipe(Effect.uninterruptible)

    const idle = (actor: SessionActor.SessionActor, now: number) => !actor.pinned() && actor.idleFor(now) >= idleMs

    const passivate = (sessionId: Ids.SessionId, passivateOptions?: { readonly force?: boolean }) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        release(sessionId, (actor) => passivateOptions?.force === true || idle(actor, now)))

    const forget = async (sessionId: string): Promise<void> => {
      const id = Ids.sessionId(sessionId)
      for (;;) {
        const slot = slots.get(id)
        if (slot === undefined) return
        if (slot.state === "activating") await slot.pending.catch(() => undefined)
        else if (slot.state === "closing") await slot.closed
        else {
          await run(release(id, () => true))
          return
        }
      }
    }

    /**
     * A `forget` message: store now and answer, then close in the background. Closing waits for
     * the requests taken to finish, and the `forget` request itself is one of them.
     */
    const forgetFromWire = async (sessionId: Ids.SessionId): Promise<void> => {
      const actor = activeActor(sessionId)
      if (actor === undefined) return
      await run(actor.persist)
      await run(Effect.forkIn(release(sessionId, () => true, true), hostScope))
    }

    // Passivation: a sweep every quarter of the idle timeout (between 100 ms and 30 s).
    const sweepEvery = Math.min(30_000, Math.max(100, idleMs / 4))
    const sweep = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      for (const [sessionId, slot] of [...slots]) {
        if (slot.state !== "active" || !idle(slot.actor, now)) continue
        yield* release(sessionId, (actor) => idle(actor, now)).pipe(
          Effect.catchAll((error) =>
            Effect.logWarning(`session ${sessionId} stays active: its snapshot could not be stored (${error.message})`)
          )
        )
      }
    })
    yield* Effect.forkScoped(Effect.interruptible(Effect.forever(Effect.zipRight(Effect.sleep(sweepEvery), sweep))))

    if (options.activation !== false) {
      yield* transport.serve(
        Subject.sessionsActivate(options.prefix),
        { queue: defaults.activationQueue, concurrency: 16, backlog: options.backlog, graceMs: options.graceMs },
        (request) => {
          const message = Envelope.decode(SessionProtocol.ActivateRequest, request.data, request.subject)
          if (Either.isLeft(message)) return Envelope.error(message.left)
          return acquire(message.right.session_id).then(
            () => Envelope.ok(),
            (thrown) => Envelope.error(WireError.fromThrown("activate", thrown))
          )
        }
      )
    }

    // Runs first when the host closes: nothing activates while its sessions are being closed.
    yield* Effect.addFinalizer(() => Effect.sync(() => closed = true))

    const host: Host = { acquire, activeActor, forget }
    const get = (sessionId: string): LocalSession => {
      const id = Ids.sessionId(sessionId)
      let local = locals.get(id)
      if (local === undefined) {
        local = new LocalSession(id, host)
        locals.set(id, local)
      }
      return local
    }

    return {
      get,
      forget,
      activate: (sessionId) => Effect.tryPromise({ try: () => acquire(sessionId), catch: (error) => error as SessionActor.ActivationError }),
      passivate,
      active: () => closed ? [] : [...slots].flatMap(([sessionId, slot]) => slot.state === "active" ? [sessionId] : []),
      leases: SessionLeases.view(admissions)
    }
  })

/**
 * The runtime's `Sessions`, also as the core's `Sessions` (so an agent's extension can use it).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: SessionsOptions
): Layer.Layer<Sessions | CoreSessions.Sessions, TransportError | HarnessError.ConfigError, Transport.Transport | SnapshotStore.SnapshotStore> =>
  Layer.scopedContext(Effect.map(make(options), (host) => Context.make(Sessions, host).pipe(Context.add(CoreSessions.Sessions, host))))
