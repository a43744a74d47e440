/**
 * The harness: one session's toolbox and the one dispatch path every call goes through, whether
 * the model asked for it, the application called it, or a code tool composed it:
 * lookup → middleware → reject checks → argument validation → handler → result, with exactly one
 * profile record per attempt, an error-cache entry per failure, and an event pair per dispatched
 * code, text or management call.
 *
 * The dispatch path is plain Promise code on purpose (a runtime hop per call would cost more than
 * the whole dispatch); the Effect API in `Harness.ts` wraps it.
 *
 * @since 0.1.0
 */
import { AsyncLocalStorage } from "node:async_hooks"
import { randomBytes } from "node:crypto"
import type { CodeRunnerShape, InvocationContext } from "./CodeRunner.js"
import { ErrorCache } from "./ErrorCache.js"
import { EventFeed, type SubscribeOptions, type Subscription } from "./EventFeed.js"
import {
  ConfigError,
  InvalidToolRequest,
  NameConflict,
  ToolCancelled,
  ToolNotFound,
  ToolRejected,
  ValidationError
} from "./HarnessError.js"
import { type InspectionToolExposure, InspectionToolExposure as Exposure } from "./InspectionToolExposure.js"
import type { JitHarnessProfile, ToolStats } from "./JitHarnessProfile.js"
import type { JsonSchema } from "./JsonSchema.js"
import * as ManagementHandlers from "./ManagementHandlers.js"
import * as Measure from "./Measure.js"
import { Profiler } from "./Profiler.js"
import * as TextReader from "./TextReader.js"
import * as ThrownValue from "./ThrownValue.js"
import { checkName, isToolDefinition, type ToolDefinition } from "./Tool.js"
import type { ToolErrorReport } from "./ToolErrorReport.js"
import type { CodeLanguage, ToolOrigin } from "./ToolOrigin.js"
import { type CodeVersion, type Entry, ToolRegistry, type ToolState } from "./ToolRegistry.js"
import type { CreateToolRequest, ToolAck, UpdateToolRequest } from "./ToolRequest.js"
import * as TrustedCodeRunner from "./TrustedCodeRunner.js"

/** @since 0.1.0 @category models */
export type BaseTools = ReadonlyArray<ToolDefinition> | Readonly<Record<string, ToolDefinition>>

/** A call as middleware sees it. @since 0.1.0 @category models */
export interface MiddlewareCall {
  readonly name: string
  readonly args: unknown
  readonly callId: string
  readonly origin: ToolOrigin
  readonly depth: number
  readonly callerToolName: string | null
}

/**
 * Surrounds dispatch (reject checks, validation, handler). Calling `next` runs the attempt; not
 * calling it short-circuits, and then no record is made because the tool never ran (MEAS-11).
 *
 * @since 0.1.0
 * @category models
 */
export type Middleware = (call: MiddlewareCall, next: () => Promise<unknown>) => Promise<unknown>

/** @since 0.1.0 @category models */
export interface JitHarnessOptions {
  readonly sessionId?: string | undefined
  /** Application base tools: a list of named definitions or a record keyed by name. */
  readonly tools?: BaseTools | undefined
  readonly manageBaseTools?: boolean | undefined
  readonly maxCallDepth?: number | undefined
  readonly callCapacity?: number | undefined
  readonly errorCapacity?: number | undefined
  readonly errorMessageChars?: number | undefined
  readonly inspectionTools?: InspectionToolExposure | undefined
  /** `trusted` (default) loads JS/TS in this process; `sandboxed` uses only the runners given. */
  readonly executionMode?: "trusted" | "sandboxed" | undefined
  /** Code runners by language; they take precedence over the trusted in-process runner. */
  readonly runners?: ReadonlyArray<CodeRunnerShape> | undefined
  /** Where bare imports of trusted code tools resolve from. */
  readonly moduleRoot?: string | undefined
  readonly middleware?: ReadonlyArray<Middleware> | undefined
}

