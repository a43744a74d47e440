/**
 * The harness: one session's toolbox behind a thin facade. It checks the options, wires the
 * parts, and answers the application API by delegating:
 *
 * - calls go through the one dispatch path (`internal/dispatcher.ts`), whoever asks;
 * - changes are decoded by `ToolRequest` and made one at a time (`internal/toolChanges.ts`);
 * - reads come from one read model (`internal/readModel.ts`), which the management tools use too;
 * - snapshots, request bindings, contracts and asynchronous operations each live in their module.
 *
 * Code runs in a `CodeRunner` (trusted in this process by default, or the runners given), budgets
 * come from an `Admission` (local for a policy), time from a `HarnessClock`, and finished records
 * and events can also go to sinks.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { randomBytes } from "node:crypto"
import * as Admission from "./Admission.js"
import * as AsyncInvocations from "./AsyncInvocations.js"
import * as CatalogTools from "./CatalogTools.js"
import type { Call, Middleware } from "./Call.js"
import * as CodeRunner from "./CodeRunner.js"
import { ErrorCache } from "./ErrorCache.js"
import { EventFeed, type SubscribeOptions, type Subscription } from "./EventFeed.js"
import type { EventSinkShape } from "./EventSink.js"
import * as Exposure from "./Exposure.js"
import * as HarnessClock from "./HarnessClock.js"
import { ConfigError, HarnessReleased, PolicyViolation } from "./HarnessError.js"
import { InspectionToolExposure } from "./InspectionToolExposure.js"
import type { JitHarnessProfile, ToolStats } from "./JitHarnessProfile.js"
import * as JitHarnessSnapshot from "./JitHarnessSnapshot.js"
import * as JitPolicy from "./JitPolicy.js"
import type * as ManagementTools from "./ManagementTools.js"
import type { JsonSchema } from "./JsonSchema.js"
import type { ProfileSinkShape } from "./ProfileSink.js"
import { Profiler } from "./Profiler.js"
import type { BaseTools, CallOptions, Session, SessionDefinitions } from "./Session.js"
import * as SharedCatalog from "./SharedCatalog.js"
import type { CatalogEntry, ModelToolDefinition, ToolDefinitionInfo, ToolSource } from "./ToolCatalog.js"
import * as ToolContract from "./ToolContract.js"
import type { ToolErrorReport } from "./ToolErrorReport.js"
import type { CodeLanguage } from "./ToolOrigin.js"
import * as ToolRequest from "./ToolRequest.js"
import * as TrustedCodeRunner from "./TrustedCodeRunner.js"
import * as Validator from "./Validator.js"
import { Dispatcher } from "./internal/dispatcher.js"
import * as CatalogTransfer from "./internal/catalogTransfer.js"
import * as ManagementHandlers from "./internal/managementHandlers.js"
import { type PageOptions, ReadModel } from "./internal/readModel.js"
import { Registry, release as releaseVersion } from "./internal/registry.js"
import { bindings, RequestBindings } from "./internal/requestBindings.js"
import * as Snapshotting from "./internal/snapshotting.js"
import { ToolChanges } from "./internal/toolChanges.js"
import { VersionBuilder } from "./internal/versionBuilder.js"

export type { BaseTools, CallOptions } from "./Session.js"
export type { CatalogEntry, ModelToolDefinition, ToolDefinitionInfo, ToolSource } from "./ToolCatalog.js"
export type { Middleware } from "./Call.js"

/** A call as middleware sees it. @since 0.1.0 @category models */
export type MiddlewareCall = Call

