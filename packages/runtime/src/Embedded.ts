/**
 * The embedded default: the whole runtime in one process, on the in-memory transport, built by
 * one call. A root coordinator (host profiles, a memory ledger), a pool of workers (sandboxed
 * subprocesses), the stream publisher, and `Sessions` whose sessions are admitted by that
 * coordinator and run their code on those workers: the same actors and messages as across
 * machines, with no server. An embedded caller still calls each session's harness directly
 * (`sessions.get(id).callTool`): only code tools cross to a worker.
 *
 * Two faces: `make` (a scoped Effect; closing the scope stops sessions, workers, coordinator in
 * that order) and `start` (a Promise, with `close`).
 *
 *     const runtime = await Embedded.start({ harness: { tools: [add], policy: { allowedLanguages: ["JavaScript"] } } })
 *     const session = runtime.sessions.get("s1")
 *     await session.createTool({ entrypoint: "twice", source })
 *     await session.callTool("twice", { value: 21 })
 *     await runtime.close()
 *
 * @since 0.1.0
 */
import { type CodeLanguage, type HarnessError, type JitHarnessOptions, type JitHarnessSnapshot, JitPolicy } from "@jitbox/core"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Coordinator from "./Coordinator.js"
import * as ExecutionProfile from "./ExecutionProfile.js"
import * as Ids from "./Ids.js"
import * as Ledger from "./Ledger.js"
import * as MemoryTransport from "./MemoryTransport.js"
import * as RemoteCodeRunner from "./RemoteCodeRunner.js"
import * as SessionLeases from "./SessionLeases.js"
import * as Sessions from "./Sessions.js"
import * as SnapshotStore from "./SnapshotStore.js"
import * as StreamPublisher from "./StreamPublisher.js"
import * as Subject from "./Subject.js"
import * as Transport from "./Transport.js"
import type { TransportError } from "./TransportError.js"
import * as Worker from "./Worker.js"

/** @since 0.1.0 @category models */
export interface EmbeddedOptions {
  /** The namespace (default `embedded`). */
  readonly namespace?: string | undefined
  /** Every session's harness options (base tools, request policy, …). */
  readonly harness?: Omit<JitHarnessOptions, "sessionId"> | undefined
  /** The host's execution profiles (default one profile `default` whose ceiling is JT-POL's widest). */
  readonly profiles?: ReadonlyArray<ExecutionProfile.ExecutionProfileInput> | undefined
  /** The profile sessions are admitted under (default the first). */
  readonly profile?: string | undefined
  /** The application's consent to run model-written code (JT-CFG-05; default true: it runs in this process's workers). */
  readonly deploymentConsent?: boolean | undefined
  /** Worker processes' pool members in this process (default 1). */
  readonly workers?: number | undefined
  /** Each worker's options (sandbox, concurrency, languages, …). */
  readonly worker?: Partial<Omit<Worker.WorkerOptions, "prefix" | "workerId">> | undefined
  /** Where toolboxes are kept between activations (default: this process's memory). */
  readonly store?: { readonly directory: string } | undefined
  /** The toolbox a new session starts with (SNAP-03). */
  readonly template?: JitHarnessSnapshot.JitHarnessSnapshot | undefined
  /** Whether events and profile records are published on the transport (default true). */
  readonly publishStreams?: boolean | undefined
  readonly idleTimeout?: Sessions.SessionsOptions["idleTimeout"]
}

/** @since 0.1.0 @category models */
export interface Embedded {
  readonly prefix: Subject.Prefix
  readonly sessions: Sessions.SessionsShape
  readonly workers: ReadonlyArray<Worker.Worker>
  readonly coordinator: Coordinator.Coordinator
  /** The in-memory transport everything talks over (subscribe to `Subject.everything(prefix)` to watch it). */
  readonly transport: Transport.TransportShape
  /** The leases of the admitted sessions (for a gauge of the budgets left). */
  readonly leases: SessionLeases.SessionLeasesShape
}

/** The widest policy a host can allow: every language, every budget at its maximum. */
const widest: JitPolicy.JitPolicyInput = {
  allowedLanguages: ["Python", "JavaScript", "Bash"],
  allowLongRunning: true,
  allowAsyncOperations: true,
  maximumTools: 16,
  maximumRepairs: 8,
  maximumInvocations: 6_400,
  maximumConcurrentInvocations: 8,
  maximumRuntimeEnvironments: 16
}

/** @since 0.1.0 @category constants */
export const defaults = { namespace: "embedded", profile: "default", workers: 1 } as const

const languagesOf = (policy: JitPolicy.JitPolicyInput | undefined): ReadonlyArray<CodeLanguage> | undefined =>
  policy?.allowedLanguages === undefined
    ? undefined
    : JitPolicy.codeLanguages(policy.allowedLanguages)

/**
 * Builds the runtime; it serves until the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: EmbeddedOptions = {}
): Effect.Effect<Embedded, TransportError | HarnessError.ConfigError | JitHarnessSnapshot.SnapshotError, Scope.Scope> =>
  Effect.gen(function*() {
    const namespace = Ids.namespace(options.namespace ?? defaults.namespace)
    const prefix = Subject.prefix(namespace)
    const profiles = ExecutionProfile.all(options.profiles ?? [{ name: defaults.profile, policy: widest }])
    const profile = options.profile ?? profiles[0]!.name
    const base = yield* Layer.build(Layer.mergeAll(
      MemoryTransport.layer(),
      Ledger.layerMemory,
      options.store === undefined ? SnapshotStore.layerMemory() : SnapshotStore.layerFile(options.store)
    ))
    const coordinator = yield* Coordinator.make({ namespace, profiles }).pipe(Effect.provide(base))
    const workers: Array<Worker.Worker> = []
    for (let i = 0; i < (options.workers ?? defaults.workers); i++) {
      workers.push(yield* Worker.make({ prefix, ...options.worker }).pipe(Effect.provide(base)))
    }
    const seams = yield* Layer.build(Layer.mergeAll(
      RemoteCodeRunner.layer({ prefix, languages: languagesOf(options.harness?.policy) }),
      options.publishStreams === false ? Layer.empty : StreamPublisher.layer({ prefix })
    )).pipe(Effect.provide(base))
    const sessions = yield* Sessions.make({
      prefix,
      harness: { codeExecution: "sandboxed", ...options.harness },
      template: options.template,
      idleTimeout: options.idleTimeout,
      activation: true,
      admission: { profile, deploymentConsent: options.deploymentConsent ?? true }
    }).pipe(Effect.provide(Context.merge(base, seams)))
    return {
      prefix,
      sessions,
      workers,
      coordinator,
      transport: Context.get(base, Transport.Transport),
      leases: sessions.leases
    }
  })

/** @since 0.1.0 @category models */
export interface EmbeddedRuntime extends Embedded {
  /** Stops sessions, workers and coordinator (every child process is killed). */
  readonly close: () => Promise<void>
}

/**
 * The Promise face of `make`: rejects with the typed error when it cannot be built.
 *
 * @since 0.1.0
 * @category constructors
 */
export const start = async (options: EmbeddedOptions = {}): Promise<EmbeddedRuntime> => {
  const scope = Effect.runSync(Scope.make())
  const exit = await Effect.runPromiseExit(Scope.extend(make(options), scope))
  if (Exit.isFailure(exit)) {
    await Effect.runPromise(Scope.close(scope, exit))
    throw Cause.squash(exit.cause)
  }
  let closing: Promise<void> | undefined
  return { ...exit.value, close: () => closing ??= Effect.runPromise(Scope.close(scope, Exit.void)) }
}