/** @since 0.1.0 @category models */
export interface CallOptions {
  /** The conversation's tool-call id; a fresh unique id otherwise. */
  readonly callId?: string | undefined
  /** Aborting it cancels the call: the record says `cancelled` and the handler's signal fires. */
  readonly signal?: AbortSignal | undefined
}

/** @since 0.1.0 @category models */
export interface CatalogEntry {
  readonly name: string
  readonly origin: "base" | "code" | "text"
  readonly state: ToolState
  readonly description: string | null
}

/** Complete metadata and schema of a tool (APP-02). @since 0.1.0 @category models */
export interface ToolDefinitionInfo extends CatalogEntry {
  readonly guidelines: string | null
  readonly parameters: JsonSchema | null
  readonly execution_mode: "parallel" | "serial"
  readonly language?: string
  readonly entrypoint?: string
  readonly version_id?: string
  readonly files?: ReadonlyArray<{ readonly path: string; readonly chars: number }>
}

/** The complete retained source of a code or text tool (APP-03). @since 0.1.0 @category models */
export type ToolSource =
  | {
    readonly name: string
    readonly kind: "code"
    readonly language: string
    readonly entrypoint: string
    readonly entry_file: string
    readonly files: Readonly<Record<string, string>>
  }
  | { readonly name: string; readonly kind: "text"; readonly markdown: string }

/** A tool as a model provider receives it. @since 0.1.0 @category models */
export interface ModelToolDefinition {
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema
  readonly executionMode: "parallel" | "serial"
  readonly origin: "base" | "code" | "text" | "management"
  readonly guidelines: string | null
}

const positiveInteger = (option: string, value: number | undefined, fallback: number): number => {
  if (value === undefined) return fallback
  if (!Number.isInteger(value) || value <= 0) {
    throw new ConfigError({ option, detail: `must be a positive integer, got ${String(value)}` })
  }
  return value
}

const pageRange = (offset: number | undefined, limit: number | undefined, fallback: number) => {
  const o = offset ?? 0
  const l = limit ?? fallback
  if (!Number.isInteger(o) || o < 0) throw new InvalidToolRequest({ reason: "OutOfRange", detail: "offset must be an integer ≥ 0" })
  if (!Number.isInteger(l) || l < 1 || l > 1000) {
    throw new InvalidToolRequest({ reason: "OutOfRange", detail: "limit must be an integer from 1 to 1000" })
  }
  return { offset: o, limit: l }
}

const abortedBy = <A>(pending: A | PromiseLike<A>, signal: AbortSignal): Promise<A> =>
  new Promise<A>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    if (signal.aborted) return onAbort()
    signal.addEventListener("abort", onAbort, { once: true })
    Promise.resolve(pending).then(
      (value) => {
        signal.removeEventListener("abort", onAbort)
        resolve(value)
      },
      (error) => {
        signal.removeEventListener("abort", onAbort)
        reject(error)
      }
    )
  })

/**
 * @since 0.1.0
 * @category models
 */
export class JitHarness {
  readonly sessionId: string
  readonly manageBaseTools: boolean
  readonly maxCallDepth: number
  readonly inspectionTools: InspectionToolExposure
  readonly profiler: Profiler
  readonly errors: ErrorCache
  readonly events: EventFeed
  /** @internal */
  readonly registry: ToolRegistry
  private readonly middleware: ReadonlyArray<Middleware>
  private readonly idPrefix = `call_${randomBytes(4).toString("hex")}_`
  private callCounter = 0
  private seq = 0
  private mutations: Promise<unknown> = Promise.resolve()
  private readonly changing = new AsyncLocalStorage<{ active: boolean }>()
  private released = false

