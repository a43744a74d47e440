/**
 * Where a benchmark calls the tool, and the sessions it calls it in:
 *
 * - `harness`: a plain `JitHarness` in this process, built from the snapshot (trusted in-process
 *   code by default, or the harness options given);
 * - `embedded`: a session of an `Embedded` runtime (coordinator, admission lease, workers with
 *   sandboxed children, all on the in-memory transport);
 * - `remote`: a session hosted anywhere, as a `RemoteSession` over NATS.
 *
 * `open(depth)` answers a session holding the snapshot's tools and `depth` generated composing
 * tools (`bench_depth_1` calls the tool, `bench_depth_k` calls `bench_depth_{k-1}`, each through
 * `harness.callTool`, passing the arguments on). A plain harness and an embedded runtime get a
 * fresh session per depth (so one depth's calls do not spend another's budget); a remote session is
 * the one named: the snapshot's tools it lacks (or holds unloaded) and the composing tools are
 * created (or loaded, and for composing tools updated to the generated code) in it for the run and
 * unloaded when the target closes; a snapshot tool the session already holds loaded is called as
 * the session has it. Each target also names the code runner of its direct
 * floor and, where there is a transport, how to reach the raw floor (see `Floors`).
 *
 * @since 0.1.0
 */
import { CodeRunner, type CreateToolRequest, JitHarness, type JitHarnessOptions, type JitHarnessSnapshot, JitPolicy, TrustedCodeRunner } from "@jitbox/core"
import { NatsConnection, NatsTransport } from "@jitbox/nats"
import { Embedded, Ids, RemoteSession, Subject } from "@jitbox/runtime"
import { SandboxConfig, SandboxRunner } from "@jitbox/sandbox"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { BenchSetupError, describe } from "./BenchError.js"

/** @since 0.1.0 @category models */
export type TargetOptions =
  | {
    readonly kind: "harness"
    /** The harness's options (default: trusted in-process code, no policy). */
    readonly harness?: Omit<JitHarnessOptions, "sessionId"> | undefined
  }
  | {
    readonly kind: "embedded"
    /** The runtime's options; its `template` is the snapshot. */
    readonly embedded?: Omit<Embedded.EmbeddedOptions, "template"> | undefined
  }
  | {
    readonly kind: "remote"
    /** NATS server URL(s). */
    readonly servers: string | ReadonlyArray<string>
    readonly credentialsFile?: string | undefined
    /** The connection's other options (a user, token or NKey, TLS, an inbox prefix); `servers` and `credentialsFile` win over theirs. */
    readonly connection?: Omit<NatsConnection.NatsConnectionOptions, "servers"> | undefined
    /** Default `default`. */
    readonly namespace?: string | undefined
    readonly session: string
    /** How long one call waits for its reply (default the client's, 30 s). */
    readonly timeoutMs?: number | undefined
    /** The sandbox options of the direct floor's runner (default `embeddedWorker.sandbox`'s). */
    readonly sandbox?: SandboxConfig.SandboxOptions | undefined
  }

/** What a session of a target does for a benchmark. @since 0.1.0 @category models */
export interface BenchSession {
  readonly sessionId: string
  readonly callTool: (name: string, args: unknown) => Promise<unknown>
}

/** @since 0.1.0 @category models */
export interface Target {
  readonly kind: TargetOptions["kind"]
  readonly description: string
  /** The session's id (remote) or the prefix of the benchmark's sessions' ids. */
  readonly session: string
  /** A session with `depth` composing tools in front of `tool`; it lives until the scope closes. */
  readonly open: (depth: number) => Effect.Effect<BenchSession, BenchSetupError, Scope.Scope>
  /** The runner the direct floor invokes the tool's package on, for as long as the scope is open (its children stop with it). */
  readonly directRunner: Effect.Effect<CodeRunner.CodeRunnerShape, BenchSetupError, Scope.Scope>
  /** The NATS connection options of a remote target (its raw floor uses them), else undefined. */
  readonly nats: NatsConnection.NatsConnectionOptions | undefined
  /** The budgets of a session, where this process knows them (a remote session's are its host's). */
  readonly budgets: { readonly concurrentInvocations: number; readonly invocations: number } | undefined
}

