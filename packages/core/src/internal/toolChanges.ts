/**
 * Every change to the toolbox: create, update, unload, load, and installing a snapshot's tools.
 * A decoded request is normalised here (kind, language, entry point, package files), one new
 * version is built, and only then does it replace the installed one, so a failure leaves the
 * previous version in place (UNL-09, PKG-09).
 *
 * Changes run one at a time in the order they were asked for (MGMT-15). A change asked for by a
 * call that itself runs inside a change (an example of a version being made calls unload_tool,
 * say) is part of that change: queued behind its own parent it would wait forever.
 */
import * as CodePackage from "../CodePackage.js"
import { InvalidToolRequest, NameConflict, PackageError } from "../HarnessError.js"
import type { JitHarnessSnapshot } from "../JitHarnessSnapshot.js"
import { checkName } from "../Tool.js"
import type { CreateToolRequest, ToolAck, UpdateToolRequest } from "../ToolRequest.js"
import type { CodeVersion, CodeEntry, Registry, TextEntry } from "./registry.js"
import { release, retire } from "./registry.js"
import type { VersionBuilder } from "./versionBuilder.js"

const codeFieldsForbiddenOnText = ["files", "remove", "entrypoint", "language", "guidelines", "parameters", "examples", "duration"] as const

const declaredOf = (request: {
  readonly description?: string | undefined
  readonly guidelines?: string | undefined
  readonly parameters?: { readonly [key: string]: unknown } | undefined
}): CodeVersion["declared"] => ({
  ...(request.description === undefined ? {} : { description: request.description }),
  ...(request.guidelines === undefined ? {} : { guidelines: request.guidelines }),
  ...(request.parameters === undefined ? {} : { parameters: request.parameters })
})

const isEmpty = (value: object | undefined): boolean => value === undefined || Object.keys(value).length === 0