  constructor(options: JitHarnessOptions = {}) {
    this.sessionId = options.sessionId ?? "default"
    this.manageBaseTools = options.manageBaseTools ?? true
    this.maxCallDepth = positiveInteger("maxCallDepth", options.maxCallDepth, 32)
    this.profiler = new Profiler(positiveInteger("callCapacity", options.callCapacity, 2_000))
    this.errors = new ErrorCache(
      positiveInteger("errorCapacity", options.errorCapacity, 100),
      positiveInteger("errorMessageChars", options.errorMessageChars, 4_000)
    )
    const exposure = options.inspectionTools ?? Exposure.Deferred
    if (!Object.values(Exposure).includes(exposure)) {
      throw new ConfigError({ option: "inspectionTools", detail: `must be one of ${Object.values(Exposure).join(", ")}` })
    }
    this.inspectionTools = exposure
    const mode = options.executionMode ?? "trusted"
    if (mode !== "trusted" && mode !== "sandboxed") {
      throw new ConfigError({ option: "executionMode", detail: `must be "trusted" or "sandboxed"` })
    }
    this.events = new EventFeed(this.sessionId)
    this.middleware = options.middleware ?? []
    const runners = new Map<CodeLanguage, CodeRunnerShape>()
    if (mode === "trusted") {
      const trusted = TrustedCodeRunner.make({ moduleRoot: options.moduleRoot })
      for (const language of trusted.languages) runners.set(language, trusted)
    }
    for (const runner of options.runners ?? []) for (const language of runner.languages) runners.set(language, runner)
    this.registry = new ToolRegistry(
      this.manageBaseTools,
      runners,
      (name, code, input) =>
        Promise.resolve(code.invoke(input, this.context(this.nextCallId(), name, 1, undefined)))
    )
    for (const entry of ManagementHandlers.make(this)) this.registry.addManagement(entry)
    if (options.tools !== undefined) this.bindBaseTools(options.tools)
  }

  // ---------------------------------------------------------------------------------------------
  // Dispatch

  /**
   * Calls a tool by name through the dispatch path. Rejects with what the tool threw, or with a
   * typed harness error (`ToolNotFound`, `ToolRejected`, `ValidationError`, `ToolCancelled`, ...).
   */
  callTool(name: string, args: unknown = {}, options?: CallOptions): Promise<unknown> {
    return this.dispatch(name, args, options?.callId ?? this.nextCallId(), null, 1, options?.signal)
  }

  /** @internal */
  nextCallId(): string {
    return this.idPrefix + (++this.callCounter).toString(36)
  }

  private dispatch(
    name: string,
    args: unknown,
    callId: string,
    caller: string | null,
    depth: number,
    signal: AbortSignal | undefined
  ): Promise<unknown> {
    const entry = this.registry.entries.get(name)
    if (entry === undefined) return Promise.reject(new ToolNotFound({ name }))
    if (this.middleware.length === 0) return this.attempt(entry, args, callId, caller, depth, signal)
    const call: MiddlewareCall = { name, args, callId, origin: entry.origin, depth, callerToolName: caller }
    const run = (index: number): Promise<unknown> =>
      index === this.middleware.length
        ? this.attempt(entry, args, callId, caller, depth, signal)
        : this.middleware[index]!(call, () => run(index + 1))
    return run(0)
  }

  private context(callId: string, toolName: string, depth: number, signal: AbortSignal | undefined): InvocationContext {
    return {
      callId,
      toolName,
      depth,
      signal,
      callTool: (name: string, args: unknown = {}) => this.dispatch(name, args, this.nextCallId(), toolName, depth + 1, signal)
    }
  }

  private rejection(entry: Entry, depth: number): ToolRejected | undefined {
    const name = entry.name
    if (depth > this.maxCallDepth) {
      return new ToolRejected({
        name,
        reason: "DepthExceeded",
        detail: `calling '${name}' would nest ${depth} calls deep; maxCallDepth is ${this.maxCallDepth}`
      })
    }
    if (entry.origin === "base") {
      if (entry.binding === undefined) {
        return new ToolRejected({
          name,
          reason: "MissingBinding",
          detail: `base tool '${name}' has no binding in this harness; the application must supply it`
        })
      }
      if (!this.manageBaseTools) return undefined
    } else if (entry.origin === "management") {
      return undefined
    }
    if (this.registry.unloaded.size !== 0 && this.registry.unloaded.has(name)) {
      return new ToolRejected({ name, reason: "Unloaded", detail: `tool '${name}' is unloaded; load it with load_tool first` })
    }
    return undefined
  }

