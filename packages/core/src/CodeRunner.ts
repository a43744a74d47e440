/**
 * Runs one version of a code package: activation (module-level code runs now, so load errors
 * surface at create/update time) and invocation. The trusted layer loads JS/TS in this process;
 * `@jitbox/sandbox` provides subprocess layers.
 *
 * `invoke` returns a Promise rather than an Effect on purpose: it sits on the dispatch hot path,
 * where one `Effect.runPromise` (about 5 µs here) would cost ten times the rest of a dispatch.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type { JsonSchema } from "./JsonSchema.js"
import type { CodeLanguage, ToolExecutionMode } from "./ToolOrigin.js"

/** One immutable version of a code package, ready to activate. @since 0.1.0 @category models */
export interface CodeSource {
  readonly toolName: string
  readonly versionId: string
  readonly language: CodeLanguage
  /** The exported name (JS/TS, Python) of the `tool(...)` value; ignored for Bash. */
  readonly entrypoint: string
  /** Path of the entry file inside `files`: `index.ts`, `index.js`, `__init__.py` or `main.sh`. */
  readonly entryFile: string
  /** Every file of the package, entry file included, keyed by its relative path. */
  readonly files: Readonly<Record<string, string>>
}

/** What the module's `tool(...)` value declares. Bash tools declare nothing: the request supplies it. @since 0.1.0 @category models */
export interface CodeToolMetadata {
  readonly description?: string | undefined
  readonly guidelines?: string | undefined
  readonly parameters?: JsonSchema | undefined
  readonly executionMode?: ToolExecutionMode | undefined
}

/** The invocation a handler runs in; `callTool` dispatches a nested call with this invocation as parent. @since 0.1.0 @category models */
export interface InvocationContext {
  readonly callId: string
  readonly toolName: string
  readonly depth: number
  readonly signal: AbortSignal | undefined
  readonly callTool: (name: string, args?: unknown) => Promise<unknown>
}

/** An activated version. @since 0.1.0 @category models */
export interface ActivatedCode {
  readonly metadata: CodeToolMetadata
  /** Returns the result or a promise of it; rejects with what the tool threw. */
  readonly invoke: (args: unknown, context: InvocationContext) => unknown
  /** Releases what activation holds (a warm child process, a module registration). Never rejects. */
  readonly dispose: () => Promise<void>
}

/** @since 0.1.0 @category models */
export interface CodeRunnerShape {
  readonly languages: ReadonlyArray<CodeLanguage>
  /** Rejects with a `PackageError` when the package does not compile, link or load. */
  readonly activate: (source: CodeSource) => Promise<ActivatedCode>
}

/** @since 0.1.0 @category tags */
export class CodeRunner extends Context.Tag("@jitbox/core/CodeRunner")<CodeRunner, CodeRunnerShape>() {}