/** How code tools run: in this process, or only in the runners given (sandboxed subprocesses). @since 0.1.0 @category models */
export type CodeExecution = "trusted" | "sandboxed"

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
  /**
   * `trusted` (default) also loads JavaScript and TypeScript in this process; `sandboxed` runs code
   * only in the `runners` given, and needs one for every language the policy allows.
   */
  readonly codeExecution?: CodeExecution | undefined
  /** Code runners, each for its languages; they take precedence over the trusted in-process runner. */
  readonly runners?: ReadonlyArray<CodeRunner.CodeRunnerShape> | undefined
  /** Where bare imports of trusted code tools resolve from. */
  readonly moduleRoot?: string | undefined
  readonly middleware?: ReadonlyArray<Middleware> | undefined
  /**
   * Reference 003's execution policy: languages, budgets of versions, repairs, invocations and
   * concurrency, and the timeouts of code calls. Without one there are no budgets (D-21).
   */
  readonly policy?: JitPolicy.JitPolicyInput | undefined
  /** Where budgets come from instead of a local count of `policy` (a coordinator's lease, say). */
  readonly admission?: Admission.AdmissionShape | undefined
  /** The clock of deadlines and await windows. Default: the system clock. */
  readonly clock?: HarnessClock.HarnessClockShape | undefined
  /** Receives every finished profile record, synchronously. */
  readonly profileSink?: ProfileSinkShape | undefined
  /** Receives every event, synchronously. */
  readonly eventSink?: EventSinkShape | undefined
  /** The namespace's shared catalog this session publishes to and loads from (`SharedCatalog.memory()` in one process). */
  readonly catalog?: SharedCatalog.SharedCatalogShape | undefined
  /** Who this session acts for, recorded in what it publishes. Default: "application". */
  readonly principal?: string | undefined
}

const optionNames: ReadonlySet<string> = new Set<keyof JitHarnessOptions>([
  "sessionId",
  "tools",
  "manageBaseTools",
  "maxCallDepth",
  "callCapacity",
  "errorCapacity",
  "errorMessageChars",
  "inspectionTools",
  "codeExecution",
  "runners",
  "moduleRoot",
  "middleware",
  "policy",
  "admission",
  "clock",
  "profileSink",
  "eventSink",
  "catalog",
  "principal"
])

const positiveInteger = (option: string, value: number | undefined, fallback: number): number => {
  if (value === undefined) return fallback
  if (!Number.isInteger(value) || value <= 0) {
    throw new ConfigError({ option, detail: `must be a positive integer, got ${String(value)}` })
  }
  return value
}

const checkOptionNames = (options: object): void => {
  for (const key of Object.keys(options)) {
    if (optionNames.has(key)) continue
    const hint = key === "executionMode" ? ` (the harness option is codeExecution: "trusted" | "sandboxed")` : ""
    throw new ConfigError({ option: key, detail: `is not an option of JitHarness${hint}; the options are ${Array.from(optionNames).join(", ")}` })
  }
}

/** The code languages a policy language stands for. */
const codeLanguages = (policy: JitPolicy.JitPolicy | undefined): ReadonlyArray<CodeLanguage> =>
  policy === undefined ? [] : JitPolicy.codeLanguages(policy.allowedLanguages)

const runnerFor = (
  mode: CodeExecution,
  options: JitHarnessOptions,
  policy: JitPolicy.JitPolicy | undefined
): CodeRunner.CodeRunnerShape => {
  const runners = [...(options.runners ?? [])]
  if (mode === "trusted") runners.push(TrustedCodeRunner.make({ moduleRoot: options.moduleRoot }))
  else {
    if (runners.length === 0) {
      throw new ConfigError({ option: "codeExecution", detail: `"sandboxed" needs runners: pass a SandboxRunner from @jitbox/sandbox as runners` })
    }
    const served = new Set(runners.flatMap((runner) => runner.languages))
    const missing = codeLanguages(policy).filter((language) => !served.has(language))
    if (missing.length > 0) {
      throw new ConfigError({ option: "runners", detail: `the policy allows ${missing.join(", ")} and no runner given runs it` })
    }
  }
  return CodeRunner.route(runners)
}

/**
 * @since 0.1.0
 * @category models
 */