  private async attempt(
    entry: Entry,
    args: unknown,
    callId: string,
    caller: string | null,
    depth: number,
    signal: AbortSignal | undefined
  ): Promise<unknown> {
    const seq = ++this.seq
    const started = performance.now()
    const origin = entry.origin
    const recorded = origin !== "base" || this.manageBaseTools
    const rejected = this.rejection(entry, depth)
    if (rejected !== undefined) {
      if (recorded) this.fail(seq, started, entry, args, callId, caller, "rejected", rejected)
      throw rejected
    }
    const emits = origin !== "base" && this.events.active
    if (emits) {
      this.events.emit({
        type: "CUSTOM",
        name: "jit_tool_started",
        payload: { session_id: this.sessionId, tool_call_id: callId, tool_name: entry.name, origin }
      })
    }
    let version: CodeVersion | undefined
    let result: unknown
    try {
      let pending: unknown
      switch (origin) {
        case "base": {
          const binding = entry.binding!
          const problems = binding.validate(args)
          if (problems !== undefined) throw new ValidationError({ name: entry.name, issues: problems })
          pending = binding.handler(args, this.context(callId, entry.name, depth, signal))
          break
        }
        case "code": {
          version = entry.version
          const problems = version.validate(args)
          if (problems !== undefined) throw new ValidationError({ name: entry.name, issues: problems })
          version.inflight++
          pending = version.invoke(args, this.context(callId, entry.name, depth, signal))
          break
        }
        case "text": {
          const problems = TextReader.validate(args)
          if (problems !== undefined) throw new ValidationError({ name: entry.name, issues: problems })
          pending = TextReader.read(entry.name, entry.version.body, args as never)
          break
        }
        case "management": {
          const problems = entry.validate(args)
          if (problems !== undefined) throw new ValidationError({ name: entry.name, issues: problems })
          pending = entry.handler(args, this.context(callId, entry.name, depth, signal))
          break
        }
      }
      result = signal === undefined ? await pending : await abortedBy(pending, signal)
    } catch (thrown) {
      if (signal?.aborted === true) {
        const cancelled = new ToolCancelled({ name: entry.name, callId })
        if (recorded) this.finish(seq, started, entry, args, callId, caller, "cancelled", null, cancelled._tag)
        if (emits) this.completed(entry, callId, false, cancelled._tag)
        throw cancelled
      }
      if (recorded) this.fail(seq, started, entry, args, callId, caller, "failed", thrown)
      if (emits) this.completed(entry, callId, false, ThrownValue.errorType(thrown))
      throw thrown
    } finally {
      if (version !== undefined && --version.inflight === 0 && version.retired) void version.dispose()
    }
    if (recorded) this.finish(seq, started, entry, args, callId, caller, "completed", Measure.output(result), null)
    if (emits) this.completed(entry, callId, true, null)
    return result
  }

  private completed(entry: Entry, callId: string, success: boolean, errorType: string | null): void {
    if (!this.events.active) return
    this.events.emit({
      type: "CUSTOM",
      name: "jit_tool_completed",
      payload: {
        session_id: this.sessionId,
        tool_call_id: callId,
        tool_name: entry.name,
        origin: entry.origin as "code" | "text" | "management",
        success,
        error_type: errorType
      }
    })
  }

  private finish(
    seq: number,
    started: number,
    entry: Entry,
    args: unknown,
    callId: string,
    caller: string | null,
    status: "completed" | "failed" | "cancelled" | "rejected",
    outputChars: number | null,
    errorType: string | null
  ): void {
    const duration = performance.now() - started
    this.profiler.record({
      seq,
      call_id: callId,
      tool_name: entry.name,
      origin: entry.origin,
      status,
      duration_ms: duration,
      input_chars: Measure.input(args),
      output_chars: outputChars,
      caller_tool_name: caller,
      error_type: errorType
    })
  }

