/**
 * The four registries of a harness (KIND-03): base (application-owned), code, text and
 * management, keyed by name, with the unload marks. It only holds entries and answers their
 * state; building versions and deciding changes happen elsewhere.
 */
import type { CodeRunnerShape } from "../CodeRunner.js"
import { NameConflict, ToolNotFound } from "../HarnessError.js"
import type { JsonSchema } from "../JsonSchema.js"
import * as NearestNames from "../NearestNames.js"
import type * as Paging from "../Paging.js"
import type { ToolDefinition } from "../Tool.js"
import type { ToolState } from "../ToolCatalog.js"
import type { ToolAck, ToolExample } from "../ToolRequest.js"
import type { CodeLanguage, ToolExecutionMode } from "../ToolOrigin.js"
import type * as Validator from "../Validator.js"
import type { LiveCall } from "./liveCall.js"

export interface BaseEntry {
  readonly origin: "base"
  readonly name: string
  binding: ToolDefinition | undefined
}

/** One immutable version of a code tool, activated in `runner` as `activationId`. */
export interface CodeVersion {
  readonly versionId: string
  readonly activationId: string
  readonly runner: CodeRunnerShape
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
  /** What the request itself declared (for languages whose code cannot declare it). */
  readonly declared: { readonly description?: string; readonly guidelines?: string; readonly parameters?: JsonSchema }
  /** The examples this version passed when it was built (none for a snapshot's tool or an update that sent none). */
  readonly examples: ReadonlyArray<ToolExample>
  inflight: number
  retired: boolean
}

export interface CodeEntry {
  readonly origin: "code"
  readonly name: string
  version: CodeVersion
}

export interface TextVersion {
  readonly versionId: string
  readonly description: string
  readonly body: Paging.PageableText
}

export interface TextEntry {
  readonly origin: "text"
  readonly name: string
  version: TextVersion
}

export interface ManagementEntry {
  readonly origin: "management"
  readonly name: string
  readonly validate: Validator.Validate
  readonly handler: (args: any, call: LiveCall) => unknown
}

export type Entry = BaseEntry | CodeEntry | TextEntry | ManagementEntry

export type UserEntry = Exclude<Entry, ManagementEntry>

/** Releases an activation once its last running call ended (UNL-08). */
export const release = (version: CodeVersion): Promise<void> => version.runner.release(version.activationId)

export class Registry {
  readonly entries = new Map<string, Entry>()
  /** Unload marks of code, text and base tools; base marks are enforced only when base tools are managed. */
  readonly unloaded = new Set<string>()

  constructor(readonly manageBaseTools: boolean) {}

  get(name: string): Entry | undefined {
    return this.entries.get(name)
  }

  /** The error for a name this registry does not hold, suggesting the nearest names it does. */
  notFound(name: string): ToolNotFound {
    const suggestions = NearestNames.nearest(name, this.entries.keys())
    return new ToolNotFound(suggestions.length === 0 ? { name } : { name, suggestions })
  }

  /** A tool the application or the model may name: anything but a management tool. */
  user(name: string): UserEntry {
    const entry = this.entries.get(name)
    if (entry === undefined) throw this.notFound(name)
    if (entry.origin === "management") throw new NameConflict({ name, reason: "Reserved" })
    return entry
  }

  addManagement(entry: ManagementEntry): void {
    this.entries.set(entry.name, entry)
  }

  /** Binds (or rebinds) an application base tool; a name that is code, text or management is refused. */
  bindBase(name: string, binding: ToolDefinition | undefined): void {
    const existing = this.entries.get(name)
    if (existing !== undefined && existing.origin !== "base") {
      throw new NameConflict({ name, reason: existing.origin === "management" ? "Reserved" : "Exists" })
    }
    if (existing === undefined) this.entries.set(name, { origin: "base", name, binding })
    else existing.binding = binding
  }

  /** Throws `NameConflict` when `name` is taken. */
  checkNewName(name: string): void {
    const existing = this.entries.get(name)
    if (existing === undefined) return
    throw new NameConflict({
      name,
      reason: existing.origin === "management" ? "Reserved" : existing.origin === "base" ? "BaseTool" : "Exists"
    })
  }

  install(entry: CodeEntry | TextEntry): void {
    this.entries.set(entry.name, entry)
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

  ack(entry: Entry): ToolAck {
    return { name: entry.name, status: this.state(entry) === "unloaded" ? "unloaded" : "loaded" }
  }

  /** Every activation held, current or retired-but-running, for a terminal release. */
  codeVersions(): Array<CodeVersion> {
    const versions: Array<CodeVersion> = []
    for (const entry of this.entries.values()) if (entry.origin === "code") versions.push(entry.version)
    return versions
  }
}

/** A replaced version is released once its running invocations finish (UNL-08). */
export const retire = (version: CodeVersion): void => {
  version.retired = true
  if (version.inflight === 0) void release(version)
}
