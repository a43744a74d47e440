/**
 * The subprocess layer of core's `CodeRunner`: routes each package to the Node, Python or Bash
 * runner, shares one warm pool and one set of detected isolation layers between them, and kills
 * every child when it closes (or when its scope closes, through `layer`).
 *
 * @since 0.1.0
 */
import type { SandboxedCode } from "./internal/version.js"
import { CodeRunner, HarnessError } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as BashRunner from "./BashRunner.js"
import { RunnerContext } from "./internal/context.js"
import { killMarked, markedProcesses } from "./internal/spawn.js"
import * as NodeRunner from "./NodeRunner.js"
import * as PythonRunner from "./PythonRunner.js"
import * as SandboxConfig from "./SandboxConfig.js"
import * as Isolation from "./Isolation.js"
import { WarmPool } from "./WarmPool.js"

/** @since 0.1.0 @category models */
export interface SandboxRunner extends CodeRunner.CodeRunnerShape {
  /** Activation, as core's `CodeRunner`; a sandboxed `invoke` always answers a promise. */
  readonly activate: (source: CodeRunner.CodeSource) => Promise<SandboxedCode>
  /** The isolation layers active for this runner's children. */
  readonly isolation: ReadonlyArray<Isolation.LayerReport>
  /** Live children in the warm pool. */
  readonly poolSize: () => number
  /** Pids of every live process started by this runner (children and their descendants). */
  readonly processes: () => Array<number>
  /** Kills every child, waits for them, removes the runner's directories. Idempotent. */
  readonly close: () => Promise<void>
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

/**
 * A runner for every language this host can run. Throws core's `ConfigError` for options out of
 * range.
 *
 * @since 0.1.0 @category constructors
 */
export const make = (options?: SandboxConfig.SandboxOptions): SandboxRunner => {
  const config = SandboxConfig.make(options)
  const iso = Isolation.detect(config)
  const pool = new WarmPool(config.maximumRuntimeEnvironments)
  const ctx = new RunnerContext(config, iso, pool)
  const languages: Array<CodeRunner.CodeSource["language"]> = [...NodeRunner.languages]
  if (iso.python !== undefined) languages.push(...PythonRunner.languages)
  if (iso.bash !== undefined) languages.push(...BashRunner.languages)
  const onExit = () => {
    void pool.close(0)
    ctx.dirs.removeSync(ctx.dirs.root)
  }
  onProcessExit(onExit)
  let closing: Promise<void> | undefined

  const activate = (source: CodeRunner.CodeSource): Promise<SandboxedCode> => {
    if (pool.isClosed) {
      return Promise.reject(new HarnessError.PackageError({ name: source.toolName, reason: "NoRunner", detail: "the sandbox runner is closed" }))
    }
    switch (source.language) {
      case "javascript":
      case "typescript":
        return NodeRunner.activate(ctx, source)
      case "python":
        return PythonRunner.activate(ctx, source)
      case "bash":
        return BashRunner.activate(ctx, source)
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

  return {
    languages,
    activate,
    isolation: Isolation.report(config, iso),
    poolSize: () => pool.size,
    processes: () => markedProcesses(`${ctx.id}:`),
    close: () => {
      closing ??= pool.close().then(() => untilGone(`${ctx.id}:`)).then(() => {
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
