/**
 * A worker: runs code tools of any session in sandboxed subprocesses, for the sessions'
 * `RemoteCodeRunner`s. It serves `worker.<pool>.<language>.invoke` in one queue group per
 * (pool, language), so starting more workers spreads the load, with at most `concurrency`
 * invocations of each language at once (and `backlog` waiting; beyond that a request is answered
 * `Busy` at once and the session tries again, on any member of the group). An invocation nested in
 * one running on this worker (its caller waits for it) does not wait for those: up to
 * `nestedInvocations` more run, so a composition deeper than `concurrency` never waits behind itself.
 *
 * - **Packages** are fetched once per (session, version) from the owning session
 *   (`session.<sid>.package`, in chunks that fit `max_payload`) and activated in the worker's
 *   `SandboxRunner` (never trusted mode). Activations are kept in a bounded LRU cache keyed by
 *   (session, version): two sessions with the same package never share module state.
 * - **Deadlines**: each invocation carries the milliseconds left; the session cancels it when they
 *   pass, and the worker aborts it itself a second later if no cancel came (the sandbox kills its
 *   process group).
 * - **Cancel**: a `cancel` on `workers.cancel` naming (session, call id) kills the process group of
 *   that invocation, on whichever worker runs it.
 * - **Nested calls**: a child's `harness.callTool` goes back to the owning session on
 *   `session.<sid>.nested`, naming the running call's id; the session resolves parent and depth
 *   from its own table.
 * - **Trace context**: with a `TraceContext` in the context, an invocation is opened from the
 *   headers its request carried and its nested calls carry the headers it answers (they are never
 *   read for authority).
 * - **Admission**: unless `requireAdmission` is `false`, every request must carry the session's
 *   lease id, and the worker asks the coordinator (`coordinator.<principal>.verify`, as its `principal`) for that lease's facts,
 *   kept for a quarter of the lease's lifetime (at most 30 s): a lease the coordinator does not
 *   know, one without `deploymentConsent`, one whose profile names another pool (`location`) or
 *   pins another worker (`sandboxNodeId`) is refused with `PolicyViolation` `NotAdmitted`, and
 *   nothing runs; so is a request naming another language than the subject it came on (a worker
 *   runs only the languages it serves). What the message says about itself is never trusted.
 *   Every second it tells the coordinator how many invocations it ran under each lease
 *   (`coordinator.<principal>.ran`): a lease is charged what its workers counted.
 * - **Credentials**: a lease whose profile names a `credentialName` runs only on a worker given
 *   that credential in `credentials` (else `NotAdmitted` naming it); the children of that session's
 *   activations get it as an environment variable of that name, and nothing else does. The value
 *   never leaves the worker in a message.
 * - **Pinned worker**: a worker given `nodeId` also serves `node.<nodeId>.<language>.invoke`, one
 *   invocation at a time (JT-HOST-04), for profiles whose `sandboxNodeId` names it.
 * - **Drain**: when its scope closes (the `jitbox worker` process closes it on SIGTERM), the worker
 *   stops taking work (its subscriptions end, so new requests go to other members of the group),
 *   lets what it has finish for up to `graceMs`, then kills the rest, each answered with a typed
 *   `TransportError` `Closed`; then its sandbox runner kills every child.
 * - **Capacity**: it reports its pool, languages, concurrency, running invocations and whether it
 *   drains on `workers.capacity`, periodically and on change (`WorkerCapacity`).
 * - **Discovery**: it answers NATS service discovery (`ServiceDiscovery`) as `jitbox-worker`, its id
 *   the worker id, with its `invoke` subjects as endpoints and what their handler counted.
 *
 * It is a composition of parts in `internal/`: `leaseVerification` (the verified-lease cache),
 * `packageTransfer` (the worker's end of the package chunks), `activations` (the LRU),
 * `invocations` (what runs, its deadlines, cancels and nested calls) and `heartbeats` (the
 * sender). Its time is the context's `Clock`.
 *
 * @since 0.1.0
 */
