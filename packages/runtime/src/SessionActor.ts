/**
 * One session's harness as an actor: it activates from the `SnapshotStore` (or a template
 * snapshot, SNAP-03), serves `session.<sid>.call` (tool calls, run concurrently up to
 * `callConcurrency`) and `session.<sid>.manage` (the application API), and stores every toolbox
 * change before it acknowledges it, whoever made it: the application (`createTool`, …), the model
 * (`create_tool`, … as tool calls) or code composing a management tool.
 *
 * Changes are serialised by the harness itself (MGMT-15), and a change made inside a change (an
 * example that calls a management tool) runs as part of it. The actor adds no lock of its own:
 * its handlers and its saves never wait for the change lock, so nothing it does can deadlock a
 * change in progress.
 *
 * It is a scoped resource: closing its scope stops serving (requests taken finish, up to
 * `graceMs`), then releases the harness (running calls are cancelled). `Sessions` owns one scope
 * per active session.
 *
 * @since 0.1.0
 */
import { Harness, type JitHarness, ManagementTools, type JitHarnessOptions, type JitHarnessSnapshot, type Middleware } from "@jitbox/core"
import type { HarnessError } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as Ids from "./Ids.js"
import { Activity } from "./internal/activity.js"
import { Persister } from "./internal/persister.js"
import { callHandler, manageHandler } from "./internal/sessionServer.js"
import * as Protocol from "./Protocol.js"
import type { PageOptions, SessionApi } from "./SessionApi.js"
import * as SessionProtocol from "./SessionProtocol.js"
import * as SnapshotStore from "./SnapshotStore.js"
import * as Subject from "./Subject.js"
import * as TraceContext from "./TraceContext.js"
import * as Transport from "./Transport.js"
import type { ProtocolError } from "./ProtocolError.js"
import type { TransportError } from "./TransportError.js"
import type { OwnershipError } from "./SessionOwnership.js"
import { promiseRunner } from "./internal/promiseRunner.js"

/** @since 0.1.0 @category models */
export interface SessionActorOptions {
  readonly prefix: Subject.Prefix
  readonly sessionId: Ids.SessionId
  /** The harness's options (base tools, policy, middleware, …); seams not given here are read from the context, as `Harness.make` does. */
  readonly harness?: Omit<JitHarnessOptions, "sessionId"> | undefined
  /** The toolbox a session starts with when the store has none for it (SNAP-03). */
  readonly template?: JitHarnessSnapshot.JitHarnessSnapshot | undefined
  /** Tool calls handled at once (default 64); more wait, up to `backlog`, then are answered `Busy`. */
  readonly callConcurrency?: number | undefined
  /** Application requests handled at once (default 16); changes among them still run one at a time. */
  readonly manageConcurrency?: number | undefined
  /** Requests that may wait for a slot (the transport's default when absent). */
  readonly backlog?: number | undefined
  /** How long closing waits for requests taken before answering them `Closed` (the transport's default when absent). */
  readonly graceMs?: number | undefined
  /** Asked for by a `forget` message; the host releases the session after the reply. */
  readonly onForget?: (() => Promise<void>) | undefined
}

/** @since 0.1.0 @category models */
export interface SessionActor {
  readonly sessionId: Ids.SessionId
  /** The harness itself: an embedded caller calls it directly. Changes made through `api` are stored; the harness's own `createTool`… are not. */
  readonly harness: JitHarness
  /** The application API on this harness, in process: changes are stored before they resolve. */
  readonly api: SessionApi
  /** The handlers of `session.<sid>.manage`, which `api` calls directly. */
  readonly handlers: Protocol.Handlers<SessionProtocol.Manage>
  /** Stores the toolbox now. */
  readonly persist: Effect.Effect<void, JitHarnessSnapshot.SnapshotError>
  /** Calls and requests running now. */
  readonly inflight: () => number
  /** Milliseconds without work at `now` (by the context's `Clock`); 0 while something runs. */
  readonly idleFor: (now: number) => number
  /** Whether a request is attached (LIFE-02): its bindings must not be released under it. */
  readonly pinned: () => boolean
  /** Whether any call or request has run since it activated. */
  readonly used: () => boolean
}

/** Why a session could not be activated. @since 0.1.0 @category errors */
export type ActivationError = HarnessError.HarnessError | JitHarnessSnapshot.SnapshotError | TransportError | ProtocolError | OwnershipError

/** @since 0.1.0 @category constants */
export const defaults = {
  callConcurrency: 64,
  manageConcurrency: 16
} as const

const page = (options: PageOptions | undefined): { offset?: number; limit?: number } => ({
  ...(options?.offset === undefined ? {} : { offset: options.offset }),
  ...(options?.limit === undefined ? {} : { limit: options.limit })
})

/** How the actor counts work and stores changes: `counted` and `changed` wrap handlers, `middleware` wraps tool calls. */
interface Bookkeeping {
  /** Resolves once the change `pending` made is stored. */
  readonly changed: <A>(pending: Promise<A>) => Promise<A>
  /** Runs `f` as work (the session is not idle while it runs). */
  readonly counted: <A>(f: () => A | Promise<A>) => Promise<A>
  /** Outermost, so a call counts as work for its whole length, whatever other middleware does. */
  readonly middleware: Middleware
}

