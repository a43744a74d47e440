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
 * Its events: `events` (Effect, a `Stream`) and `listen` (Promise) follow `events.<sid>.>`, where
 * the host's `StreamPublisher` puts every `jit_tool_*` event of the session and a
 * `jit_events_dropped` notice when some were lost; each message is decoded with the event schema
 * and one that does not decode is skipped.
 *
 * When nobody serves the session, the client asks the hosts (`sessions.activate`) to activate
 * it and sends the message again, once. Aborting a call's signal (interrupting its Effect) sends
 * a `cancel` for it: the session aborts the call, whose record says `cancelled`.
 *
 * With `traceHeaders` (`Propagation.current` of @jitbox/otel: the caller's active OpenTelemetry
 * span), each call carries the caller's trace context, and the session host's span of the call is
 * its child: an orchestrator's own span is the parent of the whole composed call.
 *
 * @since 0.1.0
 */
import { HarnessError, JitHarnessSnapshot, JitToolEvent } from "@jitbox/core"
import type { CreateToolRequest, Exposure, JitHarnessProfile, SessionDefinitions, ToolAck, ToolErrorReport, UpdateToolRequest } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Envelope from "./Envelope.js"
import * as Ids from "./Ids.js"
import type { CallOptions, CatalogEntry, PageOptions, SessionApi } from "./SessionApi.js"
import * as SessionProtocol from "./SessionProtocol.js"
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
}

/** @since 0.1.0 @category constants */
export const defaults = { timeoutMs: 30_000 } as const

const replyOf = (message: Transport.Message, subject: string): { readonly value: unknown } | WireError.WireError => {
  const parsed = Envelope.parse(message.data, subject)
  if (parsed instanceof TransportError) return parsed
  if (parsed.kind === "error") return WireError.decode(parsed.error, subject)
  const ok = Envelope.decodeParsed(SessionProtocol.OkReply, parsed, subject)
  return ok instanceof TransportError ? ok : { value: ok.value }
}

/**
 * The Promise facade: every method rejects with a `WireError`.
 *
 * @since 0.1.0
 * @category models
 */
export class RemoteSession implements SessionApi {
  readonly sessionId: Ids.SessionId
  private readonly call: Subject.Subject
  private readonly manage: Subject.Subject
  private readonly activation: Subject.Subject
  private readonly timeoutMs: number
  private readonly activateMessage: string
  private readonly traceHeaders: (() => Transport.Headers | undefined) | undefined

  /** The session's events subject pattern (`events.<sid>.>`). */
  readonly eventsPattern: Subject.Pattern

  constructor(readonly transport: Transport.TransportShape, sessionId: string, options: RemoteSessionOptions) {
    this.sessionId = Ids.sessionId(sessionId)
    this.eventsPattern = Subject.sessionEvents(options.prefix, this.sessionId)
    this.call = Subject.sessionCall(options.prefix, this.sessionId)
    this.manage = Subject.sessionManage(options.prefix, this.sessionId)
    this.activation = Subject.sessionsActivate(options.prefix)
    this.timeoutMs = options.timeoutMs ?? defaults.timeoutMs
    this.activateMessage = Envelope.encode("activate", { session_id: this.sessionId })
    this.traceHeaders = options.traceHeaders
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
  ): Promise<{ readonly value: unknown; readonly bytes: number }> {
    const deadline = Date.now() + timeoutMs
    const request = (to: Subject.Subject, body: string) =>
      this.transport.request(to, body, { timeoutMs: Math.max(1, deadline - Date.now()), signal, headers: to === subject ? headers : undefined })
    let reply: Transport.Message
    try {
      reply = await request(subject, payload)
    } catch (error) {
      if (!(isTransportError(error) && error.reason === "NoResponders")) throw error
      let activated: Transport.Message
      try {
        activated = await request(this.activation, this.activateMessage)
      } catch (activationError) {
        if (isTransportError(activationError) && activationError.reason === "NoResponders") {
          throw new TransportError({
            reason: "NoResponders",
            subject,
            detail: `nobody serves session ${this.sessionId} and no session host answers ${this.activation}`
          })
        }
        throw activationError
      }
      const answer = replyOf(activated, this.activation)
      if (!("value" in answer)) throw answer
      reply = await request(subject, payload)
    }
    const answer = replyOf(reply, subject)
    if (!("value" in answer)) throw answer
    return { value: answer.value, bytes: reply.data.length }
  }

