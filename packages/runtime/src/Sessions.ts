/**
 * The sessions this process hosts, as actors (`SessionActor`): the runtime's `Sessions`. A
 * session activates on first use, from the `SnapshotStore` (or the template snapshot): when an
 * embedded caller uses it (`get(sid)`), or when a remote caller, finding nobody serving
 * `session.<sid>.call`, asks `sessions.activate` (this host answers in the `sessions` queue
 * group). It is passivated once it has been idle for `idleTimeout` (no call or request running,
 * no request attached): its snapshot is stored first, and if that fails it stays active. A session
 * activated but not used since (no call, no request: a `sessions.activate` for a made-up id) is
 * passivated once it has been so for `admissionWindow` (default 30 s) instead. `forget`
 * releases it at once (LIFE-06; the stored snapshot stays).
 *
 * A host holds at most `maxActiveSessions` sessions (default 1 000). An activation that finds them
 * all taken first passivates the least recently used idle session (the same path as idle
 * passivation: stored, then closed, its claim released); when every session is busy (running a
 * call or request, or with a request attached) it is refused with `TransportError` `Busy` and
 * nothing changes: no session is closed, no claim or lease taken.
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
 * `make` composes parts in `internal/`: the registry of session slots (`sessionSlots`), starting
 * one session in a scope of its own (`sessionStart`), the ownership claim (`sessionClaim`), the
 * admission choice (`sessionAdmission`), the passivation sweep (`passivation`) and the
 * `sessions.activate` responder (`activationResponder`).
 *
 * @since 0.1.0
 */
import { EventFeed, type JitHarnessOptions, type JitHarnessSnapshot } from "@jitbox/core"
import type { BaseTools, CallOptions, SessionShape } from "@jitbox/core"
import { Admission, HarnessError, type JitPolicy, Sessions as CoreSessions } from "@jitbox/core"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as os from "node:os"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as LeasedAdmission from "./LeasedAdmission.js"
import * as SessionLeases from "./SessionLeases.js"
import * as SessionOwnership from "./SessionOwnership.js"
import * as Ids from "./Ids.js"
import * as Protocol from "./Protocol.js"
import type { SessionApi } from "./SessionApi.js"
import * as SessionActor from "./SessionActor.js"
import * as SessionProtocol from "./SessionProtocol.js"
import * as SnapshotStore from "./SnapshotStore.js"
import * as Subject from "./Subject.js"
import * as Transport from "./Transport.js"
import { TransportError } from "./TransportError.js"
import * as ActivationResponder from "./internal/activationResponder.js"
import * as Passivation from "./internal/passivation.js"
import { promiseRunner } from "./internal/promiseRunner.js"
import * as Admitting from "./internal/sessionAdmission.js"
import * as SessionClaim from "./internal/sessionClaim.js"
import * as SessionSlots from "./internal/sessionSlots.js"
import * as SessionStart from "./internal/sessionStart.js"

/** @since 0.1.0 @category models */
export interface SessionsOptions {
  readonly prefix: Subject.Prefix
  /** Every session's harness options (base tools, policy, …). */
  readonly harness?: Omit<JitHarnessOptions, "sessionId"> | undefined
  /** The toolbox a session starts with when the store has none for it (SNAP-03). */
  readonly template?: JitHarnessSnapshot.JitHarnessSnapshot | undefined
  /** How long a session may be idle before it is passivated (default 5 minutes). */
  readonly idleTimeout?: Duration.DurationInput | undefined
  /**
   * Sessions active in this host at most (default 1 000; activating and closing ones count). An
   * activation beyond it first passivates the least recently used idle session; when every one
   * is busy or pinned it is refused with `TransportError` `Busy`.
   */
  readonly maxActiveSessions?: number | undefined
  /** How long a session activated but not used since (no call, no request) stays active (default 30 s; at most `idleTimeout`). */
  readonly admissionWindow?: Duration.DurationInput | undefined
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
  /**
   * Who the host asks the coordinator as: the NATS user it connects as (default `default`). The
   * sessions it admits are this principal's: no other principal renews, releases or re-admits them.
   */
  readonly principal?: string | undefined
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
  maxActiveSessions: 1_000,
  admissionWindow: Duration.seconds(30),
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

/** The options of the actor of `sessionId` (with an admission, its policy is the admission's). */
const actorOptions = (
  options: SessionsOptions,
  sessionId: Ids.SessionId,
  admitted: boolean,
  onForget: () => Promise<void>
): SessionActor.SessionActorOptions => ({
  prefix: options.prefix,
  sessionId,
  harness: admitted ? { ...options.harness, policy: undefined } : options.harness,
  template: options.template,
  callConcurrency: options.callConcurrency,
  manageConcurrency: options.manageConcurrency,
  backlog: options.backlog,
  graceMs: options.graceMs,
  onForget
})

/** The `LocalSession` of a session id, made on first use and kept in `locals`; a bad id throws `ConfigError`. */
const localSession = (locals: Map<Ids.SessionId, LocalSession>, host: Host) => (sessionId: string): LocalSession => {
  const id = Ids.sessionId(sessionId)
  let local = locals.get(id)
  if (local === undefined) {
    local = new LocalSession(id, host)
    locals.set(id, local)
  }
  return local
}

/** This host's default name in `SessionOwnership` claims. */
const defaultOwnerId = (): string => `${os.hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`

/** The host's idle timeouts and its most active sessions; a bad `maxActiveSessions` is a `ConfigError`. */
const bounds = (options: SessionsOptions): Effect.Effect<{ readonly maxActive: number; readonly timeouts: Passivation.Timeouts }, HarnessError.ConfigError> => {
  const maxActive = options.maxActiveSessions ?? defaults.maxActiveSessions
  if (!Number.isSafeInteger(maxActive) || maxActive < 1) {
    return Effect.fail(new HarnessError.ConfigError({ option: "maxActiveSessions", detail: `expected an integer ≥ 1, got ${maxActive}` }))
  }
  return Effect.succeed({
    maxActive,
    timeouts: {
      idleMs: Duration.toMillis(Duration.decode(options.idleTimeout ?? defaults.idleTimeout)),
      admissionMs: Duration.toMillis(Duration.decode(options.admissionWindow ?? defaults.admissionWindow))
    }
  })
}

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
    const { maxActive, timeouts } = yield* bounds(options)
    const clock = yield* Effect.clock
    /** The admissions of the active sessions, by session id (each removed when its session's scope closes). */
    const admissions = new Map<Ids.SessionId, LeasedAdmission.LeasedAdmission>()
    const ownership = Option.getOrUndefined(yield* Effect.serviceOption(SessionOwnership.SessionOwnership))
    const ownerId = options.ownerId ?? defaultOwnerId()
    const rootRequired = yield* Effect.try({
      try: () => Admitting.requiresRootCoordinator(options),
      catch: (error) => error as HarnessError.ConfigError
    })
    const locals = new Map<Ids.SessionId, LocalSession>()