import { type CodeLanguage, type HarnessError, Slots } from "@jitbox/core"
import { SandboxRunner, type SandboxConfig } from "@jitbox/sandbox"
import * as Either from "effect/Either"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Envelope from "./Envelope.js"
import * as Ids from "./Ids.js"
import { Activations } from "./internal/activations.js"
import * as ExactInvoke from "./internal/exactInvoke.js"
import * as Heartbeats from "./internal/heartbeats.js"
import * as Invocations from "./internal/invocations.js"
import * as LeaseVerification from "./internal/leaseVerification.js"
import * as PackageTransfer from "./internal/packageTransfer.js"
import { failed } from "./internal/replies.js"
import * as Status from "./internal/status.js"
import * as Protocol from "./Protocol.js"
import * as ServiceDiscovery from "./ServiceDiscovery.js"
import * as Subject from "./Subject.js"
import * as TraceContext from "./TraceContext.js"
import * as Transport from "./Transport.js"
import { TransportError } from "./TransportError.js"
import * as WorkerCapacity from "./WorkerCapacity.js"
import * as WorkerProtocol from "./WorkerProtocol.js"

/** @since 0.1.0 @category models */
export interface WorkerOptions {
  readonly prefix: Subject.Prefix
  /** This worker's id (default: a fresh one). */
  readonly workerId?: string | undefined
  /** The pool it serves (default `default`); a session's `RemoteCodeRunner` names the pool it sends to. */
  readonly pool?: string | undefined
  /** The languages it serves (default: every language its sandbox can run). */
  readonly languages?: ReadonlyArray<CodeLanguage> | undefined
  /** Invocations of one language run at once, besides those nested in one running here (default 4). */
  readonly concurrency?: number | undefined
  /** Invocations that may wait for a slot before new ones are answered `Busy` (default 0: go to another worker). */
  readonly backlog?: number | undefined
  /** Invocations nested in one running here that may run beyond `concurrency`, per language (default 32). */
  readonly nestedInvocations?: number | undefined
  /** Activations kept, least recently used evicted first (default 64). */
  readonly cacheSize?: number | undefined
  /** How long closing waits for invocations in progress before killing them (default 10 000 ms). */
  readonly graceMs?: number | undefined
  /** How long fetching a package from its session may take (default 30 000 ms). */
  readonly fetchTimeoutMs?: number | undefined
  /** Nested calls of an invocation without a deadline wait at most this long (default 300 000 ms). */
  readonly nestedTimeoutMs?: number | undefined
  /** How often the worker tells each session which of its calls it runs (default 1 000 ms; sessions expect the same). */
  readonly heartbeatMs?: number | undefined
  /** How often it reports its capacity to the coordinators when nothing changes (default 5 000 ms; `WorkerCapacity`). */
  readonly capacityIntervalMs?: number | undefined
  /**
   * The sandbox's options (isolation, limits, interpreters, warm pool). Unless they give
   * `maximumRuntimeEnvironments`, the warm pool is sized from `concurrency` (`sandboxPool`): one
   * activation runs up to `concurrency` top-level invocations at once, and the worker keeps
   * `4 × concurrency` children warm.
   */
  readonly sandbox?: SandboxConfig.SandboxOptions | undefined
  /** Whether every request must carry a lease the coordinator confirms (default true). */
  readonly requireAdmission?: boolean | undefined
  /** The name profiles pin with `sandboxNodeId`: this worker then also serves that node's subject, one invocation at a time. */
  readonly nodeId?: string | undefined
  /**
   * Secrets by name that profiles may ask for with `credentialName`: a session admitted under such a
   * profile runs its code with that one variable added to its children's environment.
   */
  readonly credentials?: Readonly<Record<string, string>> | undefined
  /** Who the worker asks the coordinator as (`coordinator.<principal>.verify`): the NATS user it connects as (default `default`). */
  readonly principal?: string | undefined
  /** How long asking the coordinator about a lease may take (default 10 000 ms). */
  readonly verifyTimeoutMs?: number | undefined
  /** How often it tells the coordinator the invocations it ran under each lease (default 1 000 ms), which is what a lease is charged. */
  readonly ranReportMs?: number | undefined
  /** Told of every invocation once it has finished (for logs); what it throws is ignored. */
  readonly onInvocation?: ((invocation: Invocation) => void) | undefined
}