const bookkeeping = (activity: Activity, persister: Persister): Bookkeeping => {
  const changed = <A>(pending: Promise<A>): Promise<A> => pending.then((value) => persister.persist().then(() => value))
  const counted = <A>(f: () => A | Promise<A>): Promise<A> => {
    activity.begin()
    let pending: Promise<A>
    try {
      pending = Promise.resolve(f())
    } catch (error) {
      pending = Promise.reject(error)
    }
    pending.then(activity.end, activity.end)
    return pending
  }
  const middleware: Middleware = (call, next) => {
    activity.begin()
    let pending: Promise<unknown>
    try {
      pending = next()
    } catch (error) {
      pending = Promise.reject(error)
    }
    if (call.origin === "management" && ManagementTools.changesToolbox(call.name)) pending = changed(pending)
    pending.then(activity.end, activity.end)
    return pending
  }
  return { changed, counted, middleware }
}

/** The handlers of `session.<sid>.manage` on the harness: each counted as work, each change stored before it resolves. */
const manageHandlers = (
  built: JitHarness,
  { changed, counted }: Bookkeeping,
  onForget: (() => Promise<void>) | undefined
): Protocol.Handlers<SessionProtocol.Manage> => ({
  create_tool: ({ request }) => counted(() => changed(built.createTool(request))),
  update_tool: ({ request }) => counted(() => changed(built.updateTool(request))),
  unload_tool: ({ name }) => counted(() => changed(built.unloadTool(name))),
  load_tool: ({ name }) => counted(() => changed(built.loadTool(name))),
  list_tools: () => counted(() => built.listTools()),
  profile: ({ name, ...options }) => counted(() => built.profile(name, page(options))),
  tool_errors: ({ name, ...options }) => counted(() => built.toolErrors(name, page(options))),
  snapshot: () => counted(() => built.snapshot()),
  definitions: ({ protocol }) => counted(() => built.definitions(protocol)),
  publish_tool: ({ as, name }) => counted(() => built.publishTool(name, { as })),
  load_from_catalog: ({ as, name, version }) => counted(() => changed(built.loadFromCatalog(name, { version, as }))),
  forget: () => onForget === undefined ? Promise.resolve() : onForget()
})

/** Serves `session.<sid>.call` and `session.<sid>.manage` until the scope closes. */
const serve = (
  options: SessionActorOptions,
  api: SessionApi,
  handlers: Protocol.Handlers<SessionProtocol.Manage>
): Effect.Effect<void, TransportError, Scope.Scope | Transport.Transport> =>
  Effect.gen(function*() {
    const transport = yield* Transport.Transport
    const serve = { backlog: options.backlog, graceMs: options.graceMs }
    yield* transport.serve(
      Subject.sessionCall(options.prefix, options.sessionId),
      { ...serve, concurrency: options.callConcurrency ?? defaults.callConcurrency },
      callHandler(api, yield* TraceContext.current)
    )
    yield* transport.serve(
      Subject.sessionManage(options.prefix, options.sessionId),
      { ...serve, concurrency: options.manageConcurrency ?? defaults.manageConcurrency },
      manageHandler(handlers)
    )
  })

/**
 * Activates the session and serves it until the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: SessionActorOptions
): Effect.Effect<SessionActor, ActivationError, Scope.Scope | Transport.Transport | SnapshotStore.SnapshotStore> =>
  Effect.gen(function*() {
    const store = yield* SnapshotStore.SnapshotStore
    const clock = yield* Effect.clock
    const run = promiseRunner(yield* Effect.runtime<never>())
    const sessionId = options.sessionId

    const stored = yield* store.load(sessionId)
    const snapshot = Option.getOrUndefined(stored) ?? options.template
    const activity = new Activity(() => clock.unsafeCurrentTimeMillis())

    let harness: JitHarness | undefined
    const save = Effect.suspend(() => store.save(sessionId, harness!.snapshot()))
    const persister = new Persister(() => run(save))
    const books = bookkeeping(activity, persister)

    const built = yield* Harness.makeScoped(
      { ...options.harness, sessionId, middleware: [books.middleware, ...(options.harness?.middleware ?? [])] },
      snapshot
    )
    harness = built
    yield* Effect.tryPromise({ try: () => built.ready, catch: (error) => error as JitHarnessSnapshot.SnapshotError })

    const handlers = manageHandlers(built, books, options.onForget)
    const api: SessionApi = {
      sessionId,
      callTool: (name, args, callOptions) => built.callTool(name, args, callOptions),
      ...Protocol.facade(SessionProtocol.manage, Protocol.local(handlers))
    }
    yield* serve(options, api, handlers)

    return {
      sessionId,
      harness: built,
      api,
      handlers,
      persist: Effect.tryPromise({ try: () => persister.persist(), catch: (error) => error as JitHarnessSnapshot.SnapshotError }),
      inflight: () => activity.inflight,
      idleFor: (now) => activity.idleFor(now),
      pinned: () => built.active,
      used: () => activity.used
    }
  })
