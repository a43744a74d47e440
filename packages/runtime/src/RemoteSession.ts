/**
 * A session hosted in another process, from the application's side: the `SessionApi` as
 * messages over the `Transport` (a Promise facade, the class), and the same as Effects (the
 * module's functions) with the typed error channel `WireError`.
 *
 * A caller gets the errors an in-process caller gets: `ToolNotFound`, `ValidationError`,
 * `NameConflict`, … decode as the same classes; what a tool's own code threw arrives as
 * `ToolFailure`, whose `name` is the thrown value's type and whose `message` is its message. The
 * runtime adds `TransportError`: arguments or a result over 256 KiB of JSON (JT-LIM-02) are
 * `PayloadTooLarge` before they reach the wire; `Timeout` means the outcome is unknown (the
 * session may still have run the call, or may run it later), `Busy` that the session refused it
 * unrun.
 *
 * Its events: `events` (Effect, a `Stream`) and `listen` (Promise) follow `events.<sid>`, where
 * the host's `StreamPublisher` puts every `jit_tool_*` event of the session and a
 * `jit_events_dropped` notice when some were lost, in batches (`StreamProtocol`); each event is
 * decoded with the event schema and one that does not decode is skipped.
 *
 * When nobody serves the session, the client asks the hosts (`sessions.activate`) to activate
 * it and sends the message again, once. While the claim of a host that died still holds the
 * session (`OwnershipError` `Held`, until the claim lapses: 4 s by default), it asks again every
 * 250 ms within the call's deadline; the call itself is sent once it is active, never twice. A
 * call whose host dies while it runs fails `RemoteExecutionError` `HostLost` within seconds (once
 * another host serves the session and does not run it) instead of waiting out its deadline; it
 * may have run in part, and it is never sent again. Aborting a call's signal (interrupting its Effect) sends
 * a `cancel` for it: the session aborts the call, whose record says `cancelled`.
 *
 * With `traceHeaders` (`Propagation.current` of @jitbox/otel: the caller's active OpenTelemetry
 * span), each call carries the caller's trace context, and the session host's span of the call is
 * its child: an orchestrator's own span is the parent of the whole composed call.
 *
 * @since 0.1.0
 */
import { HarnessError, JitToolEvent } from "@jitbox/core"
import * as Either from "effect/Either"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Envelope from "./Envelope.js"
import * as Ids from "./Ids.js"
import { CallWatch, type Probe } from "./internal/callWatch.js"
import { runPromise } from "./internal/promiseRunner.js"
import * as Protocol from "./Protocol.js"
import { RemoteExecutionError } from "./RemoteExecutionError.js"
import type { CallOptions, SessionApi } from "./SessionApi.js"
import * as SessionProtocol from "./SessionProtocol.js"
import * as StreamProtocol from "./StreamProtocol.js"
import * as Subject from "./Subject.js"
import * as Transport from "./Transport.js"
import { isTransportError, TransportError } from "./TransportError.js"
import * as WireError from "./WireError.js"

/** @since 0.1.0 @category models */
export interface RemoteSessionOptions {
  readonly prefix: Subject.Prefix
  /** How long a request waits for its reply, in milliseconds (default 30 000); a call can set its own. */
  readonly timeoutMs?: number | undefined
  /** Read at each `callTool`: headers carrying the caller's trace context (they parent spans and decide nothing). */
  readonly traceHeaders?: (() => Transport.Headers | undefined) | undefined
  /** The clock a request's deadline is measured by (default: the system clock; `make` passes the context's `Clock`). */
  readonly clock?: Clock.Clock | undefined
  /**
   * Whether a session nobody has stored may be started (default true). With `false` the hosts
   * activate only a stored session, and a request to any other fails `SnapshotError` `NotFound`.
   */
  readonly create?: boolean | undefined
}

/** When a call waited on is asked after (`CallWatch`), and how often. */
const watchTimings = { afterMs: 2_000, everyMs: 1_000 } as const

/** How often a client asks again to activate a session another host's claim still holds. */
const heldRetryMs = 250

/** @since 0.1.0 @category constants */
export const defaults = { timeoutMs: 30_000 } as const

const systemClock = Clock.make()

/**
 * The Promise facade: every method rejects with a `WireError`. Its application API is the session
 * protocol's (`SessionProtocol.manage`), sent as messages by the table's client.
 *
 * @since 0.1.0
 * @category models
 */
