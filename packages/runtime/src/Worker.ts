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
 *   lease id, and the worker asks the coordinator (`coordinator.verify`) for that lease's facts,
 *   kept for a quarter of the lease's lifetime (at most 30 s): a lease the coordinator does not
 *   know, one without `deploymentConsent`, one whose profile names another pool (`location`) or
 *   pins another worker (`sandboxNodeId`) is refused with `PolicyViolation` `NotAdmitted`, and
 *   nothing runs; so is a request naming another language than the subject it came on (a worker
 *   runs only the languages it serves). What the message says about itself is never trusted.
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
 * @since 0.1.0
 */
import type { CodeLanguage, CodeRunner } from "@jitbox/core"
import { SandboxRunner, type SandboxConfig } from "@jitbox/sandbox"
import { HarnessError, Slots, ThrownValue } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import * as CoordinatorClient from "./CoordinatorClient.js"
import type * as CoordinatorProtocol from "./CoordinatorProtocol.js"
import * as Stream from "effect/Stream"
import * as Envelope from "./Envelope.js"
import * as Ids from "./Ids.js"
import { failed, okValue } from "./internal/replies.js"
import { valueOf } from "./Protocol.js"
import * as Status from "./internal/status.js"
import * as ServiceDiscovery from "./ServiceDiscovery.js"
import * as Subject from "./Subject.js"
import * as TraceContext from "./TraceContext.js"
import * as Transport from "./Transport.js"
import { TransportError } from "./TransportError.js"
import * as WorkerCapacity from "./WorkerCapacity.js"
import * as WorkerProtocol from "./WorkerProtocol.js"

/** How long past a call's deadline the worker waits for the session's cancel before it aborts the call itself. */
const DeadlineBackstopMs = 1_000

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
  /** The sandbox's options (isolation, limits, warm pool). */
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
  /** How long asking the coordinator about a lease may take (default 10 000 ms). */
  readonly verifyTimeoutMs?: number | undefined
  /** Told of every invocation once it has finished (for logs); what it throws is ignored. */
  readonly onInvocation?: ((invocation: Invocation) => void) | undefined
}

/** A finished invocation, as `onInvocation` hears of it. @since 0.1.0 @category models */
export interface Invocation {
  readonly workerId: Ids.WorkerId
  readonly sessionId: string
  readonly toolName: string
  readonly callId: string
  /** `cancelled`: aborted by a cancel, its deadline or the worker's drain. */
  readonly outcome: "ok" | "failed" | "cancelled"
}

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
  nestedTimeoutMs: 300_000
} as const

interface CacheEntry {
  readonly activationId: string
  readonly ready: Promise<CodeRunner.CodeToolMetadata>
  inflight: number
  settled: boolean
}

interface Running {
  readonly sessionId: string
  readonly callId: string
  readonly controller: AbortController
  readonly deadline: number | null
  readonly trace: TraceContext.InvocationTrace
}

const workerIds = Ids.generator<Ids.WorkerId>("worker")

/** Leases remembered as verified, at most. */
const verifiedLimit = 4096

/** The name workers answer NATS service discovery under (`nats micro ls`). @since 0.1.0 @category constants */
export const serviceName = "jitbox-worker"

const key = (sessionId: string, versionId: string): string => `${sessionId}\u0000${versionId}`

/** What a lease lets its request run with: the environment its profile's credential adds, if any. */
type Admitted = Readonly<Record<string, string>> | undefined