/**
 * The request policy of an embedded benchmark's sessions unless the options give one: every
 * language, and the widest budgets a policy allows, so a run of many calls is not refused.
 *
 * @since 0.1.0
 * @category constants
 */
export const embeddedPolicy = {
  allowedLanguages: ["JavaScript", "Python", "Bash"],
  maximumInvocations: 6_400,
  maximumConcurrentInvocations: 8,
  maximumTools: 16,
  maximumRuntimeEnvironments: 16
} satisfies JitPolicy.JitPolicyInput

/**
 * The embedded worker's options unless the options give them: as many invocations at once as the
 * policy allows concurrent ones (a composing call holds its slot while its nested call runs) and as
 * many warm children.
 *
 * @since 0.1.0
 * @category constants
 */
export const embeddedWorker = { concurrency: 8, sandbox: { maximumRuntimeEnvironments: 8 } } as const

/**
 * The most warm children an embedded worker keeps: the sandbox's bound on `maximumRuntimeEnvironments`.
 *
 * @since 0.1.0
 * @category constants
 */
export const maximumWarmChildren = SandboxConfig.MaximumRuntimeEnvironments

/**
 * The sandboxed children a run holds at once on an embedded worker: each call in flight holds one
 * child per code tool of its chain (the tool and `depth` composing tools).
 *
 * @since 0.1.0
 * @category constructors
 */
export const childrenHeld = (run: { readonly concurrency: number; readonly deepest: number }): number =>
  run.concurrency * (run.deepest + 1)

/**
 * The warm children an embedded worker keeps for a run: the children the chains hold, plus one per
 * call in flight, because a call that finds no idle child starts one while another is finishing, and
 * a pool sized exactly to the chains then evicts the idle children the next calls need, over and
 * over (the run would measure child starts); at most {@link maximumWarmChildren}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const warmChildrenFor = (run: { readonly concurrency: number; readonly deepest: number }): number =>
  Math.min(maximumWarmChildren, Math.max(embeddedWorker.sandbox.maximumRuntimeEnvironments, childrenHeld(run) + run.concurrency))

const budgetsOf = (policy: JitPolicy.JitPolicyInput | undefined) =>
  policy === undefined ? undefined : {
    concurrentInvocations: policy.maximumConcurrentInvocations ?? JitPolicy.make({}).maximumConcurrentInvocations,
    invocations: policy.maximumInvocations ?? JitPolicy.make({}).maximumInvocations
  }

/** The name of the composing tool at `depth` (≥ 1). @since 0.1.0 @category constants */
export const composingName = (depth: number): string => `bench_depth_${depth}`

/** The source of the composing tool at `depth`: it calls the one below (or `tool` at depth 1). @since 0.1.0 @category constants */
export const composingSource = (depth: number, tool: string): string => {
  const next = depth === 1 ? tool : composingName(depth - 1)
  return `export const ${composingName(depth)} = tool({
  description: ${JSON.stringify(`Benchmark composing tool ${depth}: calls ${next} with its arguments.`)},
  guidelines: "Generated by jitbox bench for one run."
}, async (args) => await harness.callTool(${JSON.stringify(next)}, args))
`
}

interface Creates {
  readonly createTool: (request: { readonly source: string; readonly entrypoint: string; readonly language: "javascript" }) => Promise<unknown>
}

const createComposing = (session: Creates, tool: string, from: number, to: number) =>
  Effect.tryPromise({
    try: async () => {
      for (let d = from; d <= to; d++) await session.createTool({ source: composingSource(d, tool), entrypoint: composingName(d), language: "javascript" })
    },
    catch: (error) => new BenchSetupError({ step: `creating the composing tools up to depth ${to}`, detail: describe(error) })
  })

const setup = <A>(step: string, f: () => Promise<A>) =>
  Effect.tryPromise({ try: f, catch: (error) => new BenchSetupError({ step, detail: describe(error) }) })

let runs = 0

type Load = { readonly concurrency: number; readonly deepest: number }
type Snapshot = JitHarnessSnapshot.JitHarnessSnapshot
type HarnessOptions = Extract<TargetOptions, { readonly kind: "harness" }>
type EmbeddedOptions = Extract<TargetOptions, { readonly kind: "embedded" }>
type RemoteOptions = Extract<TargetOptions, { readonly kind: "remote" }>