export interface RemoteSession extends SessionProtocol.ManageFacade {}

/**
 * @since 0.1.0
 * @category models
 */
export class RemoteSession implements SessionApi {
  readonly sessionId: Ids.SessionId
  private readonly call: Subject.Subject
  private readonly manage: Subject.Subject
  private readonly activation: Subject.Subject
  private readonly timeoutMs: number
  private readonly clock: Clock.Clock
  private readonly activateMessage: string
  private readonly traceHeaders: (() => Transport.Headers | undefined) | undefined
  private readonly watch: CallWatch

  /** The session's events subject (`events.<sid>`). */
  readonly eventsPattern: Subject.Pattern

  constructor(readonly transport: Transport.TransportShape, sessionId: string, options: RemoteSessionOptions) {
    this.sessionId = Ids.sessionId(sessionId)
    this.eventsPattern = Subject.sessionEvents(options.prefix, this.sessionId)
    this.call = Subject.sessionCall(options.prefix, this.sessionId)
    this.manage = Subject.sessionManage(options.prefix, this.sessionId)
    this.activation = Subject.sessionsActivate(options.prefix)
    this.timeoutMs = options.timeoutMs ?? defaults.timeoutMs
    this.clock = options.clock ?? systemClock
    this.activateMessage = Envelope.encode("activate", { session_id: this.sessionId, ...(options.create === false ? { create: false } : {}) })
    this.traceHeaders = options.traceHeaders
    this.watch = new CallWatch({
      probe: (callIds) => this.running(callIds),
      activate: () => {
        this.transport.request(this.activation, this.activateMessage, { timeoutMs: this.timeoutMs }).catch(() => undefined)
      },
      now: () => this.clock.unsafeCurrentTimeMillis(),
      afterMs: watchTimings.afterMs,
      everyMs: watchTimings.everyMs
    })
    const invoke = Protocol.client(SessionProtocol.manage, () => this.manage, (_kind, payload) => this.send(this.manage, payload, this.timeoutMs, undefined))
    const { forget: _forget, ...operations } = Protocol.facade(SessionProtocol.manage, invoke)
    Object.assign(this, operations)
  }

  /** The value a call's reply carries; its error, or `PayloadTooLarge` past JT-LIM-02, thrown. */
  private resultOf(name: string, reply: Transport.Message): unknown {
    const answer = Protocol.valueOf(reply, this.call)
    if (Either.isLeft(answer)) throw answer.left
    const value = answer.right
    if (Envelope.valueTooLarge(value, reply.data.length)) {
      throw new TransportError({
        reason: "PayloadTooLarge",
        subject: this.call,
        detail: `the result of '${name}': over the ${Envelope.limits.valueBytes} bytes of JSON allowed (JT-LIM-02)`
      })
    }
    return value
  }

  /** Which of `callIds` the host serving the session runs (`CallWatch`). */
  private running(callIds: ReadonlyArray<string>): Promise<Probe> {
    return this.transport.request(this.call, Envelope.encode("running", { call_ids: callIds }), { timeoutMs: watchTimings.everyMs * 2 }).then(
      (reply) => {
        const answer = Protocol.valueOf(reply, this.call)
        return Either.isRight(answer) ? (answer.right as { readonly running: ReadonlyArray<string> }).running : undefined
      },
      (error: unknown) => isTransportError(error) && error.reason === "NoResponders" ? "unserved" : undefined
    )
  }

  /**
   * Sends one request; when nobody serves the session, asks the hosts to activate it and sends
   * it once more. Never waits longer than `timeoutMs` in all.
   */
  private async send(
    subject: Subject.Subject,
    payload: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    headers?: Transport.Headers
  ): Promise<Transport.Message> {
    const deadline = this.clock.unsafeCurrentTimeMillis() + timeoutMs
    const request = (to: Subject.Subject, body: string) =>
      this.transport.request(to, body, { timeoutMs: Math.max(1, deadline - this.clock.unsafeCurrentTimeMillis()), signal, headers: to === subject ? headers : undefined })
    try {
      return await request(subject, payload)
    } catch (error) {
      if (!(isTransportError(error) && error.reason === "NoResponders")) throw error
    }
    await this.activate(subject, deadline, request)
    return request(subject, payload)
  }