  private fail(
    seq: number,
    started: number,
    entry: Entry,
    args: unknown,
    callId: string,
    caller: string | null,
    status: "failed" | "rejected",
    thrown: unknown
  ): void {
    const errorType = ThrownValue.errorType(thrown)
    const message = ThrownValue.message(thrown)
    this.finish(seq, started, entry, args, callId, caller, status, Measure.message(message), errorType)
    this.errors.add({ toolName: entry.name, errorType, status, message, callId, callerToolName: caller })
  }

  // ---------------------------------------------------------------------------------------------
  // Changing the toolbox (application API; the management tools call the same methods)

  /** Runs state changes one at a time, in the order they were asked for (MGMT-15). */
  /** @internal */
  serially<A>(change: () => A | Promise<A>): Promise<A> {
    // A change asked for by a change in progress (an example calling unload_tool, say) is part of
    // it: queued behind its own parent it would wait forever, and so would every later change.
    if (this.changing.getStore()?.active === true) return Promise.resolve().then(change)
    const run = () => {
      const token = { active: true }
      return this.changing.run(token, async () => {
        try {
          return await change()
        } finally {
          token.active = false
        }
      })
    }
    const next = this.mutations.then(run, run)
    this.mutations = next.catch(() => undefined)
    return next
  }

  createTool(request: CreateToolRequest): Promise<ToolAck> {
    return this.serially(() => this.registry.create(request))
  }

  updateTool(request: UpdateToolRequest): Promise<ToolAck> {
    return this.serially(() => this.registry.update(request))
  }

  unloadTool(name: string): Promise<ToolAck> {
    return this.serially(() => this.registry.setLoaded(name, false))
  }

  loadTool(name: string): Promise<ToolAck> {
    return this.serially(() => this.registry.setLoaded(name, true))
  }

  /** Binds application base tools (BASE-02: later registrations are adopted before dispatch). */
  bindBaseTools(tools: BaseTools): void {
    const pairs: Array<[string, ToolDefinition]> = Array.isArray(tools)
      ? (tools as ReadonlyArray<ToolDefinition>).map((definition) => {
        if (!isToolDefinition(definition)) throw new ConfigError({ option: "tools", detail: "every base tool must come from tool(...)" })
        if (definition.name === undefined) throw new ConfigError({ option: "tools", detail: "a base tool in a list needs a name" })
        return [definition.name, definition]
      })
      : Object.entries(tools as Record<string, ToolDefinition>).map(([name, definition]) => {
        if (!isToolDefinition(definition)) throw new ConfigError({ option: "tools", detail: `base tool '${name}' must come from tool(...)` })
        return [checkName(name), definition.name === name ? definition : definition.named(name)]
      })
    for (const [name, definition] of pairs) this.registry.bindBase(name, definition)
  }

  // ---------------------------------------------------------------------------------------------
  // Reading the toolbox (complete, unbudgeted: APP-01..07)

  private catalogEntry(entry: Exclude<Entry, { origin: "management" }>): CatalogEntry {
    return {
      name: entry.name,
      origin: entry.origin,
      state: this.registry.state(entry),
      description: entry.origin === "base" ? entry.binding?.description ?? null : entry.version.description
    }
  }

  /** The complete catalog: base, code and text tools; management tools are never listed (D-09). */
  listTools(): Array<CatalogEntry> {
    const out: Array<CatalogEntry> = []
    for (const entry of this.registry.entries.values()) if (entry.origin !== "management") out.push(this.catalogEntry(entry))
    return out
  }

  private known(name: string): Exclude<Entry, { origin: "management" }> {
    const entry = this.registry.get(name)
    if (entry === undefined) throw new ToolNotFound({ name })
    if (entry.origin === "management") throw new NameConflict({ name, reason: "Reserved" })
    return entry
  }