export class JitHarness implements Session {
  readonly sessionId: string
  readonly manageBaseTools: boolean
  readonly maxCallDepth: number
  readonly inspectionTools: InspectionToolExposure
  readonly codeExecution: CodeExecution
  readonly profiler: Profiler
  readonly errors: ErrorCache
  readonly events: EventFeed
  /** The budgets this harness spends (a policy's local count, or what `admission` gave). */
  readonly admission: Admission.AdmissionShape
  readonly clock: HarnessClock.HarnessClockShape
  private readonly registry: Registry
  private readonly dispatcher: Dispatcher
  private readonly changes: ToolChanges
  private readonly read: ReadModel
  private readonly bindings: RequestBindings
  private readonly runner: CodeRunner.CodeRunnerShape
  private readonly operations: AsyncInvocations.AsyncInvocations | undefined
  private readonly catalog: SharedCatalog.SharedCatalogShape | undefined
  private readonly principal: string
  private readonly catalogTools: ReadonlyArray<CatalogTools.CatalogToolDefinition>
  private readonly unwatchCatalog: (() => void) | undefined
  private activating = false

  constructor(snapshotOrOptions?: JitHarnessSnapshot.JitHarnessSnapshot | JitHarnessOptions, maybeOptions?: JitHarnessOptions) {
    const snapshot = snapshotOrOptions !== undefined && "format_version" in snapshotOrOptions ? snapshotOrOptions : undefined
    const options: JitHarnessOptions = snapshot === undefined ? (snapshotOrOptions as JitHarnessOptions | undefined) ?? {} : maybeOptions ?? {}
    checkOptionNames(options)
    this.sessionId = options.sessionId ?? "default"
    this.manageBaseTools = options.manageBaseTools ?? true
    this.maxCallDepth = positiveInteger("maxCallDepth", options.maxCallDepth, 32)
    const idPrefix = `call_${randomBytes(4).toString("hex")}_`
    const generatedId = (seq: number) => idPrefix + seq.toString(36)
    this.profiler = new Profiler(positiveInteger("callCapacity", options.callCapacity, 2_000), generatedId)
    this.errors = new ErrorCache(
      positiveInteger("errorCapacity", options.errorCapacity, 100),
      positiveInteger("errorMessageChars", options.errorMessageChars, 4_000)
    )
    const exposure = options.inspectionTools ?? InspectionToolExposure.Deferred
    if (!Object.values(InspectionToolExposure).includes(exposure)) {
      throw new ConfigError({ option: "inspectionTools", detail: `must be one of ${Object.values(InspectionToolExposure).join(", ")}` })
    }
    this.inspectionTools = exposure
    const mode = options.codeExecution ?? "trusted"
    if (mode !== "trusted" && mode !== "sandboxed") {
      throw new ConfigError({ option: "codeExecution", detail: `must be "trusted" or "sandboxed"` })
    }
    this.codeExecution = mode
    if (options.admission !== undefined && options.policy !== undefined) {
      throw new ConfigError({ option: "admission", detail: "give a policy or an admission, not both: an admission carries its policy" })
    }
    this.admission = options.admission ??
      (options.policy === undefined ? Admission.unlimited() : Admission.local(JitPolicy.make(options.policy)))
    this.clock = options.clock ?? HarnessClock.system
    this.catalog = options.catalog
    this.principal = options.principal ?? "application"
    this.events = new EventFeed(this.sessionId)
    if (options.eventSink !== undefined) this.events.listen(options.eventSink.emit)
    this.runner = runnerFor(mode, options, this.admission.policy)
    this.registry = new Registry(this.manageBaseTools)
    this.read = new ReadModel(this.registry, this.profiler, this.errors)
    this.dispatcher = new Dispatcher({
      sessionId: this.sessionId,
      generatedId,
      registry: this.registry,
      admission: this.admission,
      clock: this.clock,
      profiler: this.profiler,
      errors: this.errors,
      events: this.events,
      profileSink: options.profileSink,
      middleware: options.middleware ?? [],
      maxCallDepth: this.maxCallDepth
    })
    const dispatcher = this.dispatcher
    const builder = new VersionBuilder(this.runner, dispatcher, this.admission, `${idPrefix}a`, dispatcher.runExample)
    this.changes = new ToolChanges(this.registry, builder)
    this.bindings = new RequestBindings(this.registry, () => dispatcher.epoch++)
    for (const entry of ManagementHandlers.make(this.registry, this.read, this.changes)) this.registry.addManagement(entry)
    const policy = this.admission.policy
    this.operations = policy?.allowAsyncOperations === true ? this.addOperationTools(policy) : undefined
    this.catalogTools = this.catalog === undefined ? [] : CatalogTools.offered(policy?.sharedCatalog ?? "publish")
    if (this.catalogTools.length > 0) this.addCatalogTools()
    this.unwatchCatalog = this.catalog?.watch((entry) => this.revoked(entry))
    if (options.tools !== undefined) this.bindBaseTools(options.tools)
    if (snapshot !== undefined) {
      const activation = Snapshotting.activate(this.registry, this.changes, snapshot)
      dispatcher.activation = activation
      this.activating = true
      activation.then(() => {
        dispatcher.activation = undefined
        this.activating = false
      }, () => {
        this.activating = false
      })
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
    return this.dispatcher.activation ?? Promise.resolve()
  }

  /**
   * Reads answer only from a whole toolbox: while a snapshot activates they fail, telling to await
   * `ready`. After a failed activation they answer from the toolbox as it was, with none of the
   * snapshot's tools (calls keep failing with the activation's error).
   */
  private readable(): void {
    if (!this.activating) return
    throw new JitHarnessSnapshot.SnapshotError({
      reason: "Activation",
      detail: "the harness has not finished activating its snapshot (or failed to); await harness.ready first"
    })
  }

  /** Makes one change after the ones asked for before it, announced as a call of the management tool `toolName` would be. */
  private change<A>(operation: string, toolName: ManagementTools.ManagementToolName, change: () => A | Promise<A>): Promise<A> {
    if (this.dispatcher.released) return Promise.reject(new HarnessReleased({ sessionId: this.sessionId, operation }))
    return this.dispatcher.announced(toolName, () => this.changes.serially(change))
  }

  // ---------------------------------------------------------------------------------------------
  // Calls

  /**
   * Calls a tool by name through the dispatch path. Rejects with what the tool threw, or with a
   * typed harness error (`ToolNotFound`, `ToolRejected`, `ValidationError`, `ToolCancelled`, ...).
   */
  callTool(name: string, args: unknown = {}, options?: CallOptions): Promise<unknown> {
    return this.dispatcher.call(name, args, options?.callId, options?.signal)
  }

  // ---------------------------------------------------------------------------------------------
  // Changing the toolbox (the management tools make the same changes)

  createTool(request: ToolRequest.CreateToolRequest): Promise<ToolRequest.ToolAck> {
    return this.change("createTool", "create_tool", () => this.changes.create(ToolRequest.decodeCreate(request)))
  }

  updateTool(request: ToolRequest.UpdateToolRequest): Promise<ToolRequest.ToolAck> {
    return this.change("updateTool", "update_tool", () => this.changes.update(ToolRequest.decodeUpdate(request)))
  }

  /**
   * Publishes the installed version of code tool `name` to the shared catalog (under `as`, or its
   * name), with the examples it passed, the tools it calls, and what this session measured of it.
   * The entry starts `proposed` unless the catalog approves as published.
   */
  async publishTool(name: string, options: { readonly as?: string | undefined } = {}): Promise<SharedCatalog.PublishedTool> {
    if (this.dispatcher.released) throw new HarnessReleased({ sessionId: this.sessionId, operation: "publishTool" })
    return this.publishing(name, options.as, false)
  }

  /**
   * Installs an approved catalog version (the newest approved one, or `version`) as a code tool of
   * this session, pinned: its package is checked against its version id, the tools it calls must be
   * here, and its examples run here first, charged to this session's budgets like `create_tool`.
   * A code tool of that name here gets it as its next version (`update_tool`). Later catalog
   * changes leave the installed tool as it is.
   */
  loadFromCatalog(
    name: string,
    options: { readonly version?: string | undefined; readonly as?: string | undefined } = {}
  ): Promise<ToolRequest.ToolAck & { readonly version_id: string }> {
    if (this.dispatcher.released) return Promise.reject(new HarnessReleased({ sessionId: this.sessionId, operation: "loadFromCatalog" }))
    return this.dispatcher.announced("load_from_catalog", () => this.installing(name, options.version, options.as, false))
  }

  private async publishing(name: string, as: string | undefined, withinChange: boolean): Promise<SharedCatalog.PublishedTool> {
    const catalog = this.sharedCatalog(name)
    this.readable()
    const publishedName = as ?? name
    const previous = await catalog.entries(publishedName)
    const { entry, pkg } = await this.changes.serially(() =>
      CatalogTransfer.publication(this.registry, this.profiler, name, publishedName, {
        sessionId: this.sessionId,
        principal: this.principal,
        now: this.clock.now()
      }, previous), withinChange)
    return catalog.publish(Schema.decodeUnknownSync(SharedCatalog.PublishedTool)(entry), pkg)
  }

  private async installing(
    name: string,
    version: string | undefined,
    as: string | undefined,
    withinChange: boolean
  ): Promise<ToolRequest.ToolAck & { readonly version_id: string }> {
    const catalog = this.sharedCatalog(name)
    return this.changes.serially(async () => {
      const entry = await catalog.entry(name, version)
      const pkg = Schema.decodeUnknownSync(SharedCatalog.CatalogPackage)(await catalog.package(entry.version_id))
      const change = CatalogTransfer.loading(this.registry, entry, pkg, as)
      const ack = "create" in change ? await this.changes.create(ToolRequest.decodeCreate(change.create)) : await this.changes.update(ToolRequest.decodeUpdate(change.update))
      return { ...ack, version_id: entry.version_id }
    }, withinChange)
  }

  private sharedCatalog(name: string): SharedCatalog.SharedCatalogShape {
    if (this.catalog === undefined) {
      throw new SharedCatalog.CatalogError({ name, reason: "NoCatalog", detail: "this session has no shared catalog (the harness option catalog)" })
    }
    return this.catalog
  }

  unloadTool(name: string): Promise<ToolRequest.ToolAck> {
    return this.change("unloadTool", "unload_tool", () => this.changes.setLoaded(name, false))
  }

  loadTool(name: string): Promise<ToolRequest.ToolAck> {
    return this.change("loadTool", "load_tool", () => this.changes.setLoaded(name, true))
  }

  /**
   * Creates a code tool from a reference-003 contract (v1 or v2), or, with v2 `replacesToolId`,
   * replaces the tool whose current version has that id (a repair). Answers the tool's name and
   * its new version id, the `tool_id` (D-03).
   */
  createToolFromContract(
    input: unknown,
    options: { readonly contractVersion?: 1 | 2; readonly name?: string } = {}
  ): Promise<ToolRequest.ToolAck & { readonly tool_id: string }> {
    const registry = this.registry
    const replaces = options.contractVersion === 2 && typeof input === "object" && input !== null && "replacesToolId" in input
    return this.change("createToolFromContract", replaces ? "update_tool" : "create_tool", () =>
      ToolContract.create({
        create: (request) => this.changes.create(ToolRequest.decodeCreate(request)),
        update: (request) => this.changes.update(ToolRequest.decodeUpdate(request)),
        toolWithVersion: (versionId) => {
          for (const entry of registry.entries.values()) {
            if (entry.origin === "code" && entry.version.versionId === versionId) return { name: entry.name, language: entry.version.language }
          }
          return undefined
        },
        currentVersionId: (name) => {
          const entry = registry.user(name)
          return entry.origin === "code" ? entry.version.versionId : ""
        }
      }, input, options))
  }

  /** Binds application base tools (BASE-02: later registrations are adopted before dispatch). */
  bindBaseTools(tools: BaseTools): void {
    for (const [name, definition] of bindings(tools)) this.registry.bindBase(name, definition)
  }

  // ---------------------------------------------------------------------------------------------
  // Request lifecycle (LIFE-01..05)

  /** Whether a request is attached. */
  get active(): boolean {
    return this.bindings.active
  }

  /** Binds one request and its base tools until `detach`; attaching while one is attached throws (LIFE-04). */
  attach(request: object, tools?: BaseTools): void {
    this.bindings.attach(request, tools)
  }

  /** Releases `request` and its bindings; detaching an older request is ignored (LIFE-05). */
  detach(request: object): void {
    this.bindings.detach(request)
  }

  // ---------------------------------------------------------------------------------------------
  // Reading the toolbox (complete, unbudgeted: APP-01..07)

  /** The complete catalog: base, code and text tools; management tools are never listed (D-09). */
  listTools(): Array<CatalogEntry> {
    this.readable()
    return this.read.listTools()
  }

  /** Complete metadata and schema (APP-02). */
  definition(name: string): ToolDefinitionInfo {
    this.readable()
    return this.read.definition(name)
  }

  /** The complete retained source (APP-03); base tools have none. */
  source(name: string): ToolSource {
    this.readable()
    return this.read.source(name)
  }

  /** Schema, guidelines and source together (APP-04); the model's inspect_tool never returns source. */
  inspectTool(name: string): ToolDefinitionInfo & { readonly source: ToolSource | null } {
    this.readable()
    return this.read.inspectTool(name)
  }

  /** Call records (newest first) and aggregates; `limit` 1–1,000, default 100 (D-16). */
  profile(name?: string, options: PageOptions = {}): JitHarnessProfile {
    return this.read.profile(name, options)
  }

  /** Lifetime aggregates of one tool. */
  profileStats(name: string): ToolStats {
    return this.read.profileStats(name)
  }

  /** Complete retained error messages, newest occurrence first; `limit` 1–1,000, default 5 (ERR-21). */
  toolErrors(name?: string, options: PageOptions = {}): ToolErrorReport {
    return this.read.toolErrors(name, options)
  }

  /** The tools the model can call now (loaded, bound), without the management tools. */
  modelTools(): Array<ModelToolDefinition> {
    this.readable()
    return this.read.modelTools()
  }

  /** What to offer a model speaking `protocol`: the instruction block, then its callable tools and the exposed management tools. */
  definitions(protocol: Exposure.ModelProtocol): SessionDefinitions {
    this.readable()
    const exposure = Exposure.exposureFor(this.inspectionTools, protocol)
    return {
      instructions: exposure.instructions,
      tools: [
        ...this.read.modelTools().map((tool) => ({
          name: tool.name,
          description: tool.description,
          parameters: tool.parameters,
          deferLoading: false,
          executionMode: tool.executionMode,
          management: false,
          guidelines: tool.guidelines
        })),
        ...[...exposure.tools, ...this.operationTools().map((tool) => ({ ...tool, deferLoading: false }))].map((tool) => ({
          name: tool.name,
          description: tool.description,
          parameters: tool.parameters,
          deferLoading: tool.deferLoading,
          executionMode: "serial" as const,
          management: true,
          guidelines: null
        }))
      ]
    }
  }

  /** Subscribes to `jit_tool_started` / `jit_tool_completed` as an `AsyncIterable`. */
  subscribe(options?: SubscribeOptions): Subscription {
    return this.events.subscribe(options)
  }

  // ---------------------------------------------------------------------------------------------
  // Snapshots

  /** The toolbox as a snapshot: code and text tools, base names and unload marks (SNAP-06/07). */
  snapshot(): JitHarnessSnapshot.JitHarnessSnapshot {
    // after a failed activation too: a snapshot of the toolbox without the snapshot's tools would lose them
    if (this.dispatcher.activation !== undefined) {
      throw new JitHarnessSnapshot.SnapshotError({
        reason: "Activation",
        detail: "the harness has not finished activating its snapshot (or failed to); await harness.ready first"
      })
    }
    return Snapshotting.take(this.registry)
  }

  /** Saves the snapshot atomically; the parent directory must exist (SNAP-04/05). */
  async save(path: string): Promise<void> {
    await this.ready
    await JitHarnessSnapshot.save(this.snapshot(), path)
  }

  // ---------------------------------------------------------------------------------------------
  // Asynchronous operations (D-19): allowed by the policy's allowAsyncOperations

  private asyncOperations(name: string): AsyncInvocations.AsyncInvocations {
    if (this.operations === undefined) {
      throw new PolicyViolation({ name, reason: "AsyncOperationsNotAllowed", detail: "asynchronous operations need a policy with allowAsyncOperations: true" })
    }
    return this.operations
  }

  /** Starts a tool call in the background (or queues it past the concurrency bound); the result waits for `awaitInvocations`. */
  startInvocation(name: string, args: unknown = {}): AsyncInvocations.Started {
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

  /** The asynchronous-operation and shared-catalog tools the model may call, when the policy allows them. */
  operationTools(): ReadonlyArray<{ readonly name: string; readonly description: string; readonly parameters: JsonSchema }> {
    const tools = this.operations === undefined ? [] : AsyncInvocations.tools
    return this.catalogTools.length === 0 ? tools : [...tools, ...this.catalogTools.map(({ description, name, parameters }) => ({ name, description, parameters }))]
  }

  private addOperationTools(policy: JitPolicy.JitPolicy): AsyncInvocations.AsyncInvocations {
    const admission = this.admission
    const operations: AsyncInvocations.AsyncInvocations = new AsyncInvocations.AsyncInvocations(
      { callTool: (name, args, callOptions) => this.callTool(name, args, callOptions) },
      {
        maximumConcurrent: policy.maximumConcurrentInvocations,
        maximumQueued: (): number => Math.max(0, policy.maximumInvocations - admission.usage().invocations),
        maximumWaitSeconds: policy.shortInvocationTimeoutSeconds,
        clock: this.clock
      }
    )
    const handlers = operations.handlers()
    for (const definition of AsyncInvocations.tools) {
      this.registry.addManagement({
        origin: "management",
        name: definition.name,
        validate: Validator.compile(definition.parameters, "draft-07"),
        handler: handlers[definition.name]!
      })
    }
    return operations
  }

  /** Tells this session's subscribers that a catalog version one of its tools runs was revoked. */
  private revoked(entry: SharedCatalog.PublishedTool): void {
    if (entry.status !== "revoked" || this.dispatcher.released) return
    for (const held of this.registry.entries.values()) {
      if (held.origin !== "code" || held.version.versionId !== entry.version_id) continue
      this.events.emit({
        type: "CUSTOM",
        name: "jit_catalog_revoked",
        payload: { session_id: this.sessionId, tool_name: held.name, version_id: entry.version_id, revoked_by: entry.reviewed?.by ?? "unknown" }
      })
    }
  }

  private addCatalogTools(): void {
    const handlers = CatalogTools.handlers({
      catalog: this.catalog!,
      publish: (name, as, withinChange) => this.publishing(name, as, withinChange),
      load: (name, versionId, as, withinChange) => this.installing(name, versionId, as, withinChange)
    })
    for (const definition of this.catalogTools) {
      const handler = handlers[definition.name]
      this.registry.addManagement({
        origin: "management",
        name: definition.name,
        validate: Validator.compile(definition.parameters, "draft-07"),
        handler: (args, call) => handler(args, call.withinChange)
      })
    }
  }

  // ---------------------------------------------------------------------------------------------

  /**
   * Releases what the harness holds: activations, running calls, event subscriptions
   * (forgetSession). Terminal: afterwards every call and change is a `HarnessReleased` error.
   */
  async release(): Promise<void> {
    if (this.dispatcher.released) return
    this.dispatcher.released = true
    this.unwatchCatalog?.()
    this.operations?.release()
    this.dispatcher.cancelAll(new HarnessReleased({ sessionId: this.sessionId, operation: "running" }))
    this.events.closeAll()
    await Promise.all(this.registry.codeVersions().map(releaseVersion))
  }
}