    /** Claims the session for this host until the session's scope closes (a no-op without `SessionOwnership`). */
    const claim = (sessionId: Ids.SessionId): Effect.Effect<void, SessionOwnership.OwnershipError, Scope.Scope> =>
      ownership === undefined ? Effect.void : SessionClaim.hold(ownership, ownerId, sessionId, (why) =>
        Effect.zipRight(
          Effect.logWarning(`jitbox: session ${sessionId} is closed here: ${why}`),
          slots.releaseStored(sessionId)
        ))
    const admissionOf = Admitting.admissionOf(options, rootRequired, admissions)
    const start = SessionStart.starter(hostScope, context, (sessionId) =>
      Effect.zipRight(claim(sessionId), Effect.flatMap(admissionOf(sessionId), (admission) =>
        SessionActor.make(actorOptions(options, sessionId, admission !== undefined, () => forgetFromWire(sessionId))).pipe(
          admission === undefined ? (effect) => effect : Effect.provideService(Admission.Admission, admission)
        ))))
    const slots = SessionSlots.make({
      start: (sessionId) => run(start(sessionId)),
      run,
      hostScope,
      onActive: (sessionId, actor) => locals.get(sessionId)?.relay(actor),
      maxActive,
      now: () => clock.unsafeCurrentTimeMillis(),
      full: () =>
        new TransportError({ reason: "Busy", subject: Subject.sessionsActivate(options.prefix), detail: `${maxActive} sessions are active on this host (maxActiveSessions) and none is idle` })
    })

    /**
     * A `forget` message: store now and answer, then close in the background. Closing waits for
     * the requests taken to finish, and the `forget` request itself is one of them.
     */
    const forgetFromWire = async (sessionId: Ids.SessionId): Promise<void> => {
      const actor = slots.activeActor(sessionId)
      if (actor === undefined) return
      await run(actor.persist)
      await run(slots.releaseStored(sessionId))
    }

    yield* Passivation.sweep(slots, timeouts)
    if (options.activation !== false) {
      yield* ActivationResponder.serve(
        transport,
        { prefix: options.prefix, queue: defaults.activationQueue, backlog: options.backlog, graceMs: options.graceMs },
        { acquire: slots.acquire, known: knownTo(slots, context, run) }
      )
    }
    // Runs first when the host closes: nothing activates while its sessions are being closed.
    yield* Effect.addFinalizer(() => Effect.sync(slots.close))

    return {
      get: localSession(locals, { acquire: slots.acquire, activeActor: slots.activeActor, forget: slots.forget }),
      forget: slots.forget,
      activate: (sessionId) => Effect.tryPromise({ try: () => slots.acquire(sessionId), catch: (error) => error as SessionActor.ActivationError }),
      passivate: Passivation.passivate(slots, timeouts),
      active: slots.active,
      leases: SessionLeases.view(admissions)
    }
  })

/** Whether the host has the session to activate: active here, or stored in its `SnapshotStore`. */
const knownTo = (
  slots: SessionSlots.SessionSlots,
  context: Context.Context<SnapshotStore.SnapshotStore>,
  run: <A, E>(effect: Effect.Effect<A, E>) => Promise<A>
) =>
(sessionId: Ids.SessionId): Promise<boolean> =>
  slots.activeActor(sessionId) !== undefined
    ? Promise.resolve(true)
    : run(Effect.flatMap(SnapshotStore.SnapshotStore, (store) => store.load(sessionId)).pipe(Effect.map(Option.isSome), Effect.provide(context)))

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
