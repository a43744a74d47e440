/**
 * A namespace's shared tool catalog: code tools one session wrote, verified and measured, published
 * so that other sessions (other agents) load them. An entry is one published version of a tool:
 * its definition, examples (a tool without examples cannot be published), the tools it calls, who
 * published it from which session and which earlier version, and the measurements its session
 * recorded. Its package is stored apart under the version id, which is the package's content
 * address, so a loading session checks that what it fetched is what was published.
 *
 * An entry starts `proposed`; an operator or the application marks it `approved` (only approved
 * versions load) or `revoked` (no new loads; sessions that hold it keep their copy and are told).
 * `SharedCatalogShape` is the seam: `SharedCatalog.memory()` here (the embedded default),
 * `KvCatalog` of @jitbox/nats over JetStream KV.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as CodePackage from "./CodePackage.js"
import { CodeLanguages } from "./ToolOrigin.js"
import { ToolExample } from "./ToolRequest.js"

/** @since 0.1.0 @category schemas */
export const CatalogStatus = Schema.Literal("proposed", "approved", "revoked")

/** @since 0.1.0 @category models */
export type CatalogStatus = typeof CatalogStatus.Type

const Count = Schema.Int.pipe(Schema.nonNegative())
const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const ToolName = Schema.String.pipe(Schema.pattern(/^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/))

/** How many examples an entry carries, as `create_tool` takes them. @since 0.1.0 @category constants */
export const maxExamples = 8

/** @since 0.1.0 @category schemas */
export const CatalogExample = ToolExample

/** One published version of a tool. @since 0.1.0 @category schemas */
export const PublishedTool = Schema.Struct({
  name: ToolName,
  version_id: Schema.String,
  status: CatalogStatus,
  description: Schema.String,
  guidelines: Schema.String,
  parameters: JsonObject,
  language: Schema.Literal(...CodeLanguages),
  entrypoint: Schema.String,
  examples: Schema.Array(CatalogExample).pipe(Schema.minItems(1), Schema.maxItems(maxExamples)),
  /** The tools its code calls by name, which a loading session must have. */
  dependencies: Schema.Array(ToolName),
  provenance: Schema.Struct({
    session_id: Schema.String,
    principal: Schema.String,
    published_at: Count,
    /** The catalog's previous version of this name when this one was published. */
    updated_from: Schema.NullOr(Schema.String)
  }),
  measurements: Schema.Struct({
    calls: Count,
    failures: Count,
    p50_ms: Schema.NullOr(Schema.NonNegative),
    p99_ms: Schema.NullOr(Schema.NonNegative)
  }),
  /** Who approved or revoked it last, and when. */
  reviewed: Schema.NullOr(Schema.Struct({ by: Schema.String, at: Count }))
})

/** @since 0.1.0 @category models */
export interface PublishedTool extends Schema.Schema.Type<typeof PublishedTool> {}

/** A published version's package: what its version id is the content address of. @since 0.1.0 @category schemas */
export const CatalogPackage = Schema.Struct({
  version_id: Schema.String,
  language: Schema.Literal(...CodeLanguages),
  entrypoint: Schema.String,
  files: Schema.Record({ key: Schema.String, value: Schema.String }),
  declared: Schema.Struct({
    description: Schema.optional(Schema.String),
    guidelines: Schema.optional(Schema.String),
    parameters: Schema.optional(JsonObject)
  }),
  /** A long-running tool's duration class (absent: short). */
  duration: Schema.optional(Schema.Literal("short", "long"))
})

/** @since 0.1.0 @category models */
export interface CatalogPackage extends Schema.Schema.Type<typeof CatalogPackage> {}

/** The version id a package's content gives, as the harness computes it for the tools it builds. @since 0.1.0 @category getters */
export const contentAddress = (pkg: Omit<CatalogPackage, "version_id" | "duration">): string =>
  CodePackage.versionId({ kind: "code", language: pkg.language, entrypoint: pkg.entrypoint, files: pkg.files, ...pkg.declared })