  /**
   * Asks the hosts to activate the session. While another host's claim holds it (`OwnershipError`
   * `Held`: that host died and its claim has not lapsed yet), it asks again every `heldRetryMs`
   * until `deadline`: activating is safe to repeat, and nothing of the call has been sent.
   */
  private async activate(
    subject: Subject.Subject,
    deadline: number,
    request: (to: Subject.Subject, body: string) => Promise<Transport.Message>
  ): Promise<void> {
    for (;;) {
      let activated: Transport.Message
      try {
        activated = await request(this.activation, this.activateMessage)
      } catch (activationError) {
        if (isTransportError(activationError) && activationError.reason === "NoResponders") {
          throw new TransportError({
            reason: "NoResponders",
            subject,
            detail: `nobody serves session ${this.sessionId} and no session host answers ${this.activation}: start one with \`jitbox sessions\``
          })
        }
        throw activationError
      }
      const answer = Protocol.valueOf(activated, this.activation)
      if (Either.isRight(answer)) return
      const error = answer.left
      const left = deadline - this.clock.unsafeCurrentTimeMillis()
      if (!(error._tag === "OwnershipError" && error.reason === "Held") || left <= heldRetryMs) throw error
      await new Promise((resolve) => setTimeout(resolve, heldRetryMs))
    }
  }

  /**
   * Calls a tool; rejects with the typed error of the session, `TransportError`, or
   * `RemoteExecutionError` `HostLost` when the host running it died (`CallWatch`).
   */
  callTool(name: string, args?: unknown, options?: CallOptions): Promise<unknown> {
    const json = Envelope.encodeValue(args ?? {}, `the arguments of '${name}'`, this.call)
    if (Either.isLeft(json)) return Promise.reject(json.left)
    const signal = options?.signal
    const callId = options?.callId ?? Ids.newCallId()
    if (signal?.aborted === true) return Promise.reject(new HarnessError.ToolCancelled({ name, callId }))
    const payload = Envelope.withValue("call", { name, call_id: callId }, "args", json.right)
    const lost = new AbortController()
    const unwatch = this.watch.watch(callId, () => lost.abort())
    const signals = signal === undefined ? lost.signal : AbortSignal.any([signal, lost.signal])
    const pending = this.send(this.call, payload, options?.timeoutMs ?? this.timeoutMs, signals, this.traceHeaders?.()).then((reply) => {
      unwatch()
      return this.resultOf(name, reply)
    }, (error: unknown) => {
      unwatch()
      if (!lost.signal.aborted || signal?.aborted === true) throw error
      throw new RemoteExecutionError({
        reason: "HostLost",
        subject: this.call,
        toolName: name,
        callId,
        detail: `the host running it died, and the host serving session ${this.sessionId} now does not run it: it may have run in part, and it is not sent again`
      })
    })
    if (signal === undefined) return pending
    const cancel = () => {
      try {
        this.transport.publish(this.call, Envelope.encode("cancel", { call_id: callId }))
      } catch {
        // The transport is closed: the call ends with the session, and the caller already has its rejection.
      }
    }
    signal.addEventListener("abort", cancel, { once: true })
    return pending.then((value) => {
      signal.removeEventListener("abort", cancel)
      return value
    }, (error: unknown) => {
      signal.removeEventListener("abort", cancel)
      // As in process: a call its caller gave up on is ToolCancelled.
      throw signal.aborted && isTransportError(error) && error.reason === "Cancelled" ? new HarnessError.ToolCancelled({ name, callId }) : error
    })
  }

  /**
   * Calls `listener` with each event of the session until the returned function is called (it
   * resolves once the subscription is gone). Resolves once the subscription is in place.
   */
  async listen(listener: (event: JitToolEvent.JitToolEvent) => void): Promise<() => Promise<void>> {
    const scope = Effect.runSync(Scope.make())
    const stream = await runPromise(Scope.extend(events(this), scope)).catch((error: unknown) =>
      runPromise(Scope.close(scope, Exit.void)).then(() => Promise.reject(error))
    )
    Effect.runFork(Stream.runForEach(stream, (event) => Effect.sync(() => listener(event))).pipe(Effect.ignore, Effect.forkIn(scope)))
    return () => runPromise(Scope.close(scope, Exit.void))
  }