  private manageRequest<A, I>(kind: SessionProtocol.ManageKind, fields: Record<string, unknown>, result: Schema.Schema<A, I>): Promise<A> {
    return this.send(this.manage, Envelope.encode(kind, fields), this.timeoutMs, undefined).then(({ value }) => {
      const decoded = Envelope.decodeParsed(result, value, this.manage)
      if (decoded instanceof TransportError) throw decoded
      return decoded
    })
  }

  /** Calls a tool; rejects with the typed error of the session, or `TransportError`. */
  callTool(name: string, args?: unknown, options?: CallOptions): Promise<unknown> {
    const json = Envelope.encodeValue(args ?? {}, `the arguments of '${name}'`, this.call)
    if (json instanceof TransportError) return Promise.reject(json)
    const signal = options?.signal
    const callId = options?.callId ?? (signal === undefined ? undefined : Ids.newCallId())
    if (signal?.aborted === true) return Promise.reject(new HarnessError.ToolCancelled({ name, callId: callId ?? "" }))
    const payload = Envelope.withValue("call", callId === undefined ? { name } : { name, call_id: callId }, "args", json)
    const pending = this.send(this.call, payload, options?.timeoutMs ?? this.timeoutMs, signal, this.traceHeaders?.()).then(({ bytes, value }) => {
      if (Envelope.valueTooLarge(value, bytes)) {
        throw new TransportError({
          reason: "PayloadTooLarge",
          subject: this.call,
          detail: `the result of '${name}': over the ${Envelope.limits.valueBytes} bytes of JSON allowed (JT-LIM-02)`
        })
      }
      return value
    })
    if (signal === undefined || callId === undefined) return pending
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

  createTool(request: CreateToolRequest): Promise<ToolAck> {
    return this.manageRequest("create_tool", { request }, SessionProtocol.ToolAck)
  }

  updateTool(request: UpdateToolRequest): Promise<ToolAck> {
    return this.manageRequest("update_tool", { request }, SessionProtocol.ToolAck)
  }

  unloadTool(name: string): Promise<ToolAck> {
    return this.manageRequest("unload_tool", { name }, SessionProtocol.ToolAck)
  }

  loadTool(name: string): Promise<ToolAck> {
    return this.manageRequest("load_tool", { name }, SessionProtocol.ToolAck)
  }

  listTools(): Promise<ReadonlyArray<CatalogEntry>> {
    return this.manageRequest("list_tools", {}, SessionProtocol.manageResult.list_tools)
  }

  profile(name?: string, page?: PageOptions): Promise<JitHarnessProfile.JitHarnessProfile> {
    return this.manageRequest("profile", { name, offset: page?.offset, limit: page?.limit }, SessionProtocol.manageResult.profile)
  }

  toolErrors(name?: string, page?: PageOptions): Promise<ToolErrorReport.ToolErrorReport> {
    return this.manageRequest("tool_errors", { name, offset: page?.offset, limit: page?.limit }, SessionProtocol.manageResult.tool_errors)
  }

  snapshot(): Promise<JitHarnessSnapshot.JitHarnessSnapshot> {
    return this.manageRequest("snapshot", {}, JitHarnessSnapshot.JitHarnessSnapshot)
  }

  /** What to offer a model speaking `protocol`: the session's instruction block and the tools it can call now. */
  definitions(protocol: Exposure.ModelProtocol): Promise<SessionDefinitions> {
    return this.manageRequest("definitions", { protocol }, SessionProtocol.manageResult.definitions)
  }

  /**
   * Calls `listener` with each event of the session until the returned function is called (it
   * resolves once the subscription is gone). Resolves once the subscription is in place.
   */
  async listen(listener: (event: JitToolEvent.JitToolEvent) => void): Promise<() => Promise<void>> {
    const scope = Effect.runSync(Scope.make())
    const stream = await Effect.runPromise(Scope.extend(events(this), scope))
    Effect.runFork(Stream.runForEach(stream, (event) => Effect.sync(() => listener(event))).pipe(Effect.ignore, Effect.forkIn(scope)))
    return () => Effect.runPromise(Scope.close(scope, Exit.void))
  }

  /** Releases the session's toolbox where it is hosted; nothing when it is not active anywhere. */
  forget(): Promise<void> {
    return this.transport.request(this.manage, Envelope.encode("forget"), { timeoutMs: this.timeoutMs }).then(
      (reply) => {
        const answer = replyOf(reply, this.manage)
        if (!("value" in answer)) throw answer
      },
      (error: unknown) => {
        if (isTransportError(error) && error.reason === "NoResponders") return
        throw error
      }
    )
  }
}

/**
 * A client of the session `sessionId` on the transport in the context; a bad id fails with `ConfigError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (sessionId: string, options: RemoteSessionOptions): Effect.Effect<RemoteSession, HarnessError.ConfigError, Transport.Transport> =>
  Effect.flatMap(Transport.Transport, (transport) =>
    Effect.try({ try: () => new RemoteSession(transport, sessionId, options), catch: (error) => error as HarnessError.ConfigError }))

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

/** @since 0.1.0 @category changes */
export const createTool = (session: RemoteSession, request: CreateToolRequest): Effect.Effect<ToolAck, WireError.WireError> =>
  lift(() => session.createTool(request))

/** @since 0.1.0 @category changes */
export const updateTool = (session: RemoteSession, request: UpdateToolRequest): Effect.Effect<ToolAck, WireError.WireError> =>
  lift(() => session.updateTool(request))

/** @since 0.1.0 @category changes */
export const unloadTool = (session: RemoteSession, name: string): Effect.Effect<ToolAck, WireError.WireError> =>
  lift(() => session.unloadTool(name))

/** @since 0.1.0 @category changes */
export const loadTool = (session: RemoteSession, name: string): Effect.Effect<ToolAck, WireError.WireError> => lift(() => session.loadTool(name))

/** @since 0.1.0 @category reading */
export const listTools = (session: RemoteSession): Effect.Effect<ReadonlyArray<CatalogEntry>, WireError.WireError> =>
  lift(() => session.listTools())

/** @since 0.1.0 @category reading */
export const profile = (
  session: RemoteSession,
  name?: string,
  page?: PageOptions
): Effect.Effect<JitHarnessProfile.JitHarnessProfile, WireError.WireError> => lift(() => session.profile(name, page))

/** @since 0.1.0 @category reading */
export const toolErrors = (
  session: RemoteSession,
  name?: string,
  page?: PageOptions
): Effect.Effect<ToolErrorReport.ToolErrorReport, WireError.WireError> => lift(() => session.toolErrors(name, page))

/** @since 0.1.0 @category reading */
export const snapshot = (session: RemoteSession): Effect.Effect<JitHarnessSnapshot.JitHarnessSnapshot, WireError.WireError> =>
  lift(() => session.snapshot())

/** @since 0.1.0 @category reading */
export const definitions = (
  session: RemoteSession,
  protocol: Exposure.ModelProtocol
): Effect.Effect<SessionDefinitions, WireError.WireError> => lift(() => session.definitions(protocol))

/** @since 0.1.0 @category lifecycle */
export const forget = (session: RemoteSession): Effect.Effect<void, WireError.WireError> => lift(() => session.forget())

const EventMessage = Schema.Struct({ v: Schema.Literal(Envelope.version), kind: Schema.Literal("event"), event: JitToolEvent.JitToolEvent })
const decodeEvent = Schema.decodeUnknownOption(Schema.parseJson(EventMessage))

/**
 * The session's events as they are published, from the moment the subscription is in place (the
 * transport's bounded subscription: a subscriber that falls behind loses the oldest); a message
 * that does not decode as an event is skipped.
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
      Stream.filterMap(stream, (message) => {
        const decoded = decodeEvent(Transport.text(message))
        return decoded._tag === "Some" ? Option.some(decoded.value.event) : Option.none()
      })
  )