/** Fails when a snapshot tool has the name of a generated composing tool (`bench_depth_N`). */
const checkNames = (snapshot: Snapshot): Effect.Effect<void, BenchSetupError> => {
  const taken = snapshot.tools.map((record) => record.name).filter((name) => /^bench_depth_\d+$/.test(name))
  return taken.length > 0
    ? new BenchSetupError({ step: "reading the snapshot", detail: `its tools ${taken.join(", ")} have the names of the generated composing tools` })
    : Effect.void
}

/** A sandbox runner for the direct floor, stopped with the scope. */
const sandboxRunner = (sandbox: SandboxConfig.SandboxOptions | undefined): Effect.Effect<CodeRunner.CodeRunnerShape, BenchSetupError, Scope.Scope> =>
  SandboxRunner.scoped(sandbox).pipe(
    Effect.mapError((error) => new BenchSetupError({ step: "starting the direct floor's sandbox runner", detail: describe(error) }))
  )

/** The `harness` target: a fresh `JitHarness` from the snapshot per session. */
const harnessTarget = (options: HarnessOptions, snapshot: Snapshot, tool: string, run: string): Target => {
  const harnessOptions = options.harness ?? {}
  const trusted = (harnessOptions.codeExecution ?? "trusted") === "trusted"
  const directRunner = Effect.sync(() =>
    CodeRunner.route([
      ...(harnessOptions.runners ?? []),
      ...(trusted ? [TrustedCodeRunner.make({ moduleRoot: harnessOptions.moduleRoot })] : [])
    ])
  )
  let sessions = 0
  return {
    kind: "harness",
    description: `a plain JitHarness in this process (${trusted ? "trusted in-process code" : "the runners given"})`,
    session: run,
    directRunner,
    nats: undefined,
    budgets: budgetsOf(harnessOptions.policy),
    open: (depth) =>
      Effect.gen(function*() {
        const sessionId = `${run}_${++sessions}`
        const harness = yield* setup("building the harness from the snapshot", () => JitHarness.fromSnapshot(snapshot, { ...harnessOptions, sessionId }))
        yield* createComposing(harness, tool, 1, depth)
        return { sessionId, callTool: (name, args) => harness.callTool(name, args) }
      })
  }
}

/** The `embedded` target: an `Embedded` runtime started for the run, a fresh session of it per depth. */
const embeddedTarget = (options: EmbeddedOptions, snapshot: Snapshot, tool: string, run: string, load: Load) =>
  Effect.gen(function*() {
    const harness = { policy: embeddedPolicy, ...options.embedded?.harness }
    const worker = {
      ...embeddedWorker,
      ...options.embedded?.worker,
      sandbox: { maximumRuntimeEnvironments: warmChildrenFor(load), ...options.embedded?.worker?.sandbox }
    }
    const runtime = yield* Embedded.make({
      ...options.embedded,
      harness,
      worker,
      template: snapshot
    }).pipe(
      Effect.mapError((error) => new BenchSetupError({ step: "starting the embedded runtime", detail: describe(error) }))
    )
    const directRunner = sandboxRunner(worker.sandbox)
    let sessions = 0
    const target: Target = {
      kind: "embedded",
      description: `a session of an embedded runtime (${runtime.workers.length} worker${runtime.workers.length === 1 ? "" : "s"}, sandboxed code, in-memory transport)`,
      session: run,
      directRunner,
      nats: undefined,
      budgets: budgetsOf(harness.policy),
      open: (depth) =>
        Effect.gen(function*() {
          const sessionId = `${run}_${++sessions}`
          const session = yield* Effect.try({
            try: () => runtime.sessions.get(sessionId),
            catch: (error) => new BenchSetupError({ step: "opening an embedded session", detail: describe(error) })
          })
          yield* createComposing(session, tool, 1, depth)
          yield* Effect.addFinalizer(() => Effect.promise(() => runtime.sessions.forget(sessionId).catch(() => undefined)))
          return { sessionId, callTool: (name, args) => session.callTool(name, args) }
        })
    }
    return target
  })

