/**
 * The four registries of a harness (KIND-03): base (application-owned), code, text and
 * management, keyed by name, with the unload marks. Every change to code and text tools goes
 * through here: a request is validated, compiled and activated as one new version, and only then
 * replaces the installed one, so a failure leaves the previous version in place (UNL-09, PKG-09).
 *
 * @since 0.1.0
 */
import { isDeepStrictEqual } from "node:util"
import * as CodePackage from "./CodePackage.js"
import type { ActivatedCode, CodeRunnerShape } from "./CodeRunner.js"
import { InvalidToolRequest, NameConflict, PackageError, ToolNotFound } from "./HarnessError.js"
import type { JsonSchema } from "./JsonSchema.js"
import type { JitHarnessSnapshot } from "./JitHarnessSnapshot.js"
import * as Paging from "./Paging.js"
import type { PolicyBudget } from "./PolicyBudget.js"
import { checkContract, checkName, type ToolDefinition, type ToolHandler } from "./Tool.js"
import type { ToolAck, ToolExample, CreateToolRequest, UpdateToolRequest } from "./ToolRequest.js"
import { type CodeLanguage, CodeLanguages, type ToolExecutionMode } from "./ToolOrigin.js"
import type * as Validator from "./Validator.js"

/** @since 0.1.0 @category models */
export interface BaseEntry {
  readonly origin: "base"
  readonly name: string
  binding: ToolDefinition | undefined
}

/** One immutable version of a code tool. @since 0.1.0 @category models */
export interface CodeVersion {
  readonly versionId: string
  readonly language: CodeLanguage
  readonly entrypoint: string
  readonly entryFile: string
  readonly files: Readonly<Record<string, string>>
  readonly description: string
  readonly guidelines: string
  readonly parameters: JsonSchema
  readonly executionMode: ToolExecutionMode
  /** 003's duration class; `long` calls get the policy's long timeout. */
  readonly duration: "short" | "long"
  readonly validate: Validator.Validate
  readonly invoke: ActivatedCode["invoke"]
  readonly dispose: ActivatedCode["dispose"]
  /** What the request itself declared (for languages whose code cannot declare it). */
  readonly declared: { readonly description?: string; readonly guidelines?: string; readonly parameters?: JsonSchema }
  inflight: number
  retired: boolean
}

/** @since 0.1.0 @category models */
export interface CodeEntry {
  readonly origin: "code"
  readonly name: string
  version: CodeVersion
}

/** @since 0.1.0 @category models */
export interface TextVersion {
  readonly versionId: string
  readonly description: string
  readonly body: Paging.PageableText
}

/** @since 0.1.0 @category models */
export interface TextEntry {
  readonly origin: "text"
  readonly name: string
  version: TextVersion
}

/** @since 0.1.0 @category models */
export interface ManagementEntry {
  readonly origin: "management"
  readonly name: string
  readonly validate: Validator.Validate
  readonly handler: ToolHandler
}

/** @since 0.1.0 @category models */
export type Entry = BaseEntry | CodeEntry | TextEntry | ManagementEntry

/** @since 0.1.0 @category models */
export type ToolState = "loaded" | "unloaded" | "unbound"

/** Runs one example invocation of a freshly activated version (before it is installed). @since 0.1.0 @category models */
export type ExampleInvoker = (name: string, code: ActivatedCode, input: unknown) => Promise<unknown>

const textFieldsForbiddenOnCode = ["markdown"] as const
const codeFieldsForbiddenOnText = ["files", "remove", "entrypoint", "language", "guidelines", "parameters", "examples"] as const

const isLanguage = (u: unknown): u is CodeLanguage => CodeLanguages.includes(u as CodeLanguage)

const sameJson = (actual: unknown, expected: unknown): boolean => {
  try {
    return isDeepStrictEqual(JSON.parse(JSON.stringify(actual) ?? "null"), JSON.parse(JSON.stringify(expected) ?? "null"))
  } catch {
    return false
  }
}

/** @since 0.1.0 @category models */
export class ToolRegistry {
  readonly entries = new Map<string, Entry>()
  /** Unload marks of code, text and base tools; base marks are enforced only when base tools are managed. */
  readonly unloaded = new Set<string>()

  constructor(
    readonly manageBaseTools: boolean,
    private readonly runners: ReadonlyMap<CodeLanguage, CodeRunnerShape>,
    private readonly runExample: ExampleInvoker,
    private readonly budget?: PolicyBudget
  ) {}