/**
 * Starts a worker that serves until the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: WorkerOptions): Effect.Effect<Worker, TransportError, Scope.Scope | Transport.Transport> =>
  Effect.gen(function*() {
    const transport = yield* Transport.Transport
    const trace = yield* TraceContext.current
    const prefix = options.prefix
    const workerId = options.workerId === undefined ? workerIds() : Ids.workerId(options.workerId)
    const pool = Ids.poolName(options.pool ?? defaults.pool)
    const cacheSize = Math.max(1, options.cacheSize ?? defaults.cacheSize)
    const fetchTimeoutMs = options.fetchTimeoutMs ?? defaults.fetchTimeoutMs
    const nestedTimeoutMs = options.nestedTimeoutMs ?? defaults.nestedTimeoutMs

    const sandbox = yield* Effect.acquireRelease(
      Effect.sync(() => SandboxRunner.make(options.sandbox)),
      (runner) => Effect.promise(() => runner.close())
    )
    const languages = (options.languages ?? sandbox.languages).filter((language) => sandbox.languages.includes(language))

    const concurrency = options.concurrency ?? defaults.concurrency
    const backlog = options.backlog ?? defaults.backlog
    const nestedInvocations = options.nestedInvocations ?? defaults.nestedInvocations
    const requireAdmission = options.requireAdmission ?? true
    const credentials: Readonly<Record<string, string>> = Object.assign(Object.create(null), options.credentials)
    const nodeId = options.nodeId === undefined ? undefined : Ids.workerId(options.nodeId)
    const coordinator = yield* CoordinatorClient.make({ prefix, timeoutMs: options.verifyTimeoutMs })
    const runPromise = Runtime.runPromise(yield* Effect.runtime<never>())
    /** Leases the coordinator confirmed, by (session, lease): until when this worker trusts them. */
    const verified = new Map<string, { readonly facts: CoordinatorProtocol.LeaseFacts; readonly until: number }>()

    const refuse = (name: string, detail: string) => new HarnessError.PolicyViolation({ name, reason: "NotAdmitted", detail })

    /** Resolves when the request's lease allows it to run here; rejects with `NotAdmitted` (or the coordinator's failure) otherwise. */
    const admitted = async (request: Omit<WorkerProtocol.ActivateRequest, "kind">, pinned: boolean): Promise<Admitted> => {
      if (!requireAdmission) return undefined
      const name = request.tool_name
      if (request.lease_id === undefined) throw refuse(name, `session '${request.session_id}' sent no lease: this worker runs code only for sessions the coordinator admitted`)
      const k = key(request.session_id, request.lease_id)
      let found = verified.get(k)
      if (found === undefined || found.until <= Date.now()) {
        verified.delete(k)
        const sessionId = Ids.sessionId(request.session_id)
        const facts = await runPromise(Effect.either(coordinator.verify({ sessionId, leaseId: request.lease_id })))
        if (facts._tag === "Left") {
          const error = facts.left
          if (error._tag === "AdmissionError") throw refuse(name, `the coordinator does not admit it: ${error.message}`)
          throw error
        }
        found = { facts: facts.right, until: Date.now() + Math.min(30_000, facts.right.lifetimeSeconds * 250) }
        if (verified.size >= verifiedLimit) verified.delete(verified.keys().next().value!)
        verified.set(k, found)
      }
      const facts = found.facts
      if (!facts.deploymentConsent) throw refuse(name, `session '${facts.sessionId}' was admitted without deploymentConsent (JT-CFG-05)`)
      if (facts.sandboxNodeId !== undefined) {
        if (!pinned || facts.sandboxNodeId !== nodeId) throw refuse(name, `profile '${facts.profile}' pins its code to worker '${facts.sandboxNodeId}'`)
      } else if (facts.location !== undefined && facts.location !== pool) {
        throw refuse(name, `profile '${facts.profile}' runs in pool '${facts.location}', not '${pool}'`)
      }
      if (facts.credentialName === undefined) return undefined
      const secret = credentials[facts.credentialName]
      if (secret === undefined) throw refuse(name, `profile '${facts.profile}' needs the credential '${facts.credentialName}', which this worker does not hold`)
      return { [facts.credentialName]: secret }
    }

    const cache = new Map<string, CacheEntry>()
    const running = new Map<string, Running>()
    let activations = 0
    let fetches = 0

    const fetchPackage = async (sessionId: Ids.SessionId, versionId: string): Promise<Record<string, string>> => {
      fetches++
      const subject = Subject.sessionPackage(prefix, sessionId)
      const parts: Array<Uint8Array> = []
      let chunks = 1
      for (let chunk = 0; chunk < chunks; chunk++) {
        const reply = await transport.request(subject, Envelope.encode("package", { version_id: versionId, chunk }), {
          timeoutMs: fetchTimeoutMs
        })
        const answer = valueOf(reply, subject)
        if (!("value" in answer)) throw answer
        const part = Envelope.decodeParsed(WorkerProtocol.PackageChunk, answer.value, subject)
        if (part instanceof TransportError) throw part
        chunks = part.chunks
        parts.push(Buffer.from(part.data, "base64"))
      }
      let parsed: unknown
      try {
        parsed = JSON.parse(Buffer.concat(parts).toString("utf8"))
      } catch {
        throw new TransportError({ reason: "Decode", subject, detail: `package ${versionId}: its chunks are not JSON` })
      }
      const files = Envelope.decodeParsed(WorkerProtocol.PackageFiles, parsed, subject)
      if (files instanceof TransportError) throw files
      return files.files
    }

    const hostFor = (sessionId: Ids.SessionId): CodeRunner.CallHost => {
      const subject = Subject.sessionNested(prefix, sessionId)
      return {
        sessionId,
        callTool: async (parentCallId, name, args) => {
          const parent = running.get(key(sessionId, parentCallId))
          const timeoutMs = parent?.deadline == null ? nestedTimeoutMs : Math.max(1, parent.deadline - Date.now())
          const body = Envelope.encodeValue(args, `the arguments of '${name}'`, subject)
          if (body instanceof TransportError) throw body
          const reply = await transport.request(
            subject,
            Envelope.withValue("nested", { parent_call_id: parentCallId, name }, "args", body),
            { timeoutMs, signal: parent?.controller.signal, headers: parent?.trace.headers }
          )
          const answer = valueOf(reply, subject)
          if (!("value" in answer)) throw answer
          return answer.value
        }
      }
    }

    const evict = () => {
      for (const [k, entry] of cache) {
        if (cache.size <= cacheSize) return
        if (entry.inflight > 0 || !entry.settled) continue
        cache.delete(k)
        void sandbox.release(entry.activationId)
      }
    }

    /** The cached activation of (session, version, environment), made (package fetched, module loaded) on first use. */
    const activation = (request: Omit<WorkerProtocol.ActivateRequest, "kind">, environment: Admitted): CacheEntry => {
      const sessionId = Ids.sessionId(request.session_id)
      const k = key(sessionId, environment === undefined ? request.version_id : `${request.version_id}\u0000${Object.keys(environment).join()}`)
      const found = cache.get(k)
      if (found !== undefined) {
        cache.delete(k)
        cache.set(k, found)
        return found
      }
      const activationId = `${workerId}-${++activations}`
      const entry: CacheEntry = {
        activationId,
        inflight: 0,
        settled: false,
        ready: fetchPackage(sessionId, request.version_id).then((files) =>
          sandbox.activate(
            {
              sessionId,
              activationId,
              toolName: request.tool_name,
              versionId: request.version_id,
              language: request.language,
              entrypoint: request.entrypoint,
              entryFile: request.entry_file,
              files,
              environment
            },
            hostFor(sessionId)
          )
        )
      }
      cache.set(k, entry)
      entry.ready.then(
        () => {
          entry.settled = true
          evict()
        },
        () => {
          // a failed activation is not kept: the next request tries again
          if (cache.get(k) === entry) cache.delete(k)
        }
      )
      return entry
    }

    const invoke = async (
      request: WorkerProtocol.InvokeRequest,
      environment: Admitted,
      drained: AbortSignal,
      subject: string,
      headers: Transport.Headers
    ): Promise<string> => {
      const entry = activation(request, environment)
      entry.inflight++
      const runningKey = key(request.session_id, request.call_id)
      const controller = new AbortController()
      const deadline = request.timeout_ms === null ? null : Date.now() + request.timeout_ms
      const abort = () => controller.abort()
      drained.addEventListener("abort", abort, { once: true })
      // a backstop for a cancel that never comes: at the deadline itself the session's harness
      // times the call out and cancels it, and must not race the worker's own abort
      const timer = deadline === null ? undefined : setTimeout(abort, Math.max(0, deadline - Date.now()) + DeadlineBackstopMs)
      const traced = trace.startInvocation(headers, {
        workerId,
        sessionId: request.session_id,
        toolName: request.tool_name,
        callId: request.call_id,
        parentCallId: request.parent_call_id,
        depth: request.depth
      })
      running.set(runningKey, { sessionId: request.session_id, callId: request.call_id, controller, deadline, trace: traced })
      let finished = false
      let errorType: string | null = null
      try {
        await entry.ready
        const result = await sandbox.invoke(
          {
            activationId: entry.activationId,
            toolName: request.tool_name,
            args: request.args,
            context: {
              sessionId: request.session_id,
              callId: request.call_id,
              parentCallId: request.parent_call_id,
              depth: request.depth,
              withinChange: request.within_change,
              // the sandbox's own bound is the backstop too, so it never races the session's timeout
              deadline: deadline === null ? null : deadline + DeadlineBackstopMs
            }
          },
          controller.signal
        )
        finished = true
        return okValue(result, `the result of '${request.tool_name}'`, subject)
      } catch (error) {
        errorType = ThrownValue.errorType(error)
        throw error
      } finally {
        if (timer !== undefined) clearTimeout(timer)
        drained.removeEventListener("abort", abort)
        running.delete(runningKey)
        entry.inflight--
        evict()
        const outcome = finished ? "ok" : controller.signal.aborted ? "cancelled" : "failed"
        traced.end(outcome, errorType)
        try {
          options.onInvocation?.({ workerId, sessionId: request.session_id, toolName: request.tool_name, callId: request.call_id, outcome })
        } catch {
          // a log must not change the invocation's answer
        }
      }
    }

    let pinnedTail: Promise<unknown> = Promise.resolve()
    /**
     * Serves the subject of one language; `slots` bound its invocations that are not nested in one
     * running here (none: the pinned subject, one at a time).
     */
    const handler = (language: CodeLanguage, slots: Slots.Slots | undefined): Transport.Handler => (request) => {
      const pinned = slots === undefined
      const subject = request.subject
      const message = Envelope.decodeKind(WorkerProtocol.workerMessages, request.data, subject)
      if (message instanceof TransportError) return Envelope.error(message)
      if (Envelope.valueTooLarge(message.kind === "invoke" ? message.args : undefined, request.data.length)) {
        return Envelope.error(
          new TransportError({ reason: "PayloadTooLarge", subject, detail: `the arguments of '${message.tool_name}': over JT-LIM-02` })
        )
      }
      if (message.language !== language) {
        return Envelope.error(refuse(message.tool_name, `this subject serves ${language}, and the request names ${message.language}`))
      }
      const work = () =>
        admitted(message, pinned).then((environment) =>
          message.kind === "activate"
            ? activation(message, environment).ready.then((metadata) => Envelope.ok(JSON.stringify(metadata)))
            : invoke(message, environment, request.signal, subject, request.headers)
        ).catch(failed(message.tool_name))
      // its caller runs here and waits for it: it takes no slot (the responder bounds these)
      if (message.kind === "invoke" && message.parent_call_id !== null && running.has(key(message.session_id, message.parent_call_id))) return work()
      if (pinned) {
        // a pinned worker runs one request at a time, whatever its language
        const turn = pinnedTail.then(work)
        pinnedTail = turn
        return turn
      }
      if (slots.running() >= concurrency && slots.waiting() >= backlog) {
        // the status the responder itself answers when it is full: the session sends it again
        return { payload: "", headers: Status.headers("Busy", `${concurrency} invocations run and ${backlog} wait`) }
      }
      return slots.acquire(request.signal).then(
        (release) => work().finally(release),
        () => Envelope.error(new TransportError({ reason: "Closed", subject, detail: "the worker closed while the request waited" }))
      )
    }

    // Cancels first, so a cancel never misses an invocation taken after the worker joined.
    const cancels = yield* transport.subscribe(Subject.workerCancel(prefix))
    yield* cancels.pipe(
      Stream.runForEach((message) =>
        Effect.sync(() => {
          const cancel = Envelope.decode(WorkerProtocol.CancelMessage, message.data, message.subject)
          if (cancel instanceof TransportError) return
          running.get(key(cancel.session_id, cancel.call_id))?.controller.abort()
        })
      ),
      Effect.ignore,
      Effect.forkScoped
    )

    const heartbeat = () => {
      const bySession = new Map<string, Array<string>>()
      for (const call of running.values()) {
        const calls = bySession.get(call.sessionId)
        if (calls === undefined) bySession.set(call.sessionId, [call.callId])
        else calls.push(call.callId)
      }
      for (const [sessionId, callIds] of bySession) {
        try {
          transport.publish(
            Subject.sessionHeartbeat(prefix, Ids.sessionId(sessionId)),
            Envelope.encode("heartbeat", { worker_id: workerId, call_ids: callIds })
          )
        } catch {
          // the transport is closing: the sessions will notice the silence
        }
      }
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => setInterval(heartbeat, options.heartbeatMs ?? WorkerProtocol.heartbeatDefaults.intervalMs)),
      (timer) => Effect.sync(() => clearInterval(timer))
    )

    const capacity = yield* WorkerCapacity.reporter({
      prefix,
      workerId,
      pool,
      languages,
      concurrency,
      running: () => running.size,
      intervalMs: options.capacityIntervalMs
    })
    const endpoints: Array<ServiceDiscovery.Endpoint> = []
    for (const language of languages) {
      const endpoint = { name: `invoke-${language}`, subject: Subject.workerInvoke(prefix, pool, language), queueGroup: `workers-${pool}-${language}`, stats: ServiceDiscovery.counter() }
      endpoints.push(endpoint)
      yield* transport.serve(
        endpoint.subject,
        {
          queue: endpoint.queueGroup,
          // the handler keeps invocations that are not nested in one running here to `concurrency`
          concurrency: concurrency + nestedInvocations,
          backlog: 0,
          graceMs: options.graceMs ?? defaults.graceMs
        },
        ServiceDiscovery.measure(endpoint.stats, capacity.track(handler(language, Slots.make(() => concurrency))))
      )
      if (nodeId !== undefined) {
        yield* transport.serve(
          Subject.nodeInvoke(prefix, nodeId, language),
          { concurrency: 1 + nestedInvocations, backlog: 1_000, graceMs: options.graceMs ?? defaults.graceMs },
          handler(language, undefined)
        )
      }
    }
    yield* ServiceDiscovery.advertise({
      name: serviceName,
      version: ServiceDiscovery.runtimeVersion,
      id: workerId,
      description: "runs code tools of jitbox sessions in sandboxed subprocesses",
      metadata: { namespace: Subject.namespaceOf(prefix), pool, languages: languages.join(",") },
      endpoints
    }).pipe(Effect.catchTag("ConfigError", Effect.die))
    yield* capacity.start

    return {
      workerId,
      pool,
      languages,
      running: () => running.size,
      cached: () => cache.size,
      fetches: () => fetches,
      processes: () => sandbox.processes()
    }
  })
