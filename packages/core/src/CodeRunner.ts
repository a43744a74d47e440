/**
 * The seam where code tools run: in this process (`TrustedCodeRunner`), in sandboxed subprocesses
 * (`@jitbox/sandbox`), or on a worker elsewhere. Everything that crosses it is addressed by id and
 * serialisable, so a runner in another process implements the same shape:
 *
 * - `activate` makes one activation of a package version (module-level code runs now, so load
 *   errors surface at create/update time) and answers what its `tool(...)` value declares;
 * - `invoke` runs the activation named by `activationId` with a serialisable `CallContext`;
 * - a nested `harness.callTool` from inside a running tool goes back through the `CallHost` given
 *   at activation, naming the parent's call id: the harness resolves depth, parent and session
 *   from its own table of live calls, never from what the code claims;
 * - `cancel` names the call; `release` ends an activation.
 *
 * `invoke` answers a Promise (or a plain value) rather than an Effect on purpose: it sits on the
 * dispatch hot path, where one `Effect.runPromise` would cost more than the rest of a dispatch.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type { Grant } from "./Admission.js"
import { PackageError } from "./HarnessError.js"
import type { JsonSchema } from "./JsonSchema.js"
import type { CodeLanguage, ToolExecutionMode } from "./ToolOrigin.js"

/** One immutable version of a code package, ready to activate. @since 0.1.0 @category models */
export interface CodeSource {
  readonly sessionId: string
  /** Unique among the live activations of every session this runner serves; names the activation from now on. */
  readonly activationId: string
  readonly toolName: string
  /** The content-derived id of the version (the same package in two sessions has the same `versionId`). */
  readonly versionId: string
  readonly language: CodeLanguage
  /** The exported name (JS/TS, Python) of the `tool(...)` value; ignored for Bash. */
  readonly entrypoint: string
  /** Path of the entry file inside `files`: `index.ts`, `index.js`, `__init__.py` or `main.sh`. */
  readonly entryFile: string
  /** Every file of the package, entry file included, keyed by its relative path. */
  readonly files: Readonly<Record<string, string>>
  /**
   * Variables the host adds to this activation's environment (a worker hands a profile's credential
   * this way); set by configuration only, never by the model. Runners that start no process ignore it.
   */
  readonly environment?: Readonly<Record<string, string>> | undefined
}

/** What the module's `tool(...)` value declares. Bash tools declare nothing: the request supplies it. @since 0.1.0 @category models */
export interface CodeToolMetadata {
  readonly description?: string | undefined
  readonly guidelines?: string | undefined
  readonly parameters?: JsonSchema | undefined
  readonly executionMode?: ToolExecutionMode | undefined
}

/**
 * The serialisable context of one call: what a runner in another process needs to run it and to
 * route its nested calls and its cancellation back by id.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallContext {
  readonly sessionId: string
  /** Unique among the session's live calls. */
  readonly callId: string
  readonly parentCallId: string | null
  /** 1 for a call from the model or the application, parent depth + 1 for a nested call. */
  readonly depth: number
  /** Whether the call runs inside a toolbox change (an example of a version being made). */
  readonly withinChange: boolean
  /** Epoch milliseconds, by the harness's clock, after which the call is abandoned; `null` for none. */
  readonly deadline: number | null
}

/** One invocation of an activation. @since 0.1.0 @category models */
export interface Invocation {
  readonly activationId: string
  readonly toolName: string
  readonly args: unknown
  readonly context: CallContext
  /**
   * The call's own handler context, for a runner in this process: it saves building one, and the
   * call becomes addressable by id only if its handler composes. A runner in another process
   * ignores it and uses `context`.
   */
  readonly local?: InvocationContext | undefined
}

/**
 * The harness side of a session, as a runner sees it: nested calls by the parent's call id.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallHost {
  readonly sessionId: string
  /** A nested call made by the running call `parentCallId`; rejects with a typed error when that call is not live. */
  readonly callTool: (parentCallId: string, name: string, args: unknown) => Promise<unknown>
  /**
   * The lease the session holds now, when a coordinator admitted it: a runner in another process
   * reads it at each message it sends, so the receiver can check it (the session's `Admission`).
   */
  readonly grant?: (() => Grant | undefined) | undefined
}

/**
 * The context a tool handler runs in (base tools and in-process code tools): the call's ids, a
 * signal that fires when the call is cancelled or times out, and `callTool` for composition.
 *
 * @since 0.1.0
 * @category models
 */
export interface InvocationContext {
  readonly callId: string
  readonly toolName: string
  readonly depth: number
  readonly signal: AbortSignal
  readonly callTool: (name: string, args?: unknown) => Promise<unknown>
}

/** @since 0.1.0 @category models */
export interface CodeRunnerShape {
  readonly languages: ReadonlyArray<CodeLanguage>
  /** Rejects with a `PackageError` when the package does not compile, link or load. */
  readonly activate: (source: CodeSource, host: CallHost) => Promise<CodeToolMetadata>
  /**
   * Runs one invocation; answers the result or a promise of it, rejects with what the tool threw.
   * `signal` fires when the call is cancelled or passes its deadline; a runner in another process
   * forwards it as a cancel naming `context.callId`.
   */
  readonly invoke: (invocation: Invocation, signal: AbortSignal | undefined) => unknown
  /** Ends an activation once nothing runs in it; never rejects. */
  readonly release: (activationId: string) => Promise<void>
}

/** @since 0.1.0 @category tags */
export class CodeRunner extends Context.Tag("@jitbox/core/CodeRunner")<CodeRunner, CodeRunnerShape>() {}

/**
 * One runner over several, each serving its languages; the first listed for a language wins.
 *
 * @since 0.1.0
 * @category combinators
 */
export const route = (runners: ReadonlyArray<CodeRunnerShape>): CodeRunnerShape => {
  if (runners.length === 1) return runners[0]!
  const byLanguage = new Map<CodeLanguage, CodeRunnerShape>()
  for (const runner of runners) for (const language of runner.languages) if (!byLanguage.has(language)) byLanguage.set(language, runner)
  const byActivation = new Map<string, CodeRunnerShape>()
  return {
    languages: [...byLanguage.keys()],
    activate: async (source, host) => {
      const runner = byLanguage.get(source.language)
      if (runner === undefined) {
        throw new PackageError({ name: source.toolName, reason: "NoRunner", detail: `no runner for ${source.language} on this host` })
      }
      const metadata = await runner.activate(source, host)
      byActivation.set(source.activationId, runner)
      return metadata
    },
    invoke: (invocation, signal) => byActivation.get(invocation.activationId)!.invoke(invocation, signal),
    release: (activationId) => {
      const runner = byActivation.get(activationId)
      byActivation.delete(activationId)
      return runner === undefined ? Promise.resolve() : runner.release(activationId)
    }
  }
}
