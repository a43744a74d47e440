/**
 * The subprocess implementation of core's `CodeRunner`: `activate(source, host)` routes each
 * package to the Node, Python, Bash or C# runner and answers its metadata; `invoke(invocation, signal)`
 * runs the activation named by id in one of its warm children, one top-level invocation per child, so a
 * timeout or a cancellation kills the process group of exactly that invocation; `release(id)` ends
 * an activation once its invocations are done. A child's nested `harness.callTool` goes to the
 * activation's `CallHost`, naming the call id of the invocation that child runs, from the host's
 * own record. The runner shares one warm pool and one detected `Isolation` between its languages
 * and kills every child when it closes (or when its scope closes, through `layer`).
 *
 * @since 0.1.0
 */
import { CodeRunner, HarnessError } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as BashRunner from "./BashRunner.js"
import * as CSharpRunner from "./CSharpRunner.js"
import { RunnerContext } from "./internal/context.js"
import { killMarked, markedProcesses } from "./internal/spawn.js"
import type { Activated } from "./internal/version.js"
import * as Isolation from "./Isolation.js"
import * as NodeRunner from "./NodeRunner.js"
import * as PythonRunner from "./PythonRunner.js"
import * as SandboxConfig from "./SandboxConfig.js"
import { WarmPool } from "./WarmPool.js"

/** @since 0.1.0 @category models */
export interface SandboxRunner extends CodeRunner.CodeRunnerShape {
  /** As core's `CodeRunner`; a sandboxed `invoke` always answers a promise. */
  readonly invoke: (invocation: CodeRunner.Invocation, signal: AbortSignal | undefined) => Promise<unknown>
  /** The isolation layers active for this runner's children. */
  readonly isolation: ReadonlyArray<Isolation.LayerReport>
  /** Live children in the warm pool, of every activation: starting, busy or idle. */
  readonly poolSize: () => number
  /** Children started so far, of every activation (each activation's first one included): what calls that found no warm child cost. */
  readonly started: () => number
  /** Pids of every live process started by this runner (children and their descendants). */
  readonly processes: () => Array<number>
  /** Kills every child, waits for them, removes the runner's directories. Idempotent. */
  readonly close: () => Promise<void>
}

interface Activation {
  readonly version: Activated
  readonly host: CodeRunner.CallHost
}

/**
 * What to do at process exit for every runner not yet closed: kill its children, remove its
 * directories. One `exit` listener serves them all (one per runner would trip Node's
 * `MaxListenersExceededWarning` past ten runners); it is registered while any runner is open.
 */
const exitHooks = new Set<() => void>()

const runExitHooks = () => {
  for (const hook of exitHooks) hook()
}

const onProcessExit = (hook: () => void): void => {
  if (exitHooks.size === 0) process.on("exit", runExitHooks)
  exitHooks.add(hook)
}

const offProcessExit = (hook: () => void): void => {
  if (exitHooks.delete(hook) && exitHooks.size === 0) process.removeListener("exit", runExitHooks)
}

/** The languages this host can run: Node's always, Python's, Bash's and C#'s where their interpreters were found. */
const languagesOf = (iso: Isolation.Isolation): Array<CodeRunner.CodeSource["language"]> => {
  const languages: Array<CodeRunner.CodeSource["language"]> = [...NodeRunner.languages]
  if (iso.python !== undefined) languages.push(...PythonRunner.languages)
  if (iso.bash !== undefined) languages.push(...BashRunner.languages)
  if (iso.mono !== undefined) languages.push(...CSharpRunner.languages)
  return languages
}

const closedError = (source: CodeRunner.CodeSource) =>
  new HarnessError.PackageError({ name: source.toolName, reason: "NoRunner", detail: "the sandbox runner is closed" })

/** Activates a package on the runner of its language. */
const start = (ctx: RunnerContext, source: CodeRunner.CodeSource): Promise<Activated> => {
  switch (source.language) {
    case "javascript":
    case "typescript":
      return NodeRunner.activate(ctx, source)
    case "python":
      return PythonRunner.activate(ctx, source)
    case "bash":
      return BashRunner.activate(ctx, source)
    case "csharp":
      return CSharpRunner.activate(ctx, source)
    default:
      return Promise.reject(
        new HarnessError.PackageError({
          name: source.toolName,
          reason: "NoRunner",
          detail: `no runner for language '${String(source.language)}' on this host`
        })
      )
  }
}

/**
 * The runner's live activations by id: `activate`, `invoke` and `release` as core's `CodeRunner`
 * has them, and `closeAll`, which closes every activation and forgets them (the runner closing).
 */