  get(name: string): Entry | undefined {
    return this.entries.get(name)
  }

  addManagement(entry: ManagementEntry): void {
    this.entries.set(entry.name, entry)
  }

  /** Binds (or rebinds) application base tools; a name that was code or text is refused. */
  bindBase(name: string, binding: ToolDefinition | undefined): void {
    const existing = this.entries.get(name)
    if (existing !== undefined && existing.origin !== "base") {
      throw new NameConflict({ name, reason: existing.origin === "management" ? "Reserved" : "Exists" })
    }
    if (existing === undefined) this.entries.set(name, { origin: "base", name, binding })
    else existing.binding = binding
  }

  state(entry: Entry): ToolState {
    switch (entry.origin) {
      case "management":
        return "loaded"
      case "base":
        if (entry.binding === undefined) return "unbound"
        return this.manageBaseTools && this.unloaded.has(entry.name) ? "unloaded" : "loaded"
      default:
        return this.unloaded.has(entry.name) ? "unloaded" : "loaded"
    }
  }

  private ack(entry: Entry): ToolAck {
    return { name: entry.name, status: this.state(entry) === "unloaded" ? "unloaded" : "loaded" }
  }

  private checkNewName(name: string): void {
    const existing = this.entries.get(name)
    if (existing === undefined) return
    throw new NameConflict({
      name,
      reason: existing.origin === "management" ? "Reserved" : existing.origin === "base" ? "BaseTool" : "Exists"
    })
  }

  private runnerFor(name: string, language: CodeLanguage): CodeRunnerShape {
    const runner = this.runners.get(language)
    if (runner === undefined) {
      throw new PackageError({ name, reason: "NoRunner", detail: `no runner for ${language} on this host` })
    }
    return runner
  }

  async create(request: CreateToolRequest): Promise<ToolAck> {
    const kind = request.kind ?? "code"
    if (typeof request.source !== "string") {
      throw new InvalidToolRequest({ reason: "MissingField", detail: "create_tool needs source" })
    }
    if (kind === "text") {
      for (const field of ["entrypoint", ...codeFieldsForbiddenOnText] as const) {
        if ((request as unknown as Record<string, unknown>)[field] !== undefined) {
          throw new InvalidToolRequest({ reason: "FieldNotAllowed", detail: `a text tool takes no ${field}` })
        }
      }
      if (request.name === undefined) throw new InvalidToolRequest({ reason: "MissingField", detail: "a text tool needs a name" })
      const name = checkName(request.name)
      if (typeof request.description !== "string" || request.description.trim() === "") {
        throw new InvalidToolRequest({ name, reason: "MissingField", detail: "a text tool needs a short description" })
      }
      this.checkNewName(name)
      const version = this.textVersion(name, request.source, request.description)
      const entry: TextEntry = { origin: "text", name, version }
      this.entries.set(name, entry)
      return this.ack(entry)
    }
    if (kind !== "code") {
      throw new InvalidToolRequest({ reason: "FieldNotAllowed", detail: `kind must be "code" or "text", not ${JSON.stringify(kind)}` })
    }
    const language = request.language ?? "typescript"
    if (!isLanguage(language)) {
      throw new InvalidToolRequest({ reason: "FieldNotAllowed", detail: `language must be one of ${CodeLanguages.join(", ")}` })
    }
    const entrypoint = request.entrypoint ?? (language === "bash" ? "main" : undefined)
    if (entrypoint === undefined) {
      throw new InvalidToolRequest({ reason: "MissingField", detail: "a code tool needs entrypoint, the exported name of its tool(...)" })
    }
    const name = checkName(request.name ?? entrypoint)
    this.checkNewName(name)
    const entryFile = CodePackage.entryFile(language)
    if (request.files !== undefined && entryFile in request.files) {
      throw new PackageError({ name, reason: "InvalidPath", path: entryFile, detail: `${entryFile} is the entry module: send it as source` })
    }
    const files = CodePackage.check(name, language, { ...request.files, [entryFile]: request.source })
    const version = await this.codeVersion(name, language, entrypoint, files, declaredOf(request), request.examples, false, request.duration)
    this.entries.set(name, { origin: "code", name, version })
    return { name, status: "loaded" }
  }