  /** Complete metadata and schema (APP-02). */
  definition(name: string): ToolDefinitionInfo {
    const entry = this.known(name)
    const base = this.catalogEntry(entry)
    switch (entry.origin) {
      case "base":
        return {
          ...base,
          guidelines: entry.binding?.guidelines ?? null,
          parameters: entry.binding?.parameters ?? null,
          execution_mode: entry.binding?.executionMode ?? "parallel"
        }
      case "text":
        return {
          ...base,
          guidelines: TextReader.guidelines,
          parameters: TextReader.parameters,
          execution_mode: "parallel",
          version_id: entry.version.versionId
        }
      case "code": {
        const version = entry.version
        return {
          ...base,
          guidelines: version.guidelines,
          parameters: version.parameters,
          execution_mode: version.executionMode,
          language: version.language,
          entrypoint: version.entrypoint,
          version_id: version.versionId,
          files: Object.entries(version.files).map(([path, text]) => ({ path, chars: Measure.sourceChars(text) }))
        }
      }
    }
  }

  /** The complete retained source (APP-03); base tools have none. */
  source(name: string): ToolSource {
    const entry = this.known(name)
    switch (entry.origin) {
      case "base":
        throw new InvalidToolRequest({ name, reason: "NoSource", detail: `'${name}' is an application base tool; it has no retained source` })
      case "text":
        return { name, kind: "text", markdown: entry.version.body.text }
      case "code":
        return {
          name,
          kind: "code",
          language: entry.version.language,
          entrypoint: entry.version.entrypoint,
          entry_file: entry.version.entryFile,
          files: entry.version.files
        }
    }
  }

  /** Schema, guidelines and source together (APP-04); the model's inspect_tool never returns source. */
  inspectTool(name: string): ToolDefinitionInfo & { readonly source: ToolSource | null } {
    const entry = this.known(name)
    return { ...this.definition(name), source: entry.origin === "base" ? null : this.source(name) }
  }

  /** Call records (newest first) and aggregates; `limit` 1–1,000, default 100 (D-16). */
  profile(name?: string, options: { readonly offset?: number; readonly limit?: number } = {}): JitHarnessProfile {
    const { limit, offset } = pageRange(options.offset, options.limit, 100)
    return this.profiler.report(name, offset, limit, name === undefined ? undefined : this.originOf(name))
  }

  /** Lifetime aggregates of one tool. */
  profileStats(name: string): ToolStats {
    return this.profiler.stats(name, this.originOf(name))
  }

  /** Complete retained error messages, newest occurrence first; `limit` 1–1,000, default 5 (ERR-21). */
  toolErrors(name?: string, options: { readonly offset?: number; readonly limit?: number } = {}): ToolErrorReport {
    const { limit, offset } = pageRange(options.offset, options.limit, 5)
    return this.errors.report(name, offset, limit)
  }

  private originOf(name: string): ToolOrigin {
    return this.registry.get(name)?.origin ?? "unknown"
  }

  /** Subscribes to `jit_tool_started` / `jit_tool_completed` as an `AsyncIterable`. */
  subscribe(options?: SubscribeOptions): Subscription {
    return this.events.subscribe(options)
  }

  /** The tools the model can call now (loaded, bound), without the management tools. */
  modelTools(): Array<ModelToolDefinition> {
    const out: Array<ModelToolDefinition> = []
    for (const entry of this.registry.entries.values()) {
      if (entry.origin === "management" || this.registry.state(entry) !== "loaded") continue
      switch (entry.origin) {
        case "base": {
          const binding = entry.binding!
          out.push({ name: entry.name, description: binding.description, parameters: binding.parameters, executionMode: binding.executionMode, origin: "base", guidelines: binding.guidelines })
          break
        }
        case "code": {
          const v = entry.version
          out.push({ name: entry.name, description: v.description, parameters: v.parameters, executionMode: v.executionMode, origin: "code", guidelines: v.guidelines })
          break
        }
        case "text":
          out.push({ name: entry.name, description: entry.version.description, parameters: TextReader.parameters, executionMode: "parallel", origin: "text", guidelines: null })
          break
      }
    }
    return out
  }

  /** Releases what the harness holds: activated versions, event subscriptions (forgetSession). */
  async release(): Promise<void> {
    if (this.released) return
    this.released = true
    this.events.closeAll()
    const disposals: Array<Promise<void>> = []
    for (const entry of this.registry.entries.values()) if (entry.origin === "code") disposals.push(entry.version.dispose())
    await Promise.all(disposals)
  }
}