/** A finished invocation, as `onInvocation` hears of it (`cancelled`: aborted by a cancel, its deadline or the worker's drain). @since 0.1.0 @category models */
export type Invocation = Invocations.Finished

/** @since 0.1.0 @category models */
export interface Worker {
  readonly workerId: Ids.WorkerId
  readonly pool: Ids.PoolName
  readonly languages: ReadonlyArray<CodeLanguage>
  /** Invocations running now. */
  readonly running: () => number
  /** Activations in the cache. */
  readonly cached: () => number
  /** Package fetches made so far (one per (session, version) while it stays cached). */
  readonly fetches: () => number
  /** Pids of every live process of the worker's sandbox (children and their descendants). */
  readonly processes: () => Array<number>
  /** Sandboxed children started so far: once calls find their children warm, it stays put. */
  readonly childrenStarted: () => number
}

/** @since 0.1.0 @category constants */
export const defaults = {
  pool: "default",
  concurrency: 4,
  backlog: 0,
  nestedInvocations: 32,
  cacheSize: 64,
  graceMs: 10_000,
  fetchTimeoutMs: 30_000,
  nestedTimeoutMs: 300_000,
  /** Levels of composition (a tool and the tools it calls) the default warm pool keeps children for, per call at once. */
  chainLevels: 4
} as const

const workerIds = Ids.generator<Ids.WorkerId>("worker")

/**
 * The warm pool a worker asks of its sandbox, unless its options size it (they give one of these
 * fields, or `maximumRuntimeEnvironments`): one tool may use the whole `concurrency`, and the
 * sandbox keeps `concurrency × defaults.chainLevels` children warm: `concurrency` calls of tools
 * composed three deep each hold four children at once (one per level), and find them warm again.
 *
 * @since 0.1.0
 * @category constructors
 */
export const sandboxPool = (concurrency: number, sandbox: SandboxConfig.SandboxOptions = {}): SandboxConfig.SandboxOptions => {
  if (sandbox.maximumRuntimeEnvironments !== undefined) return sandbox
  return {
    ...sandbox,
    childrenPerActivation: sandbox.childrenPerActivation ?? concurrency,
    warmChildren: sandbox.warmChildren ?? concurrency * defaults.chainLevels
  }
}

/** The name workers answer NATS service discovery under (`nats micro ls`). @since 0.1.0 @category constants */
export const serviceName = "jitbox-worker"

/** The parts one language's handler needs. */
interface Parts {
  readonly concurrency: number
  readonly backlog: number
  readonly leases: LeaseVerification.LeaseVerification
  readonly activations: Activations
  readonly invocations: Invocations.Invocations
  /** The tail of the pinned subjects' queue: a pinned worker runs one request at a time, whatever its language. */
  pinnedTail: Promise<unknown>
}

const workerRequests = Protocol.requests(WorkerProtocol.worker)

/**
 * Serves the subject of one language: decodes the request once, refuses what is too large or of
 * another language, bounds it with `slots` (none: the pinned subject, one at a time) unless it is
 * nested in a call running here, checks its lease, and runs it.
 */
