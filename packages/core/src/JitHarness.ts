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
import { randomBytes } from "node:crypto"
import * as AsyncInvocations from "./AsyncInvocations.js"
import type { CodeRunnerShape, InvocationContext } from "./CodeRunner.js"
import { ErrorCache } from "./ErrorCache.js"
import { EventFeed, type SubscribeOptions, type Subscription } from "./EventFeed.js"
import {
  ConfigError,
  InvalidToolRequest,
  NameConflict,
  PolicyViolation,
  ToolCancelled,
  ToolNotFound,
  ToolRejected,
  ToolTimeout,
  ValidationError
} from "./HarnessError.js"
import { type InspectionToolExposure, InspectionToolExposure as Exposure } from "./InspectionToolExposure.js"
import * as JitHarnessSnapshot from "./JitHarnessSnapshot.js"
import * as JitPolicy from "./JitPolicy.js"
import type { JitHarnessProfile, ToolStats } from "./JitHarnessProfile.js"
import type { JsonSchema } from "./JsonSchema.js"
import * as ManagementHandlers from "./ManagementHandlers.js"
import * as Measure from "./Measure.js"
import { PolicyBudget } from "./PolicyBudget.js"
import { Profiler } from "./Profiler.js"
import * as TextReader from "./TextReader.js"
import * as ThrownValue from "./ThrownValue.js"
import { checkName, isToolDefinition, type ToolDefinition } from "./Tool.js"
import type { ToolErrorReport } from "./ToolErrorReport.js"
import type { CodeLanguage, ToolOrigin } from "./ToolOrigin.js"
import { type CodeVersion, type Entry, ToolRegistry, type ToolState } from "./ToolRegistry.js"
import type { CreateToolRequest, ToolAck, UpdateToolRequest } from "./ToolRequest.js"
import * as ToolContract from "./ToolContract.js"
import * as TrustedCodeRunner from "./TrustedCodeRunner.js"
import * as Validator from "./Validator.js"

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
  /**
   * Reference 003's execution policy: languages, budgets of versions, repairs, invocations and
   * concurrency, and the short timeout of code calls. Without one there are no budgets (D-21).
   */
  readonly policy?: JitPolicy.JitPolicyInput | undefined
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

/** The context a handler runs in; `callTool` is built only when a handler asks for it. */
class Invocation implements InvocationContext {
  constructor(
    private readonly harness: JitHarness,
    private readonly seq: number,
    private readonly givenId: string | undefined,
    readonly toolName: string,
    readonly depth: number,
    readonly signal: AbortSignal | undefined,
    readonly epoch: number,
    /** Whether this invocation runs inside a toolbox change (an example of a version being made). */
    readonly withinChange: boolean
  ) {}

  get callId(): string {
    return this.harness.callIdOf(this.seq, this.givenId)
  }

  get callTool(): (name: string, args?: unknown) => Promise<unknown> {
    return (name, args = {}) => this.harness.callNested(this, name, args)
  }
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
  private operations: AsyncInvocations.AsyncInvocations | undefined
  /** The policy's budgets, when the harness has a policy. */
  readonly budget: PolicyBudget | undefined
  private readonly idPrefix = `call_${randomBytes(4).toString("hex")}_`
  private seq = 0
  private mutations: Promise<unknown> = Promise.resolve()
  private released = false
  private activation: Promise<void> | undefined
  private attachedRequest: object | undefined
  private requestBindings: Array<readonly [string, ToolDefinition | undefined]> = []
  /** Increases when a request detaches; contexts of an older epoch are stale (LIFE-07). */
  private epoch = 0