/** Connects to NATS and names the remote session; the connection closes with the scope. */
const connectRemote = (options: RemoteOptions, nats: NatsConnection.NatsConnectionOptions) =>
  Effect.gen(function*() {
    const namespace = yield* Effect.try({
      try: () => Ids.namespace(options.namespace ?? "default"),
      catch: (error) => new BenchSetupError({ step: "reading the namespace", detail: describe(error) })
    })
    const transport = yield* Layer.build(NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer(nats)))).pipe(
      Effect.mapError((error) => new BenchSetupError({ step: "connecting to NATS", detail: describe(error) }))
    )
    const session = yield* RemoteSession.make(options.session, { prefix: Subject.prefix(namespace), timeoutMs: options.timeoutMs }).pipe(
      Effect.provide(transport),
      Effect.mapError((error) => new BenchSetupError({ step: "naming the remote session", detail: describe(error) }))
    )
    return { namespace, session }
  })

type Remote = Effect.Effect.Success<ReturnType<typeof connectRemote>>["session"]

/**
 * Answers `ensure`, which makes a tool a loaded tool of the remote session (created, or loaded
 * again if unloaded; with `replace`, also given the request's code). What it created or loaded is
 * unloaded (newest first) when the scope closes.
 */
const remoteTools = (session: Remote) =>
  Effect.gen(function*() {
    const created: Array<string> = []
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        for (const name of [...created].reverse()) await session.unloadTool(name).catch(() => undefined)
      })
    )
    const listed = yield* setup("listing the remote session's tools", () => session.listTools())
    const state = new Map(listed.map((entry) => [entry.name, entry.state]))
    return (request: CreateToolRequest & { readonly name: string }, replace: boolean) =>
      setup(`putting the tool ${request.name} in the remote session`, async () => {
        const current = state.get(request.name)
        if (current === undefined) {
          await session.createTool(request)
          created.push(request.name)
        } else {
          if (current === "unloaded") {
            await session.loadTool(request.name)
            created.push(request.name)
          }
          if (replace) await session.updateTool(request)
        }
        state.set(request.name, "loaded")
      })
  })

/** The `remote` target: the session named, given the snapshot's tools now and composing tools as depths open. */
const remoteTarget = (options: RemoteOptions, snapshot: Snapshot, tool: string) =>
  Effect.gen(function*() {
    const nats: NatsConnection.NatsConnectionOptions = {
      ...options.connection,
      servers: options.servers,
      credentialsFile: options.credentialsFile ?? options.connection?.credentialsFile,
      name: "jitbox-bench"
    }
    const { namespace, session } = yield* connectRemote(options, nats)
    const directRunner = sandboxRunner(options.sandbox ?? embeddedWorker.sandbox)
    const ensure = yield* remoteTools(session)
    for (const record of snapshot.tools) {
      yield* ensure({
        name: record.name,
        entrypoint: record.entrypoint,
        language: record.language,
        source: record.source,
        files: record.files,
        description: record.description,
        guidelines: record.guidelines,
        parameters: record.parameters,
        duration: record.duration
      }, false)
    }
    let deepest = 0
    const target: Target = {
      kind: "remote",
      description: `the remote session ${options.session} (namespace ${namespace}) over NATS`,
      session: options.session,
      directRunner,
      nats,
      budgets: undefined,
      open: (depth) =>
        Effect.gen(function*() {
          for (let d = deepest + 1; d <= depth; d++) {
            yield* ensure({ name: composingName(d), source: composingSource(d, tool), entrypoint: composingName(d), language: "javascript" }, true)
            deepest = d
          }
          return { sessionId: options.session, callTool: (name, args) => session.callTool(name, args) }
        })
    }
    return target
  })

/**
 * Builds the target; what it started (a runtime, a connection, a sandbox runner) stops when the
 * scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: TargetOptions,
  snapshot: JitHarnessSnapshot.JitHarnessSnapshot,
  tool: string,
  load: Load = { concurrency: 1, deepest: 0 }
): Effect.Effect<Target, BenchSetupError, Scope.Scope> =>
  Effect.gen(function*() {
    yield* checkNames(snapshot)
    const run = `bench_${process.pid}_${++runs}`
    switch (options.kind) {
      case "harness":
        return harnessTarget(options, snapshot, tool, run)
      case "embedded":
        return yield* embeddedTarget(options, snapshot, tool, run, load)
      case "remote":
        return yield* remoteTarget(options, snapshot, tool)
    }
  })