const activationTable = (ctx: RunnerContext, pool: WarmPool) => {
  const activations = new Map<string, Activation>()
  /** Ids of activations under way, so an id is live at most once. */
  const activating = new Set<string>()

  const activate = async (source: CodeRunner.CodeSource, host: CodeRunner.CallHost): Promise<CodeRunner.CodeToolMetadata> => {
    if (pool.isClosed) throw closedError(source)
    if (activations.has(source.activationId) || activating.has(source.activationId)) {
      throw new HarnessError.PackageError({
        name: source.toolName,
        reason: "ActivationError",
        detail: `activation id '${source.activationId}' is already live in this runner`
      })
    }
    let version: Activated
    activating.add(source.activationId)
    try {
      version = await start(ctx, source)
    } catch (error) {
      // closing removed what the activation was writing, or killed its child
      throw pool.isClosed ? closedError(source) : error
    } finally {
      activating.delete(source.activationId)
    }
    if (pool.isClosed) {
      version.discard()
      throw closedError(source)
    }
    activations.set(source.activationId, { version, host })
    return version.metadata
  }

  const invoke = (invocation: CodeRunner.Invocation, signal: AbortSignal | undefined): Promise<unknown> => {
    const activation = activations.get(invocation.activationId)
    if (activation === undefined) {
      return Promise.reject(
        new HarnessError.PackageError({
          name: invocation.toolName,
          reason: "NoRunner",
          detail: `activation ${invocation.activationId} is not live here (released, or the runner was closed)`
        })
      )
    }
    return activation.version.invoke(invocation, signal, activation.host)
  }

  const release = (activationId: string): Promise<void> => {
    const activation = activations.get(activationId)
    if (activation === undefined) return Promise.resolve()
    activations.delete(activationId)
    return activation.version.release()
  }

  const closeAll = (): void => {
    for (const activation of activations.values()) activation.version.close()
    activations.clear()
  }

  return { activate, invoke, release, closeAll }
}

/**
 * A runner for every language this host can run. Throws core's `ConfigError` for options out of
 * range.
 *
 * @since 0.1.0 @category constructors
 */
export const make = (options?: SandboxConfig.SandboxOptions): SandboxRunner => {
  const config = SandboxConfig.make(options)
  const iso = Isolation.detect(config)
  const pool = new WarmPool({ total: config.warmChildren, perLanguage: config.warmChildrenPerLanguage })
  const ctx = new RunnerContext(config, iso, pool)
  const languages = languagesOf(iso)
  const onExit = () => {
    void pool.close(0)
    ctx.dirs.removeSync(ctx.dirs.root)
  }
  onProcessExit(onExit)
  let closing: Promise<void> | undefined
  const { activate, invoke, release, closeAll } = activationTable(ctx, pool)
  return {
    languages,
    activate,
    invoke,
    release,
    isolation: Isolation.report(config, iso),
    poolSize: () => pool.size,
    started: () => ctx.started,
    processes: () => markedProcesses(`${ctx.id}:`),
    close: () => {
      if (closing !== undefined) return closing
      closeAll()
      closing = pool.close().then(() => untilGone(`${ctx.id}:`)).then(() => {
        offProcessExit(onExit)
        ctx.dirs.removeSync(ctx.dirs.root)
      })
      return closing
    }
  }
}

/**
 * A scoped runner: its children are killed when the scope closes.
 *
 * @since 0.1.0 @category constructors
 */
export const scoped = (
  options?: SandboxConfig.SandboxOptions
): Effect.Effect<SandboxRunner, HarnessError.ConfigError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({
      try: () => make(options),
      catch: (error) =>
        error instanceof HarnessError.ConfigError
          ? error
          : new HarnessError.ConfigError({ option: "sandbox", detail: String(error) })
    }),
    (runner) => Effect.promise(() => runner.close())
  )

/**
 * Provides core's `CodeRunner` with sandboxed subprocess children.
 *
 * @since 0.1.0 @category layers
 */
export const layer = (options?: SandboxConfig.SandboxOptions): Layer.Layer<CodeRunner.CodeRunner, HarnessError.ConfigError> =>
  Layer.scoped(CodeRunner.CodeRunner, scoped(options))

/** Waits until no process of this runner is left (a pid namespace dies a little after bwrap), killing stragglers. */
const untilGone = async (prefix: string, graceMs = 3_000): Promise<void> => {
  const deadline = Date.now() + graceMs
  while (Date.now() < deadline) {
    if (markedProcesses(prefix).length === 0) return
    killMarked(prefix)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