const handler = (parts: Parts, language: CodeLanguage, slots: Slots.Slots | undefined): Transport.Handler => (request) => {
  const pinned = slots === undefined
  const subject = request.subject
  const parsed = Envelope.parse(request.data, subject)
  if (Either.isLeft(parsed)) return Envelope.error(parsed.left)
  const exact = ExactInvoke.invoke(parsed.right)
  const decoded = exact === undefined ? Envelope.decodeKindParsed(workerRequests, parsed.right, subject) : Either.right(exact)
  if (Either.isLeft(decoded)) return Envelope.error(decoded.left)
  const message = decoded.right
  if (Envelope.valueTooLarge(message.kind === "invoke" ? message.args : undefined, request.data.length)) {
    return Envelope.error(new TransportError({ reason: "PayloadTooLarge", subject, detail: `the arguments of '${message.toolName}': over JT-LIM-02` }))
  }
  if (message.language !== language) {
    return Envelope.error(LeaseVerification.refuse(message.toolName, `this subject serves ${language}, and the request names ${message.language}`))
  }
  const work = () =>
    parts.leases.admit(message, pinned).then((environment) => {
      const entry = parts.activations.get(message, environment)
      if (message.kind === "invoke") parts.leases.ran(message)
      return message.kind === "activate"
        ? entry.ready.then((metadata) => Protocol.reply(WorkerProtocol.worker.activate, metadata, `the metadata of '${message.toolName}'`, subject))
        : parts.invocations.run({ request: message, entry, activations: parts.activations, drained: request.signal, subject, headers: request.headers })
    }).catch(failed(message.toolName))
  // its caller runs here and waits for it: it takes no slot (the responder bounds these)
  if (message.kind === "invoke" && message.parentCallId !== null && parts.invocations.has(message.sessionId, message.parentCallId)) return work()
  if (pinned) {
    const turn = parts.pinnedTail.then(work)
    parts.pinnedTail = turn
    return turn
  }
  if (slots.running() >= parts.concurrency && slots.waiting() >= parts.backlog) {
    // the status the responder itself answers when it is full: the session sends it again
    return { payload: "", headers: Status.headers("Busy", `${parts.concurrency} invocations run and ${parts.backlog} wait`) }
  }
  return slots.acquire(request.signal).then(
    (release) => work().finally(release),
    () => Envelope.error(new TransportError({ reason: "Closed", subject, detail: "the worker closed while the request waited" }))
  )
}

/** What the options decode to: ids branded once, defaults applied. */
const settings = (options: WorkerOptions) =>
  Effect.gen(function*() {
    const workerId = options.workerId === undefined ? workerIds() : yield* Ids.decode(Ids.WorkerId, "workerId")(options.workerId)
    const pool = yield* Ids.decode(Ids.PoolName, "pool")(options.pool ?? defaults.pool)
    const nodeId = options.nodeId === undefined ? undefined : yield* Ids.decode(Ids.WorkerId, "nodeId")(options.nodeId)
    return {
      workerId,
      pool,
      nodeId,
      concurrency: options.concurrency ?? defaults.concurrency,
      backlog: options.backlog ?? defaults.backlog,
      nestedInvocations: options.nestedInvocations ?? defaults.nestedInvocations,
      graceMs: options.graceMs ?? defaults.graceMs
    }
  })

/** What the worker's lease verification is told: the coordinator it asks, as whom, and what this worker is. */
const verificationOf = (options: WorkerOptions, principal: Ids.Principal | undefined, pool: Ids.PoolName, nodeId: Ids.WorkerId | undefined): LeaseVerification.Options => ({
  prefix: options.prefix,
  principal,
  requireAdmission: options.requireAdmission ?? true,
  pool,
  nodeId,
  credentials: Object.assign(Object.create(null), options.credentials),
  verifyTimeoutMs: options.verifyTimeoutMs,
  ranReportMs: options.ranReportMs
})

