/**
 * The model's side of the namespace's shared catalog, offered only to a session with a catalog
 * whose policy's `sharedCatalog` allows it: `search_catalog` and `read_catalog_source` (within the
 * same response budget and exact paging as the inspection tools), `load_from_catalog` (`load` and
 * above) and `publish_tool` (`publish`). A session without them sends the model exactly what it
 * sent before the catalog existed.
 *
 * @since 0.1.0
 */
import * as CodePoints from "./CodePoints.js"
import { InvalidToolRequest } from "./HarnessError.js"
import type { SharedCatalogAccess } from "./JitPolicy.js"
import type { JsonSchema } from "./JsonSchema.js"
import * as Paging from "./Paging.js"
import type * as SharedCatalog from "./SharedCatalog.js"
import type { ToolAck } from "./ToolRequest.js"

/** @since 0.1.0 @category models */
export interface CatalogToolDefinition {
  readonly name: "search_catalog" | "read_catalog_source" | "load_from_catalog" | "publish_tool"
  readonly description: string
  readonly parameters: JsonSchema
  /** The least `sharedCatalog` level that offers it. */
  readonly level: "load" | "publish"
}

/** What the handlers need of the harness. @since 0.1.0 @category models */
export interface CatalogAccess {
  readonly catalog: SharedCatalog.SharedCatalogShape
  readonly publish: (name: string, as: string | undefined, withinChange: boolean) => Promise<SharedCatalog.PublishedTool>
  readonly load: (name: string, versionId: string | undefined, as: string | undefined, withinChange: boolean) => Promise<ToolAck & { readonly version_id: string }>
}

const descriptionPreviewChars = 200

const string = { type: "string" }
const page = { offset: { type: "integer", minimum: 0 }, limit: { type: "integer", minimum: 1, maximum: 100, default: 10 } }

/** @since 0.1.0 @category constants */
export const tools: ReadonlyArray<CatalogToolDefinition> = [
  {
    name: "search_catalog",
    level: "load",
    description:
      "Search the tools other sessions published (words in name, description, guidelines; all must match). Approved versions unless status is any. Shows each version's id, language, dependencies and measured calls, failures, p50/p99 ms.",
    parameters: {
      type: "object",
      properties: { query: string, status: { type: "string", enum: ["approved", "any"], default: "approved" }, ...page }
    }
  },
  {
    name: "read_catalog_source",
    level: "load",
    description: "Read a published version's files in pages; follow next_offset.",
    parameters: {
      type: "object",
      properties: { name: string, version_id: string, path: string, offset: { type: "integer", minimum: 0 }, max_chars: { type: "integer", minimum: 1, maximum: 4000, default: 2000 } },
      required: ["name", "version_id"]
    }
  },
  {
    name: "load_from_catalog",
    level: "load",
    description:
      "Install an approved catalog version as your tool, pinned (the newest approved unless version_id). Its examples run first and it is charged like create_tool; the tools it calls must be here. Later catalog changes do not touch it.",
    parameters: { type: "object", properties: { name: string, version_id: string, as: string }, required: ["name"] }
  },
  {
    name: "publish_tool",
    level: "publish",
    description: "Publish your code tool's current version (it needs examples) to the catalog for other sessions, as proposed until approved.",
    parameters: { type: "object", properties: { name: string, as: string }, required: ["name"] }
  }
]

/** The definitions a session at `level` offers. @since 0.1.0 @category getters */
export const offered = (level: SharedCatalogAccess): ReadonlyArray<CatalogToolDefinition> =>
  level === "off" ? [] : tools.filter((tool) => level === "publish" || tool.level === "load")

const summary = (entry: SharedCatalog.PublishedTool) => ({
  name: entry.name,
  version_id: entry.version_id,
  status: entry.status,
  description: CodePoints.preview(entry.description, descriptionPreviewChars).text,
  language: entry.language,
  dependencies: entry.dependencies,
  examples: entry.examples.length,
  calls: entry.measurements.calls,
  failures: entry.measurements.failures,
  p50_ms: entry.measurements.p50_ms,
  p99_ms: entry.measurements.p99_ms,
  published_by: entry.provenance.principal,
  updated_from: entry.provenance.updated_from
})

const matches = (entry: SharedCatalog.PublishedTool, words: ReadonlyArray<string>): boolean => {
  const text = `${entry.name} ${entry.description} ${entry.guidelines}`.toLowerCase()
  return words.every((word) => text.includes(word))
}

interface SearchArgs {
  readonly query?: string
  readonly status?: "approved" | "any"
  readonly offset?: number
  readonly limit?: number
}

const search = async (catalog: SharedCatalog.SharedCatalogShape, { limit = 10, offset = 0, query = "", status = "approved" }: SearchArgs) => {
  const words = query.toLowerCase().split(/\s+/).filter((word) => word.length > 0)
  const found = (await catalog.entries()).filter((entry) => (status === "any" || entry.status === "approved") && matches(entry, words))
  return Paging.pageItems(found, offset, limit, (items, nextOffset) => ({
    tools: items.map(summary),
    total: found.length,
    next_offset: nextOffset
  }))
}

interface SourceArgs {
  readonly name: string
  readonly version_id: string
  readonly path?: string
  readonly offset?: number
  readonly max_chars?: number
}

const readSource = async (catalog: SharedCatalog.SharedCatalogShape, { max_chars = 2_000, name, offset = 0, path, version_id }: SourceArgs) => {
  const entry = await catalog.entry(name, version_id)
  const pkg = await catalog.package(entry.version_id)
  const file = path ?? Object.keys(pkg.files)[0]!
  const text = pkg.files[file]
  if (text === undefined) {
    throw new InvalidToolRequest({ name, reason: "UnknownPath", detail: `version ${version_id} has no file ${file}; its files are ${Object.keys(pkg.files).join(", ")}` })
  }
  return Paging.page(Paging.pageable(text), offset, max_chars, (page) => ({ name, version_id, path: file, files: Object.keys(pkg.files), ...page }), name)
}

/** The handlers of the catalog tools, by name. @since 0.1.0 @category constructors */
export const handlers = (access: CatalogAccess): Record<CatalogToolDefinition["name"], (args: any, withinChange: boolean) => Promise<unknown>> => ({
  search_catalog: (args: SearchArgs) => search(access.catalog, args),
  read_catalog_source: (args: SourceArgs) => readSource(access.catalog, args),
  load_from_catalog: (args: { name: string; version_id?: string; as?: string }, withinChange) =>
    access.load(args.name, args.version_id, args.as, withinChange),
  publish_tool: async (args: { name: string; as?: string }, withinChange) => {
    const entry = await access.publish(args.name, args.as, withinChange)
    return { name: entry.name, version_id: entry.version_id, status: entry.status, dependencies: entry.dependencies }
  }
})