  /** Releases the session's toolbox where it is hosted; nothing when it is not active anywhere. */
  forget(): Promise<void> {
    return this.transport.request(this.manage, Envelope.encode("forget"), { timeoutMs: this.timeoutMs }).then(
      (reply) => {
        const answer = Protocol.valueOf(reply, this.manage)
        if (Either.isLeft(answer)) throw answer.left
      },
      (error: unknown) => {
        if (isTransportError(error) && error.reason === "NoResponders") return
        throw error
      }
    )
  }
}

/**
 * A client of the session `sessionId` on the transport and the clock in the context; a bad id fails with `ConfigError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (sessionId: string, options: RemoteSessionOptions): Effect.Effect<RemoteSession, HarnessError.ConfigError, Transport.Transport> =>
  Effect.flatMap(Effect.all([Transport.Transport, Effect.clock]), ([transport, clock]) =>
    Effect.try({ try: () => new RemoteSession(transport, sessionId, { clock, ...options }), catch: (error) => error as HarnessError.ConfigError }))

const lift = <A>(f: (signal: AbortSignal) => Promise<A>): Effect.Effect<A, WireError.WireError> =>
  Effect.tryPromise({ try: f, catch: (error) => error }).pipe(
    Effect.catchAll((error) => WireError.isWireError(error) ? Effect.fail(error) : Effect.die(error))
  )

/**
 * Calls a tool; interrupting the Effect cancels the call in the session.
 *
 * @since 0.1.0
 * @category dispatch
 */
export const callTool = (
  session: RemoteSession,
  name: string,
  args?: unknown,
  options?: Omit<CallOptions, "signal">
): Effect.Effect<unknown, WireError.WireError> => lift((signal) => session.callTool(name, args, { ...options, signal }))

/**
 * The application API as Effects (`createTool(session, request)`, `unloadTool(session, name)`,
 * `listTools`, `profile`, `toolErrors`, `snapshot`, `definitions`, `forget`), derived from the
 * session protocol's table; each fails with the `WireError` the session answered.
 *
 * @since 0.1.0
 * @category changes
 */
/** @since 0.1.0 @category models */
export type ManageEffects = Protocol.Effects<SessionProtocol.Manage, RemoteSession, WireError.WireError>

const manageEffects: ManageEffects = Protocol.effects(SessionProtocol.manage, (session: RemoteSession) => session, (f) => lift(() => f()))

/** @since 0.1.0 @category application API */
export const createTool: ManageEffects["createTool"] = manageEffects.createTool

/** @since 0.1.0 @category application API */
export const updateTool: ManageEffects["updateTool"] = manageEffects.updateTool

/** @since 0.1.0 @category application API */
export const unloadTool: ManageEffects["unloadTool"] = manageEffects.unloadTool

/** @since 0.1.0 @category application API */
export const loadTool: ManageEffects["loadTool"] = manageEffects.loadTool

/** @since 0.1.0 @category application API */
export const listTools: ManageEffects["listTools"] = manageEffects.listTools

/** @since 0.1.0 @category application API */
export const profile: ManageEffects["profile"] = manageEffects.profile

/** @since 0.1.0 @category application API */
export const toolErrors: ManageEffects["toolErrors"] = manageEffects.toolErrors

/** @since 0.1.0 @category application API */
export const snapshot: ManageEffects["snapshot"] = manageEffects.snapshot

/** @since 0.1.0 @category application API */
export const definitions: ManageEffects["definitions"] = manageEffects.definitions

/** @since 0.1.0 @category application API */
export const forget: ManageEffects["forget"] = manageEffects.forget

/**
 * The session's events as they are published, from the moment the subscription is in place (the
 * transport's bounded subscription: a subscriber that falls behind loses the oldest batches); an
 * event that does not decode is skipped.
 *
 * @since 0.1.0
 * @category streams
 */
export const events = (
  session: RemoteSession
): Effect.Effect<Stream.Stream<JitToolEvent.JitToolEvent, TransportError>, TransportError, Scope.Scope> =>
  Effect.map(
    session.transport.subscribe(session.eventsPattern),
    (stream) =>
      Stream.flatMap(stream, (message) => Stream.fromIterable(StreamProtocol.decodeEvents(message.data, message.subject)))
  )