/** @since 0.1.0 @category errors */
export class CatalogError extends Schema.TaggedError<CatalogError>()("CatalogError", {
  name: Schema.String,
  reason: Schema.Literal("NoCatalog", "NotFound", "NotApproved", "Revoked", "NoExamples", "NotACodeTool", "Tampered", "MissingDependency", "Invalid"),
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.reason}: ${this.name}: ${this.detail}`
  }
}

/** @since 0.1.0 @category models */
export interface SharedCatalogShape {
  /** Stores a version (its entry's status is the catalog's to decide: `proposed`, or `approved` where proposals are approved as published). Publishing a stored version again answers the stored entry. */
  readonly publish: (entry: PublishedTool, pkg: CatalogPackage) => Promise<PublishedTool>
  /** Every stored version, of one name or of all, newest first. */
  readonly entries: (name?: string) => Promise<ReadonlyArray<PublishedTool>>
  /** One version, or without `versionId` the newest approved one; `CatalogError` NotFound otherwise. */
  readonly entry: (name: string, versionId?: string) => Promise<PublishedTool>
  readonly package: (versionId: string) => Promise<CatalogPackage>
  readonly review: (name: string, versionId: string, status: "approved" | "revoked", by: string) => Promise<PublishedTool>
  /** Calls `listener` with each entry whose status changed, until the returned function is called. */
  readonly watch: (listener: (entry: PublishedTool) => void) => () => void
}

/** @since 0.1.0 @category models */
export interface MemoryOptions {
  /** Proposals are approved as they are published (a namespace's profile may say so). */
  readonly approveOnPublish?: boolean | undefined
  readonly now?: (() => number) | undefined
}

const notFound = (name: string, versionId: string | undefined): CatalogError =>
  new CatalogError({ name, reason: "NotFound", detail: versionId === undefined ? "no approved version in the catalog" : `no version ${versionId} in the catalog` })

/** The catalog of one process (the embedded default). @since 0.1.0 @category constructors */
export const memory = (options: MemoryOptions = {}): SharedCatalogShape => {
  const versions = new Map<string, Array<PublishedTool>>()
  const packages = new Map<string, CatalogPackage>()
  const listeners = new Set<(entry: PublishedTool) => void>()
  const now = options.now ?? Date.now
  const find = (name: string, versionId: string | undefined): PublishedTool => {
    const stored = versions.get(name) ?? []
    const found = versionId === undefined ? stored.find((entry) => entry.status === "approved") : stored.find((entry) => entry.version_id === versionId)
    if (found === undefined) throw notFound(name, versionId)
    return found
  }
  return {
    publish: async (entry, pkg) => {
      const stored = versions.get(entry.name) ?? []
      const existing = stored.find((candidate) => candidate.version_id === entry.version_id)
      if (existing !== undefined) return existing
      const published: PublishedTool = options.approveOnPublish === true
        ? { ...entry, status: "approved", reviewed: { by: entry.provenance.principal, at: now() } }
        : { ...entry, status: "proposed", reviewed: null }
      packages.set(pkg.version_id, pkg)
      versions.set(entry.name, [published, ...stored])
      return published
    },
    entries: async (name) => name === undefined ? [...versions.values()].flat().sort((a, b) => b.provenance.published_at - a.provenance.published_at) : [...(versions.get(name) ?? [])],
    entry: async (name, versionId) => find(name, versionId),
    package: async (versionId) => {
      const pkg = packages.get(versionId)
      if (pkg === undefined) throw new CatalogError({ name: versionId, reason: "NotFound", detail: "no package stored under this version id" })
      return pkg
    },
    review: async (name, versionId, status, by) => {
      const current = find(name, versionId)
      if (current.status === "revoked" && status === "approved") {
        throw new CatalogError({ name, reason: "Revoked", detail: `version ${versionId} was revoked and cannot be approved again` })
      }
      const reviewed: PublishedTool = { ...current, status, reviewed: { by, at: now() } }
      versions.set(name, (versions.get(name) ?? []).map((entry) => entry.version_id === versionId ? reviewed : entry))
      for (const listener of [...listeners]) listener(reviewed)
      return reviewed
    },
    watch: (listener) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    }
  }
}