  constructor(snapshotOrOptions?: JitHarnessSnapshot.JitHarnessSnapshot | JitHarnessOptions, maybeOptions?: JitHarnessOptions) {
    const snapshot = snapshotOrOptions !== undefined && "format_version" in snapshotOrOptions ? snapshotOrOptions : undefined
    const options: JitHarnessOptions = snapshot === undefined ? (snapshotOrOptions as JitHarnessOptions | undefined) ?? {} : maybeOptions ?? {}
    this.sessionId = options.sessionId ?? "default"
    this.manageBaseTools = options.manageBaseTools ?? true
    this.maxCallDepth = positiveInteger("maxCallDepth", options.maxCallDepth, 32)
    this.profiler = new Profiler(positiveInteger("callCapacity", options.callCapacity, 2_000), (seq) => this.generatedId(seq))
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
    this.budget = options.policy === undefined ? undefined : new PolicyBudget(JitPolicy.make(options.policy))
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
        Promise.resolve(code.invoke(input, this.context(++this.seq, undefined, name, 1, undefined, true))),
      this.budget
    )
    for (const entry of ManagementHandlers.make(this)) this.registry.addManagement(entry)
    const policy = this.budget?.policy
    if (policy?.allowAsyncOperations === true) {
      const operations = new AsyncInvocations.AsyncInvocations(
        { callTool: (name, args, options) => this.callTool(name, args, options) },
        policy.maximumConcurrentInvocations,
        policy.shortInvocationTimeoutSeconds
      )
      this.operations = operations
      const handlers: Record<string, (args: any) => unknown> = {
        start_invocation: (args: { name: string; arguments?: unknown }) => operations.start(args.name, args.arguments ?? {}),
        await_invocations: async (args: { invocation_ids: ReadonlyArray<string>; timeout_seconds?: number }) =>
          AsyncInvocations.budgeted(await operations.await(args.invocation_ids, args.timeout_seconds ?? 0)),
        cancel_invocation: (args: { invocation_id: string }) => operations.cancel(args.invocation_id)
      }
      for (const definition of AsyncInvocations.tools) {
        this.registry.addManagement({
          origin: "management",
          name: definition.name,
          validate: Validator.compile(definition.parameters, "draft-07"),
          handler: handlers[definition.name]!
        })
      }
    }
    if (options.tools !== undefined) this.bindBaseTools(options.tools)
    if (snapshot !== undefined) {
      const activation = this.activate(snapshot)
      this.activation = activation
      activation.then(() => {
        this.activation = undefined
      }, () => undefined)
    }
  }

  /**
   * A harness activated from a snapshot (SNAP-13): resolves once every module ran, or rejects with
   * a typed error and leaves nothing half-activated.
   */
  static async fromSnapshot(snapshot: JitHarnessSnapshot.JitHarnessSnapshot, options: JitHarnessOptions = {}): Promise<JitHarness> {
    const harness = new JitHarness(snapshot, options)
    await harness.ready
    return harness
  }

  /** Resolves when snapshot activation is over (at once for a harness built without one). */
  get ready(): Promise<void> {
    return this.activation ?? Promise.resolve()
  }

  private async activate(snapshot: JitHarnessSnapshot.JitHarnessSnapshot): Promise<void> {
    const fail = (detail: string) => new JitHarnessSnapshot.SnapshotError({ reason: "Activation", detail })
    const seen = new Set<string>()
    const taken = (name: string) => this.registry.get(name)?.origin === "base" && !snapshot.base_tools.includes(name)
    for (const name of [...snapshot.tools.map((t) => t.name), ...snapshot.text_tools.map((t) => t.name), ...snapshot.base_tools]) {
      if (seen.has(name)) throw fail(`the name '${name}' appears twice`)
      if (this.registry.get(name)?.origin === "management") throw fail(`'${name}' is a reserved management tool name`)
      if (taken(name)) throw fail(`'${name}' is an application base tool; a snapshot cannot replace it`)
      seen.add(name)
    }
    for (const name of snapshot.unloaded_tools) {
      if (!seen.has(name)) throw fail(`unloaded_tools names '${name}', which is not in the snapshot`)
    }
    const built = await this.registry.restore(snapshot)
    const late = built.find((entry) => taken(entry.name))
    if (late !== undefined) {
      await Promise.all(built.map((entry) => entry.origin === "code" ? entry.version.dispose() : undefined))
      throw fail(`'${late.name}' is an application base tool; a snapshot cannot replace it`)
    }
    for (const name of snapshot.base_tools) if (this.registry.get(name) === undefined) this.registry.bindBase(name, undefined)
    for (const entry of built) this.registry.entries.set(entry.name, entry)
    for (const name of snapshot.unloaded_tools) this.registry.unloaded.add(name)
  }

  /** The toolbox as a snapshot: code and text tools, base names and unload marks (SNAP-06/07). */
  snapshot(): JitHarnessSnapshot.JitHarnessSnapshot {
    if (this.activation !== undefined) {
      throw new JitHarnessSnapshot.SnapshotError({
        reason: "Activation",
        detail: "the harness has not finished activating its snapshot (or failed to); await harness.ready first"
      })
    }
    const tools: Array<JitHarnessSnapshot.CodeToolRecord> = []
    const textTools: Array<JitHarnessSnapshot.TextToolRecord> = []
    const baseTools: Array<string> = []
    for (const entry of this.registry.entries.values()) {
      if (entry.origin === "base") baseTools.push(entry.name)
      else if (entry.origin === "text") {
        textTools.push({ name: entry.name, description: entry.version.description, markdown: entry.version.body.text })
      } else if (entry.origin === "code") {
        const v = entry.version
        const helpers = Object.fromEntries(Object.entries(v.files).filter(([path]) => path !== v.entryFile))
        tools.push({
          name: entry.name,
          language: v.language,
          entrypoint: v.entrypoint,
          source: v.files[v.entryFile]!,
          ...(Object.keys(helpers).length > 0 ? { files: helpers } : {}),
          ...(v.duration === "long" ? { duration: v.duration } : {}),
          ...v.declared
        })
      }
    }
    return {
      format_version: tools.some((tool) => tool.files !== undefined) ? 2 : 1,
      tools,
      text_tools: textTools,
      base_tools: baseTools,
      unloaded_tools: Array.from(this.registry.unloaded).filter((name) => this.registry.get(name) !== undefined).sort()
    }
  }

  /** Saves the snapshot atomically; the parent directory must exist (SNAP-04/05). */
  async save(path: string): Promise<void> {
    await this.ready
    await JitHarnessSnapshot.save(this.snapshot(), path)
  }

  // ---------------------------------------------------------------------------------------------
  // Request lifecycle (LIFE-01..05)

  /** Whether a request is attached. */
  get active(): boolean {
    return this.attachedRequest !== undefined
  }

  /**
   * Binds one request and its base tools. Attaching while a request is attached throws
   * (LIFE-04); the request's tools stay bound until `detach`.
   */
  attach(request: object, tools?: BaseTools): void {
    if (this.attachedRequest !== undefined) {
      throw new InvalidToolRequest({ reason: "FieldNotAllowed", detail: "a request is already attached to this harness" })
    }
    const bindings: Array<readonly [string, ToolDefinition | undefined]> = []
    const added: Array<string> = []
    try {
      for (const [name, definition] of tools === undefined ? [] : this.baseBindings(tools)) {
        const existing = this.registry.get(name)
        const previous = existing?.origin === "base" ? existing.binding : undefined
        this.registry.bindBase(name, definition)
        bindings.push([name, previous])
        if (existing === undefined) added.push(name)
      }
    } catch (cause) {
      // A request whose tools cannot be bound is not attached, and binds nothing.
      for (const [name, previous] of bindings.reverse()) this.registry.bindBase(name, previous)
      for (const name of added) this.registry.entries.delete(name)
      throw cause
    }
    this.attachedRequest = request
    this.requestBindings = bindings
  }

  /** Releases `request` and its bindings; detaching an older request is ignored (LIFE-05). */
  detach(request: object): void {
    if (this.attachedRequest !== request) return
    this.attachedRequest = undefined
    this.epoch++
    for (const [name, previous] of this.requestBindings.reverse()) this.registry.bindBase(name, previous)
    this.requestBindings = []
  }

  // ---------------------------------------------------------------------------------------------
  // Dispatch

  /**
   * Calls a tool by name through the dispatch path. Rejects with what the tool threw, or with a
   * typed harness error (`ToolNotFound`, `ToolRejected`, `ValidationError`, `ToolCancelled`, ...).
   */
  callTool(name: string, args: unknown = {}, options?: CallOptions): Promise<unknown> {
    return this.dispatch(name, args, options?.callId, null, 1, options?.signal)
  }

  /** The id of a call that came without one: unique in this harness, derived from its dispatch sequence. */
  private generatedId(seq: number): string {
    return this.idPrefix + seq.toString(36)
  }

  private dispatch(
    name: string,
    args: unknown,
    callId: string | undefined,
    caller: string | null,
    depth: number,
    signal: AbortSignal | undefined,
    withinChange = false
  ): Promise<unknown> {
    if (this.activation !== undefined) {
      return this.activation.then(() => this.dispatch(name, args, callId, caller, depth, signal, withinChange))
    }
    const entry = this.registry.entries.get(name)
    if (entry === undefined) return Promise.reject(new ToolNotFound({ name }))
    const seq = ++this.seq
    if (this.middleware.length === 0) return this.attempt(entry, args, seq, callId, caller, depth, signal, withinChange)
    const id = callId ?? this.generatedId(seq)
    const call: MiddlewareCall = { name, args, callId: id, origin: entry.origin, depth, callerToolName: caller }
    const run = (index: number): Promise<unknown> =>
      index === this.middleware.length
        ? this.attempt(entry, args, seq, id, caller, depth, signal, withinChange)
        : this.middleware[index]!(call, () => run(index + 1))
    return run(0)
  }

  private context(
    seq: number,
    callId: string | undefined,
    toolName: string,
    depth: number,
    signal: AbortSignal | undefined,
    withinChange: boolean
  ): InvocationContext {
    return new Invocation(this, seq, callId, toolName, depth, signal, this.epoch, withinChange)
  }

  /** @internal */
  callIdOf(seq: number, callId: string | undefined): string {
    return callId ?? this.generatedId(seq)
  }

  /** @internal A nested call made by the invocation `parent`. */
  callNested(parent: Invocation, name: string, args: unknown): Promise<unknown> {
    if (parent.epoch !== this.epoch) {
      return Promise.reject(
        new ToolRejected({
          name,
          reason: "NoActiveInvocation",
          detail: `'${parent.toolName}' called '${name}' through a context of a request that has ended`
        })
      )
    }
    return this.dispatch(name, args, undefined, parent.toolName, parent.depth + 1, parent.signal, parent.withinChange)
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
    if (entry.origin === "code" && this.budget !== undefined && !this.budget.trySpendInvocation()) {
      return new ToolRejected({
        name,
        reason: "BudgetExhausted",
        detail: `the policy's ${this.budget.policy.maximumInvocations} invocations are spent; '${name}' was not run`
      })
    }
    return undefined
  }

  /** A code call under a policy: a concurrency slot, and the short timeout (JT-POL-11/14). */
  private async invokeWithinPolicy(
    budget: PolicyBudget,
    version: CodeVersion,
    args: unknown,
    seq: number,
    callId: string | undefined,
    name: string,
    depth: number,
    signal: AbortSignal | undefined,
    withinChange: boolean
  ): Promise<unknown> {
    const release = await budget.acquire()
    const controller = new AbortController()
    const seconds = budget.timeoutSeconds(version.duration)
    const timeout = new ToolTimeout({ name, seconds })
    const timer = setTimeout(() => controller.abort(timeout), seconds * 1000)
    const forward = () => controller.abort(signal?.reason)
    signal?.addEventListener("abort", forward, { once: true })
    try {
      return await abortedBy(version.invoke(args, this.context(seq, callId, name, depth, controller.signal, withinChange)), controller.signal)
    } finally {
      clearTimeout(timer)
      signal?.removeEventListener("abort", forward)
      release()
    }
  }

  private async attempt(
    entry: Entry,
    args: unknown,
    seq: number,
    callId: string | undefined,
    caller: string | null,
    depth: number,
    signal: AbortSignal | undefined,
    withinChange: boolean
  ): Promise<unknown> {
    const started = performance.now()
    const origin = entry.origin
    const recorded = origin !== "base" || this.manageBaseTools
    const rejected = this.rejection(entry, depth)
    if (rejected !== undefined) {
      if (recorded) this.fail(seq, started, entry, args, callId, caller, "rejected", rejected)
      throw rejected
    }
    const emits = origin !== "base" && this.events.active
    const eventId = emits ? this.callIdOf(seq, callId) : ""
    if (emits) {
      this.events.emit({
        type: "CUSTOM",
        name: "jit_tool_started",
        payload: { session_id: this.sessionId, tool_call_id: eventId, tool_name: entry.name, origin }
      })
    }
    let version: CodeVersion | undefined
    let result: unknown
    try {
      const validate = origin === "base"
        ? entry.binding!.validate
        : origin === "code"
        ? entry.version.validate
        : origin === "text"
        ? TextReader.validate
        : entry.validate
      const problems = validate(args)
      if (problems !== undefined) throw new ValidationError({ name: entry.name, issues: problems })
      let pending: unknown
      switch (origin) {
        case "base":
          pending = entry.binding!.handler(args, this.context(seq, callId, entry.name, depth, signal, withinChange))
          break
        case "code":
          version = entry.version
          version.inflight++
          pending = this.budget === undefined
            ? version.invoke(args, this.context(seq, callId, entry.name, depth, signal, withinChange))
            : this.invokeWithinPolicy(this.budget, version, args, seq, callId, entry.name, depth, signal, withinChange)
          break
        case "text":
          pending = TextReader.read(entry.name, entry.version.body, args as never)
          break
        case "management":
          pending = entry.handler(args, this.context(seq, callId, entry.name, depth, signal, withinChange))
          break
      }
      result = signal === undefined ? await pending : await abortedBy(pending, signal)
    } catch (thrown) {
      if (signal?.aborted === true) {
        const cancelled = new ToolCancelled({ name: entry.name, callId: this.callIdOf(seq, callId) })
        if (recorded) this.finish(seq, started, entry, args, callId, caller, "cancelled", null, cancelled._tag)
        if (emits) this.completed(entry, eventId, false, cancelled._tag)
        throw cancelled
      }
      if (recorded) this.fail(seq, started, entry, args, callId, caller, "failed", thrown)
      if (emits) this.completed(entry, eventId, false, ThrownValue.errorType(thrown))
      throw thrown
    } finally {
      if (version !== undefined && --version.inflight === 0 && version.retired) void version.dispose()
    }
    if (recorded) this.finish(seq, started, entry, args, callId, caller, "completed", Measure.output(result), null)
    if (emits) this.completed(entry, eventId, true, null)
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
    callId: string | undefined,
    caller: string | null,
    status: "completed" | "failed" | "cancelled" | "rejected",
    outputChars: number | null,
    errorType: string | null
  ): void {
    const duration = performance.now() - started
    this.profiler.add(seq, callId, entry.name, entry.origin, status, duration, Measure.input(args), outputChars, caller, errorType)
  }

  private fail(
    seq: number,
    started: number,
    entry: Entry,
    args: unknown,
    callId: string | undefined,
    caller: string | null,
    status: "failed" | "rejected",
    thrown: unknown
  ): void {
    const errorType = ThrownValue.errorType(thrown)
    const message = ThrownValue.message(thrown)
    this.finish(seq, started, entry, args, callId, caller, status, Measure.message(message), errorType)
    this.errors.add({ toolName: entry.name, errorType, status, message, callId: this.callIdOf(seq, callId), callerToolName: caller })
  }

  // ---------------------------------------------------------------------------------------------
  // Changing the toolbox (application API; the management tools call the same methods)

  /** Runs state changes one at a time, in the order they were asked for (MGMT-15). */
  /** @internal */
  serially<A>(change: () => A | Promise<A>): Promise<A> {
    const run = () => change()
    const next = this.mutations.then(run, run)
    this.mutations = next.catch(() => undefined)
    return next
  }

  /**
   * A change asked for by a tool invocation. One that runs inside a change in progress (an example
   * of a version being created calls unload_tool, say) is part of it: queued behind its own parent
   * it would wait forever, and so would every later change.
   * @internal
   */
  changeFrom<A>(context: InvocationContext, change: () => A | Promise<A>): Promise<A> {
    return (context as Invocation).withinChange ? Promise.resolve().then(change) : this.serially(change)
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

  /**
   * Creates a code tool from a reference-003 contract (v1 or v2), or, with v2 `replacesToolId`,
   * replaces the tool whose current version has that id (a repair). Answers the tool's name and
   * its new version id, the `tool_id` (D-03).
   */
  createToolFromContract(
    input: unknown,
    options: { readonly contractVersion?: 1 | 2; readonly name?: string } = {}
  ): Promise<ToolAck & { readonly tool_id: string }> {
    return this.serially(async () => {
      const contract = ToolContract.decode(options.contractVersion ?? 1, input)
      const language = ToolContract.languageOf(contract)
      if (ToolContract.isV2(contract)) {
        const validate = Validator.compile(contract.outputSchema, "draft-07")
        contract.examples.forEach((example, index) => {
          const problems = validate(example.expectedOutput)
          if (problems !== undefined) {
            throw new InvalidToolRequest({ reason: "FieldNotAllowed", detail: `examples.${index}.expectedOutput does not match outputSchema: ${problems}` })
          }
        })
      }
      const replaces = ToolContract.isV2(contract) ? contract.replacesToolId : undefined
      let ack: ToolAck
      if (replaces !== undefined) {
        const replaced = Array.from(this.registry.entries.values()).find(
          (entry): entry is Extract<Entry, { origin: "code" }> => entry.origin === "code" && entry.version.versionId === replaces
        )
        if (replaced === undefined) {
          throw new InvalidToolRequest({ reason: "UnknownPath", detail: `no current tool version has the id ${replaces}` })
        }
        if (replaced.version.language !== language) {
          throw new InvalidToolRequest({ name: replaced.name, reason: "FieldNotAllowed", detail: "a replacement keeps the language of the tool it replaces" })
        }
        const request = ToolContract.toCreateRequest(contract, replaced.name)
        ack = await this.registry.update({
          name: replaced.name,
          source: request.source,
          entrypoint: request.entrypoint,
          ...(request.description === undefined ? {} : { description: request.description, guidelines: request.guidelines, parameters: request.parameters }),
          ...(request.examples === undefined ? {} : { examples: request.examples }),
          ...(request.duration === undefined ? {} : { duration: request.duration })
        })
      } else {
        ack = await this.registry.create(ToolContract.toCreateRequest(contract, options.name ?? ToolContract.defaultName(contract)))
      }
      const entry = this.registry.get(ack.name) as Extract<Entry, { origin: "code" }>
      return { ...ack, tool_id: entry.version.versionId }
    })
  }

  /** Binds application base tools (BASE-02: later registrations are adopted before dispatch). */
  bindBaseTools(tools: BaseTools): void {
    for (const [name, definition] of this.baseBindings(tools)) this.registry.bindBase(name, definition)
  }

  private baseBindings(tools: BaseTools): Array<[string, ToolDefinition]> {
    return Array.isArray(tools)
      ? (tools as ReadonlyArray<ToolDefinition>).map((definition) => {
        if (!isToolDefinition(definition)) throw new ConfigError({ option: "tools", detail: "every base tool must come from tool(...)" })
        if (definition.name === undefined) throw new ConfigError({ option: "tools", detail: "a base tool in a list needs a name" })
        return [definition.name, definition]
      })
      : Object.entries(tools as Record<string, ToolDefinition>).map(([name, definition]) => {
        if (!isToolDefinition(definition)) throw new ConfigError({ option: "tools", detail: `base tool '${name}' must come from tool(...)` })
        return [checkName(name), definition.name === name ? definition : definition.named(name)]
      })
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

  // ---------------------------------------------------------------------------------------------
  // Asynchronous operations (D-19): allowed by the policy's allowAsyncOperations

  private asyncOperations(name: string): AsyncInvocations.AsyncInvocations {
    if (this.operations === undefined) {
      throw new PolicyViolation({
        name,
        reason: "AsyncOperationsNotAllowed",
        detail: "asynchronous operations need a policy with allowAsyncOperations: true"
      })
    }
    return this.operations
  }

  /** Starts a tool call in the background; the result waits for `awaitInvocations`. */
  startInvocation(name: string, args: unknown = {}): { readonly invocation_id: string } {
    return this.asyncOperations(name).start(name, args)
  }

  /** Waits up to `timeoutSeconds` for 1–16 invocations; finished results are handed over once. */
  awaitInvocations(ids: ReadonlyArray<string>, timeoutSeconds = 0): Promise<AsyncInvocations.AwaitResult> {
    return this.asyncOperations("await_invocations").await(ids, timeoutSeconds)
  }

  /** Cancels an invocation; idempotent. */
  cancelInvocation(id: string): { readonly invocation_id: string; readonly status: string } {
    return this.asyncOperations("cancel_invocation").cancel(id)
  }

  /** The asynchronous-operation tools the model may call, when the policy allows them. */
  operationTools(): ReadonlyArray<{ readonly name: string; readonly description: string; readonly parameters: JsonSchema }> {
    return this.operations === undefined ? [] : AsyncInvocations.tools
  }

  /** Releases what the harness holds: activated versions, event subscriptions (forgetSession). */
  async release(): Promise<void> {
    if (this.released) return
    this.released = true
    this.operations?.release()
    this.events.closeAll()
    const disposals: Array<Promise<void>> = []
    for (const entry of this.registry.entries.values()) if (entry.origin === "code") disposals.push(entry.version.dispose())
    await Promise.all(disposals)
  }
}