  async update(request: UpdateToolRequest): Promise<ToolAck> {
    const name = request.name
    const entry = this.entries.get(name)
    if (entry === undefined) throw new ToolNotFound({ name })
    if (entry.origin === "management") throw new NameConflict({ name, reason: "Reserved" })
    if (entry.origin === "base") throw new NameConflict({ name, reason: "BaseTool" })
    if (request.kind !== undefined && request.kind !== entry.origin) {
      throw new InvalidToolRequest({ name, reason: "KindChange", detail: `'${name}' is a ${entry.origin} tool; its kind cannot change` })
    }
    if (entry.origin === "text") {
      for (const field of codeFieldsForbiddenOnText) {
        if (request[field] !== undefined) {
          throw new InvalidToolRequest({ name, reason: "FieldNotAllowed", detail: `'${name}' is a text tool: ${field} does not apply` })
        }
      }
      if (request.markdown !== undefined && request.source !== undefined && request.markdown !== request.source) {
        throw new InvalidToolRequest({ name, reason: "FieldNotAllowed", detail: "send the workflow as markdown or source, not both" })
      }
      const markdown = request.markdown ?? request.source
      if (markdown === undefined && request.description === undefined) {
        throw new InvalidToolRequest({ name, reason: "MissingField", detail: "nothing to update: send markdown or description" })
      }
      if (request.description !== undefined && request.description.trim() === "") {
        throw new InvalidToolRequest({ name, reason: "MissingField", detail: "description must not be empty" })
      }
      entry.version = this.textVersion(name, markdown ?? entry.version.body.text, request.description ?? entry.version.description)
      return this.ack(entry)
    }
    for (const field of textFieldsForbiddenOnCode) {
      if (request[field] !== undefined) {
        throw new InvalidToolRequest({ name, reason: "FieldNotAllowed", detail: `'${name}' is a code tool: send source or files, not ${field}` })
      }
    }
    const current = entry.version
    if (request.language !== undefined && request.language !== current.language) {
      throw new InvalidToolRequest({ name, reason: "FieldNotAllowed", detail: `'${name}' is written in ${current.language}; create a new tool for another language` })
    }
    const changes = [request.source, request.files, request.remove, request.entrypoint, request.description, request.guidelines, request.parameters, request.examples]
    if (changes.every((change) => change === undefined)) {
      throw new InvalidToolRequest({ name, reason: "MissingField", detail: "nothing to update: send source, files, remove or entrypoint" })
    }
    const files: Record<string, string> = { ...current.files }
    for (const path of request.remove ?? []) {
      if (path === current.entryFile) {
        throw new InvalidToolRequest({ name, reason: "FieldNotAllowed", detail: `the entry module ${path} cannot be removed` })
      }
      if (!(path in files)) throw new InvalidToolRequest({ name, reason: "UnknownPath", detail: `'${name}' has no file ${path}` })
      delete files[path]
    }
    if (request.files !== undefined) {
      if (request.source !== undefined && current.entryFile in request.files) {
        throw new InvalidToolRequest({ name, reason: "FieldNotAllowed", detail: `send the entry module as source or as files["${current.entryFile}"], not both` })
      }
      Object.assign(files, request.files)
    }
    if (request.source !== undefined) files[current.entryFile] = request.source
    const checked = CodePackage.check(name, current.language, files)
    const declared = {
      ...current.declared,
      ...declaredOf(request)
    }
    const version = await this.codeVersion(
      name,
      current.language,
      request.entrypoint ?? current.entrypoint,
      checked,
      declared,
      request.examples,
      true,
      request.duration ?? current.duration
    )
    entry.version = version
    this.retire(current)
    return this.ack(entry)
  }

  /**
   * Activates every tool of a snapshot (unloaded ones too, UNL-15) without installing any: the
   * caller installs them all at once, or none if one fails.
   */
  async restore(snapshot: JitHarnessSnapshot): Promise<Array<CodeEntry | TextEntry>> {
    const built: Array<CodeEntry | TextEntry> = []
    try {
      for (const record of snapshot.tools) {
        const entryFile = CodePackage.entryFile(record.language)
        const files = CodePackage.check(record.name, record.language, { ...record.files, [entryFile]: record.source })
        const declared = declaredOf(record)
        const version = await this.codeVersion(record.name, record.language, record.entrypoint, files, declared, undefined, null, record.duration)
        built.push({ origin: "code", name: record.name, version })
      }
      for (const record of snapshot.text_tools) {
        built.push({ origin: "text", name: record.name, version: this.textVersion(record.name, record.markdown, record.description) })
      }
      return built
    } catch (cause) {
      await Promise.all(built.map((entry) => entry.origin === "code" ? entry.version.dispose() : undefined))
      throw cause
    }
  }

