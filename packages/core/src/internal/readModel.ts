/**
 * Reading the toolbox: the catalog, complete definitions and sources, the tools a model can call,
 * and the profile and error reports. Used by the harness's application API and by the management
 * tools alike, so both read one model.
 */
import type { ErrorCache } from "../ErrorCache.js"
import { InvalidToolRequest } from "../HarnessError.js"
import type { JitHarnessProfile, ToolStats } from "../JitHarnessProfile.js"
import * as Measure from "../Measure.js"
import type { Profiler } from "../Profiler.js"
import * as TextReader from "../TextReader.js"
import type { CatalogEntry, ModelToolDefinition, ToolDefinitionInfo, ToolSource } from "../ToolCatalog.js"
import type { ToolErrorReport } from "../ToolErrorReport.js"
import type { ToolOrigin } from "../ToolOrigin.js"
import type { Registry, UserEntry } from "./registry.js"

export interface PageOptions {
  readonly offset?: number | undefined
  readonly limit?: number | undefined
}

const pageRange = (options: PageOptions, fallback: number) => {
  const offset = options.offset ?? 0
  const limit = options.limit ?? fallback
  if (!Number.isInteger(offset) || offset < 0) throw new InvalidToolRequest({ reason: "OutOfRange", detail: "offset must be an integer ≥ 0" })
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new InvalidToolRequest({ reason: "OutOfRange", detail: "limit must be an integer from 1 to 1000" })
  }
  return { offset, limit }
}

export class ReadModel {
  constructor(
    private readonly registry: Registry,
    readonly profiler: Profiler,
    readonly errors: ErrorCache
  ) {}

  private catalogEntry(entry: UserEntry): CatalogEntry {
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

  /** Complete metadata and schema (APP-02). */
  definition(name: string): ToolDefinitionInfo {
    const entry = this.registry.user(name)
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
        return { ...base, guidelines: TextReader.guidelines, parameters: TextReader.parameters, execution_mode: "parallel", version_id: entry.version.versionId }
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
    const entry = this.registry.user(name)
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

  /** Schema, guidelines and source together (APP-04). */
  inspectTool(name: string): ToolDefinitionInfo & { readonly source: ToolSource | null } {
    const entry = this.registry.user(name)
    return { ...this.definition(name), source: entry.origin === "base" ? null : this.source(name) }
  }

  originOf(name: string): ToolOrigin {
    return this.registry.get(name)?.origin ?? "unknown"
  }

  /** Call records (newest first) and aggregates; `limit` 1–1,000, default 100 (D-16). */
  profile(name: string | undefined, options: PageOptions): JitHarnessProfile {
    const { limit, offset } = pageRange(options, 100)
    return this.profiler.report(name, offset, limit, name === undefined ? undefined : this.originOf(name))
  }

  profileStats(name: string): ToolStats {
    return this.profiler.stats(name, this.originOf(name))
  }

  /** Complete retained error messages, newest occurrence first; `limit` 1–1,000, default 5 (ERR-21). */
  toolErrors(name: string | undefined, options: PageOptions): ToolErrorReport {
    const { limit, offset } = pageRange(options, 5)
    return this.errors.report(name, offset, limit)
  }

  /** The tools the model can call now (loaded, bound), without the management tools. */
  modelTools(): Array<ModelToolDefinition> {
    const out: Array<ModelToolDefinition> = []
    for (const entry of this.registry.entries.values()) {
      if (entry.origin === "management" || this.registry.state(entry) !== "loaded") continue
      switch (entry.origin) {
        case "base": {
          const binding = entry.binding!
          out.push({
            name: entry.name,
            description: binding.description,
            parameters: binding.parameters,
            executionMode: binding.executionMode,
            origin: "base",
            guidelines: binding.guidelines
          })
          break
        }
        case "code": {
          const v = entry.version
          out.push({ name: entry.name, description: v.description, parameters: v.parameters, executionMode: v.executionMode, origin: "code", guidelines: v.guidelines })
          break
        }
        case "text":
          out.push({
            name: entry.name,
            description: entry.version.description,
            parameters: TextReader.parameters,
            executionMode: "parallel",
            origin: "text",
            guidelines: null
          })
          break
      }
    }
    return out
  }
}
