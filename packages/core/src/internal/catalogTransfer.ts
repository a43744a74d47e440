/**
 * A session's side of the shared catalog: a code tool of this toolbox as a catalog entry and its
 * package (publishing), and an approved entry as a new tool of this toolbox (loading: the package
 * checked against its content address, the dependencies against this toolbox, the examples run here
 * by the same change as `create_tool`, charged to this session's budgets).
 */
import * as CodePackage from "../CodePackage.js"
import type { Profiler } from "../Profiler.js"
import * as SharedCatalog from "../SharedCatalog.js"
import type { CreateToolRequest, UpdateToolRequest } from "../ToolRequest.js"
import type { CodeVersion, Registry } from "./registry.js"

export interface Publisher {
  readonly sessionId: string
  readonly principal: string
  readonly now: number
}

const percentile = (sorted: ReadonlyArray<number>, p: number): number | null =>
  sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

const escaped = (name: string): string => name.replace(/[-]/g, "\\-")

/** The other tools of the toolbox whose names the package's files spell as a string literal (what `callTool("name", …)` needs). */
const dependenciesOf = (registry: Registry, name: string, version: CodeVersion): Array<string> => {
  const text = Object.values(version.files).join("\n")
  return [...registry.entries.values()]
    .filter((entry) => entry.origin !== "management" && entry.name !== name)
    .map((entry) => entry.name)
    .filter((candidate) => new RegExp(`["'\`]${escaped(candidate)}["'\`]`).test(text))
    .sort()
}

const measurementsOf = (profiler: Profiler, name: string): SharedCatalog.PublishedTool["measurements"] => {
  const stats = profiler.stats(name, "code")
  const durations = profiler.records(name).filter((record) => record.status === "completed").map((record) => record.duration_ms).sort((a, b) => a - b)
  return { calls: stats.call_count, failures: stats.failed_count, p50_ms: percentile(durations, 50), p99_ms: percentile(durations, 99) }
}

export const publication = (
  registry: Registry,
  profiler: Profiler,
  name: string,
  publishedName: string,
  publisher: Publisher,
  previous: ReadonlyArray<SharedCatalog.PublishedTool>
): { readonly entry: SharedCatalog.PublishedTool; readonly pkg: SharedCatalog.CatalogPackage } => {
  const found = registry.get(name)
  if (found === undefined) throw registry.notFound(name)
  if (found.origin !== "code") {
    throw new SharedCatalog.CatalogError({ name, reason: "NotACodeTool", detail: `only code tools are published; ${name} is a ${found.origin} tool` })
  }
  const version = found.version
  if (version.examples.length === 0) {
    throw new SharedCatalog.CatalogError({
      name,
      reason: "NoExamples",
      detail: "a tool is published with the examples its version passed: update it with examples first"
    })
  }
  const pkg: SharedCatalog.CatalogPackage = {
    version_id: version.versionId,
    language: version.language,
    entrypoint: version.entrypoint,
    files: version.files,
    declared: version.declared as SharedCatalog.CatalogPackage["declared"],
    ...(version.duration === "long" ? { duration: "long" as const } : {})
  }
  const latest = previous.find((entry) => entry.version_id !== version.versionId)
  const entry: SharedCatalog.PublishedTool = {
    name: publishedName,
    version_id: version.versionId,
    status: "proposed",
    description: version.description,
    guidelines: version.guidelines,
    parameters: version.parameters as SharedCatalog.PublishedTool["parameters"],
    language: version.language,
    entrypoint: version.entrypoint,
    examples: version.examples,
    dependencies: dependenciesOf(registry, name, version),
    provenance: { session_id: publisher.sessionId, principal: publisher.principal, published_at: publisher.now, updated_from: latest?.version_id ?? null },
    measurements: measurementsOf(profiler, name),
    reviewed: null
  }
  return { entry, pkg }
}

/**
 * The change that installs an approved entry, once its package and dependencies check out: a new
 * tool (`create_tool`), or, when this session has a code tool of that name, its next version
 * (`update_tool`, the package's files replacing the old ones), so a newer catalog version reaches
 * a session only when it loads it.
 */
export const loading = (
  registry: Registry,
  entry: SharedCatalog.PublishedTool,
  pkg: SharedCatalog.CatalogPackage,
  as: string | undefined
): { readonly create: CreateToolRequest } | { readonly update: UpdateToolRequest } => {
  if (entry.status !== "approved") {
    throw new SharedCatalog.CatalogError({
      name: entry.name,
      reason: entry.status === "revoked" ? "Revoked" : "NotApproved",
      detail: `version ${entry.version_id} is ${entry.status}; only approved versions load`
    })
  }
  if (pkg.version_id !== entry.version_id || SharedCatalog.contentAddress(pkg) !== entry.version_id) {
    throw new SharedCatalog.CatalogError({ name: entry.name, reason: "Tampered", detail: `the package stored for ${entry.version_id} is not the content it names` })
  }
  const missing = entry.dependencies.filter((dependency) => {
    const found = registry.get(dependency)
    return found === undefined || found.origin === "management"
  })
  if (missing.length > 0) {
    throw new SharedCatalog.CatalogError({
      name: entry.name,
      reason: "MissingDependency",
      detail: `it calls ${missing.join(", ")}, which this session does not have: load or create ${missing.length === 1 ? "it" : "them"} first`
    })
  }
  const name = as ?? entry.name
  const entryFile = CodePackage.entryFile(pkg.language)
  const helpers = Object.fromEntries(Object.entries(pkg.files).filter(([path]) => path !== entryFile))
  const fields = {
    language: pkg.language,
    entrypoint: pkg.entrypoint,
    source: pkg.files[entryFile] ?? "",
    ...(Object.keys(helpers).length > 0 ? { files: helpers } : {}),
    ...pkg.declared,
    ...(pkg.duration === undefined ? {} : { duration: pkg.duration }),
    examples: entry.examples
  }
  const installed = registry.get(name)
  if (installed?.origin !== "code") return { create: { kind: "code", name, ...fields } }
  const remove = Object.keys(installed.version.files).filter((path) => path !== entryFile && !(path in pkg.files))
  return { update: { name, ...fields, ...(remove.length > 0 ? { remove } : {}) } }
}