  /** A replaced version is disposed once its running invocations finish (UNL-08). */
  retire(version: CodeVersion): void {
    version.retired = true
    if (version.inflight === 0) void version.dispose()
  }

  setLoaded(name: string, loaded: boolean): ToolAck {
    const entry = this.entries.get(name)
    if (entry === undefined) throw new ToolNotFound({ name })
    if (entry.origin === "management") throw new NameConflict({ name, reason: "Reserved" })
    if (entry.origin === "base" && !this.manageBaseTools) {
      throw new InvalidToolRequest({
        name,
        reason: "BaseToolNotManaged",
        detail: `'${name}' is an application base tool and base tools are not managed by this harness`
      })
    }
    if (loaded) this.unloaded.delete(name)
    else this.unloaded.add(name)
    return { name, status: loaded ? "loaded" : "unloaded" }
  }

  private textVersion(name: string, markdown: string, description: string): TextVersion {
    if (markdown.length > CodePackage.maxFileChars && Paging.pageable(markdown).totalChars > CodePackage.maxFileChars) {
      throw new PackageError({ name, reason: "FileTooLarge", detail: `a text tool holds at most ${CodePackage.maxFileChars} characters` })
    }
    return {
      versionId: CodePackage.versionId({ kind: "text", files: { "SKILL.md": markdown }, description }),
      description,
      body: Paging.pageable(markdown)
    }
  }

  /** Activates a new version and runs its examples; nothing is installed here. */
  async codeVersion(
    name: string,
    language: CodeLanguage,
    entrypoint: string,
    files: Readonly<Record<string, string>>,
    declared: CodeVersion["declared"],
    examples: ReadonlyArray<ToolExample> | undefined,
    /** Whether the version replaces another (a repair); `null` for a snapshot restore, which spends nothing. */
    repair: boolean | null,
    duration: "short" | "long" = "short"
  ): Promise<CodeVersion> {
    const budget = repair === null ? undefined : this.budget
    if (budget !== undefined) {
      budget.checkDuration(name, duration)
      budget.checkLanguage(name, language)
      budget.checkVersion(name, repair === true, examples?.length ?? 0)
    }
    const runner = this.runnerFor(name, language)
    const entryFile = CodePackage.entryFile(language)
    const versionId = CodePackage.versionId({ kind: "code", language, entrypoint, files, ...declared })
    const code = await runner.activate({ toolName: name, versionId, language, entrypoint, entryFile, files })
    try {
      const description = code.metadata.description ?? declared.description
      const guidelines = code.metadata.guidelines ?? declared.guidelines
      const { parameters, validate } = checkContract({
        description,
        guidelines,
        parameters: code.metadata.parameters ?? declared.parameters
      })
      for (const [index, example] of (examples ?? []).entries()) {
        const problems = validate(example.input)
        if (problems !== undefined) {
          throw new PackageError({ name, reason: "ExampleFailed", detail: `example ${index + 1}: invalid input: ${problems}` })
        }
        let actual: unknown
        budget?.trySpendInvocation()
        try {
          actual = await this.runExample(name, code, example.input)
        } catch (cause) {
          const detail = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)
          throw new PackageError({ name, reason: "ExampleFailed", detail: `example ${index + 1} threw ${detail}` })
        }
        if (!sameJson(actual, example.expected_output)) {
          throw new PackageError({
            name,
            reason: "ExampleFailed",
            detail: `example ${index + 1} returned ${JSON.stringify(actual)}, expected ${JSON.stringify(example.expected_output)}`
          })
        }
      }
      budget?.commitVersion(repair === true)
      return {
        versionId,
        language,
        entrypoint,
        entryFile,
        files,
        description: description!,
        guidelines: guidelines!,
        parameters,
        executionMode: code.metadata.executionMode ?? "parallel",
        duration,
        validate,
        invoke: code.invoke,
        dispose: code.dispose,
        declared,
        inflight: 0,
        retired: false
      }
    } catch (cause) {
      await code.dispose()
      throw cause
    }
  }
}

const declaredOf = (request: {
  readonly description?: string | undefined
  readonly guidelines?: string | undefined
  readonly parameters?: { readonly [key: string]: unknown } | undefined
}): CodeVersion["declared"] => ({
  ...(request.description === undefined ? {} : { description: request.description }),
  ...(request.guidelines === undefined ? {} : { guidelines: request.guidelines }),
  ...(request.parameters === undefined ? {} : { parameters: request.parameters })
})