/** The worker's sandbox, closed with its scope (bad options fail with `ConfigError`); it reads deadlines by the same clock the worker sets them with. */
const sandboxRunner = (options: WorkerOptions, concurrency: number) =>
  Effect.gen(function*() {
    const clock = yield* Effect.clock
    return yield* SandboxRunner.scoped({
      ...sandboxPool(concurrency, options.sandbox),
      clock: options.sandbox?.clock ?? { now: () => clock.unsafeCurrentTimeMillis() }
    })
  })

/**
 * Starts a worker that serves until the scope closes. Bad ids in the options fail with `ConfigError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: WorkerOptions): Effect.Effect<Worker, TransportError | HarnessError.ConfigError, Scope.Scope | Transport.Transport> =>
  Effect.gen(function*() {
    const transport = yield* Transport.Transport
    const prefix = options.prefix
    const { backlog, concurrency, graceMs, nestedInvocations, nodeId, pool, workerId } = yield* settings(options)
    const principal = options.principal === undefined ? undefined : yield* Ids.decode(Ids.Principal, "principal")(options.principal)
    const sandbox = yield* sandboxRunner(options, concurrency)
    const languages = (options.languages ?? sandbox.languages).filter((language) => sandbox.languages.includes(language))
    const leases = yield* LeaseVerification.make(verificationOf(options, principal, pool, nodeId))
    const invocations = yield* Invocations.make({
      prefix,
      workerId,
      sandbox,
      trace: yield* TraceContext.current,
      nestedTimeoutMs: options.nestedTimeoutMs ?? defaults.nestedTimeoutMs,
      onInvocation: options.onInvocation
    })
    const activations = new Activations({
      workerId,
      cacheSize: Math.max(1, options.cacheSize ?? defaults.cacheSize),
      sandbox,
      fetch: PackageTransfer.fetcher(transport, prefix, options.fetchTimeoutMs ?? defaults.fetchTimeoutMs),
      hostFor: invocations.hostFor
    })
    const parts: Parts = { concurrency, backlog, leases, activations, invocations, pinnedTail: Promise.resolve() }
    yield* Heartbeats.sender({ prefix, workerId, intervalMs: options.heartbeatMs ?? WorkerProtocol.heartbeatDefaults.intervalMs, calls: invocations.calls })

    const capacity = yield* WorkerCapacity.reporter({
      prefix,
      workerId,
      pool,
      languages,
      concurrency,
      running: invocations.size,
      intervalMs: options.capacityIntervalMs
    })
    const endpoints: Array<ServiceDiscovery.Endpoint> = []
    for (const language of languages) {
      const endpoint = { name: `invoke-${language}`, subject: Subject.workerInvoke(prefix, pool, language), queueGroup: `workers-${pool}-${language}`, stats: ServiceDiscovery.counter() }
      endpoints.push(endpoint)
      // the handler keeps invocations that are not nested in one running here to `concurrency`
      const serveOptions = { queue: endpoint.queueGroup, concurrency: concurrency + nestedInvocations, backlog: 0, graceMs }
      yield* transport.serve(endpoint.subject, serveOptions, ServiceDiscovery.measure(endpoint.stats, capacity.track(handler(parts, language, Slots.make(() => concurrency)))))
      if (nodeId !== undefined) {
        yield* transport.serve(Subject.nodeInvoke(prefix, nodeId, language), { concurrency: 1 + nestedInvocations, backlog: 1_000, graceMs }, handler(parts, language, undefined))
      }
    }
    yield* ServiceDiscovery.advertise({
      name: serviceName,
      version: ServiceDiscovery.runtimeVersion,
      id: workerId,
      description: "runs code tools of jitbox sessions in sandboxed subprocesses",
      metadata: { namespace: Subject.namespaceOf(prefix), pool, languages: languages.join(",") },
      endpoints
    })
    yield* capacity.start

    return {
      workerId,
      pool,
      languages,
      running: invocations.size,
      cached: () => activations.size,
      fetches: () => activations.fetches,
      processes: () => sandbox.processes(),
      childrenStarted: () => sandbox.started()
    }
  })