export class ToolChanges {
  private queue: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly registry: Registry,
    private readonly builder: VersionBuilder
  ) {}

  /** Runs `change` after every change asked for before it; `withinChange` runs it at once, as part of the change in progress. */
  serially<A>(change: () => A | Promise<A>, withinChange = false): Promise<A> {
    if (withinChange) return Promise.resolve().then(change)
    const next = this.queue.then(change, change)
    this.queue = next.catch(() => undefined)
    return next
  }

  async create(request: CreateToolRequest): Promise<ToolAck> {
    const registry = this.registry
    if ((request.kind ?? "code") === "text") {
      for (const field of ["entrypoint", ...codeFieldsForbiddenOnText] as const) {
        if ((request as unknown as Record<string, unknown>)[field] !== undefined) {
          throw new InvalidToolRequest({ reason: "FieldNotAllowed", detail: `a text tool takes no ${field}` })
        }
      }
      if (request.name === undefined) throw new InvalidToolRequest({ reason: "MissingField", detail: "a text tool needs a name" })
      const name = checkName(request.name)
      if (request.description === undefined || request.description.trim() === "") {
        throw new InvalidToolRequest({ name, reason: "MissingField", detail: "a text tool needs a short description" })
      }
      registry.checkNewName(name)
      const entry: TextEntry = { origin: "text", name, version: this.builder.text(name, request.source, request.description) }
      registry.install(entry)
      return registry.ack(entry)
    }
    const language = request.language ?? "typescript"
    const entrypoint = request.entrypoint ?? (language === "bash" ? "main" : undefined)
    if (entrypoint === undefined) {
      throw new InvalidToolRequest({ reason: "MissingField", detail: "a code tool needs entrypoint, the exported name of its tool(...)" })
    }
    const name = checkName(request.name ?? entrypoint)
    registry.checkNewName(name)
    const entryFile = CodePackage.entryFile(language)
    if (request.files !== undefined && entryFile in request.files) {
      throw new PackageError({ name, reason: "InvalidPath", path: entryFile, detail: `${entryFile} is the entry module: send it as source` })
    }
    const files = CodePackage.check(name, language, { ...request.files, [entryFile]: request.source })
    const version = await this.builder.code({
      name,
      language,
      entrypoint,
      files,
      declared: declaredOf(request),
      examples: request.examples,
      repair: false,
      duration: request.duration ?? "short",
      languageAssumed: request.language === undefined
    })
    registry.install({ origin: "code", name, version })
    return { name, status: "loaded" }
  }

  async update(request: UpdateToolRequest): Promise<ToolAck> {
    const name = request.name
    const entry = this.registry.get(name)
    if (entry === undefined) throw this.registry.notFound(name)
    if (entry.origin === "management") throw new NameConflict({ name, reason: "Reserved" })
    if (entry.origin === "base") throw new NameConflict({ name, reason: "BaseTool" })
    if (request.kind !== undefined && request.kind !== entry.origin) {
      throw new InvalidToolRequest({ name, reason: "KindChange", detail: `'${name}' is a ${entry.origin} tool; its kind cannot change` })
    }
    return entry.origin === "text" ? this.updateText(entry, request) : await this.updateCode(entry, request)
  }

  private updateText(entry: TextEntry, request: UpdateToolRequest): ToolAck {
    const name = entry.name
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
    entry.version = this.builder.text(name, markdown ?? entry.version.body.text, request.description ?? entry.version.description)
    return this.registry.ack(entry)
  }

  private async updateCode(entry: CodeEntry, request: UpdateToolRequest): Promise<ToolAck> {
    const name = entry.name
    if (request.markdown !== undefined) {
      throw new InvalidToolRequest({ name, reason: "FieldNotAllowed", detail: `'${name}' is a code tool: send source or files, not markdown` })
    }
    const current = entry.version
    if (request.language !== undefined && request.language !== current.language) {
      throw new InvalidToolRequest({
        name,
        reason: "FieldNotAllowed",
        detail: `'${name}' is written in ${current.language}; create a new tool for another language`
      })
    }
    const changes = [request.source, request.entrypoint, request.description, request.guidelines, request.parameters, request.examples, request.duration]
    if (changes.every((change) => change === undefined) && isEmpty(request.files) && isEmpty(request.remove)) {
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
        throw new InvalidToolRequest({
          name,
          reason: "FieldNotAllowed",
          detail: `send the entry module as source or as files["${current.entryFile}"], not both`
        })
      }
      Object.assign(files, request.files)
    }
    if (request.source !== undefined) files[current.entryFile] = request.source
    const version = await this.builder.code({
      name,
      language: current.language,
      entrypoint: request.entrypoint ?? current.entrypoint,
      files: CodePackage.check(name, current.language, files),
      declared: { ...current.declared, ...declaredOf(request) },
      examples: request.examples,
      repair: true,
      duration: request.duration ?? current.duration
    })
    entry.version = version
    retire(current)
    return this.registry.ack(entry)
  }

  setLoaded(name: string, loaded: boolean): ToolAck {
    const entry = this.registry.get(name)
    if (entry === undefined) throw this.registry.notFound(name)
    if (entry.origin === "management") throw new NameConflict({ name, reason: "Reserved" })
    if (entry.origin === "base" && !this.registry.manageBaseTools) {
      throw new InvalidToolRequest({
        name,
        reason: "BaseToolNotManaged",
        detail: `'${name}' is an application base tool and base tools are not managed by this harness`
      })
    }
    if (loaded) this.registry.unloaded.delete(name)
    else this.registry.unloaded.add(name)
    return { name, status: loaded ? "loaded" : "unloaded" }
  }

  /**
   * Activates every tool of a snapshot (unloaded ones too, UNL-15) without installing any: the
   * caller installs them all at once, or none if one fails.
   */
  async build(snapshot: JitHarnessSnapshot): Promise<Array<CodeEntry | TextEntry>> {
    const built: Array<CodeEntry | TextEntry> = []
    try {
      for (const record of snapshot.tools) {
        const entryFile = CodePackage.entryFile(record.language)
        const version = await this.builder.code({
          name: record.name,
          language: record.language,
          entrypoint: record.entrypoint,
          files: CodePackage.check(record.name, record.language, { ...record.files, [entryFile]: record.source }),
          declared: declaredOf(record),
          examples: record.examples,
          repair: null,
          duration: record.duration ?? "short"
        })
        built.push({ origin: "code", name: record.name, version })
      }
      for (const record of snapshot.text_tools) {
        built.push({ origin: "text", name: record.name, version: this.builder.text(record.name, record.markdown, record.description) })
      }
      return built
    } catch (cause) {
      await releaseAll(built)
      throw cause
    }
  }
}

/** Releases what `build` activated, when it will not be installed. */
export const releaseAll = (built: ReadonlyArray<CodeEntry | TextEntry>): Promise<unknown> =>
  Promise.all(built.map((entry) => entry.origin === "code" ? release(entry.version) : undefined))
