/**
 * `jitbox catalog`: the operator's view of a namespace's shared tool catalog (`KvCatalog`, bucket
 * `jitbox-catalog-<namespace>`), where sessions publish the code tools their agents wrote:
 *
 * - `ls [--name N]`: every published version, newest first, with its status, who published it
 *   from which session, and what its session measured;
 * - `show <name> [--version V]`: one version (the newest unless `--version`): its entry, the files
 *   of its package with their sizes, and its measurements;
 * - `approve <name> <version>`: the version loads in the namespace's sessions (a session loads
 *   an approved version only);
 * - `revoke <name> <version>`: no session loads it any more (those that hold it keep their copy
 *   and are told); a revoked version is not approved again.
 *
 * A review is written as `--principal` (by default the `--user`), which the server must allow to
 * write the catalog's reviews (the `operator` of `jitbox auth config`). The commands never create
 * the bucket: a namespace where nothing was published yet fails `CatalogError` NoCatalog.
 * `--json` prints JSON instead of text.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { type HarnessError, SharedCatalog } from "@jitbox/core"
import { KvCatalog, NatsConnection } from "@jitbox/nats"
import type { TransportError } from "@jitbox/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Connection from "./Connection.js"
import * as OperatorOptions from "./OperatorOptions.js"
import * as Table from "./Table.js"

/** What `jitbox catalog` can fail with. @since 0.1.0 @category errors */
export type CatalogCommandError = SharedCatalog.CatalogError | HarnessError.ConfigError | TransportError.TransportError

type Config = Connection.ConnectionConfig

/** Runs `use` with the namespace's catalog, opened (never created) on a connection of the command's own. */
const withCatalog = <A>(config: Config, use: (catalog: KvCatalog.KvCatalogShape, principal: string) => Promise<A>) =>
  Effect.scoped(Effect.gen(function*() {
    const { namespace } = yield* Connection.prefixOf(config)
    const principal = yield* Connection.principalOf(config)
    const { nc } = yield* NatsConnection.make(yield* Connection.natsOptions(config, `jitbox-catalog-${namespace}`))
    const catalog = yield* KvCatalog.fromConnection(nc, { namespace, create: false })
    return yield* Effect.tryPromise({
      try: () => use(catalog, principal),
      catch: (error) => error instanceof SharedCatalog.CatalogError ? error : new SharedCatalog.CatalogError({ name: "", reason: "Invalid", detail: String(error) })
    })
  }))

const time = (ms: number): string => new Date(ms).toISOString()
const millis = (value: number | null): string => value === null ? "-" : `${Math.round(value * 10) / 10}ms`
const reviewOf = (entry: SharedCatalog.PublishedTool): string =>
  entry.reviewed === null ? entry.status : `${entry.status} by ${entry.reviewed.by} ${time(entry.reviewed.at)}`

/**
 * The catalog's versions as `jitbox catalog ls` prints them.
 *
 * @since 0.1.0
 * @category formatting
 */
export const table = (entries: ReadonlyArray<SharedCatalog.PublishedTool>): Array<string> =>
  entries.length === 0 ? ["no published tools"] : Table.render(
    ["NAME", "VERSION", "STATUS", "PUBLISHED", "BY", "SESSION", "CALLS", "FAILURES", "P50", "P99"],
    entries.map((entry) => [
      entry.name,
      entry.version_id,
      entry.status,
      time(entry.provenance.published_at),
      entry.provenance.principal,
      entry.provenance.session_id,
      entry.measurements.calls,
      entry.measurements.failures,
      millis(entry.measurements.p50_ms),
      millis(entry.measurements.p99_ms)
    ])
  )

/** A version as `jitbox catalog show --json` prints it. @since 0.1.0 @category models */
export interface Shown {
  readonly entry: SharedCatalog.PublishedTool
  readonly files: ReadonlyArray<{ readonly path: string; readonly bytes: number }>
}

/**
 * A version as `jitbox catalog show` prints it.
 *
 * @since 0.1.0
 * @category formatting
 */
export const describe = ({ entry, files }: Shown): Array<string> => {
  const m = entry.measurements
  return [
    `${entry.name} ${entry.version_id}: ${reviewOf(entry)}`,
    `description: ${Table.cell(entry.description, 400)}`,
    `language: ${entry.language}, entrypoint ${entry.entrypoint}`,
    `published: ${time(entry.provenance.published_at)} by ${entry.provenance.principal} from session ${entry.provenance.session_id}` +
    (entry.provenance.updated_from === null ? "" : `, updating ${entry.provenance.updated_from}`),
    `calls: ${entry.dependencies.length === 0 ? "no other tool" : entry.dependencies.join(", ")}`,
    `measurements: ${m.calls} calls, ${m.failures} failures, p50 ${millis(m.p50_ms)}, p99 ${millis(m.p99_ms)}`,
    `examples: ${entry.examples.length}`,
    "files:",
    ...Table.render(["PATH", "BYTES"], files.map((file) => [file.path, file.bytes]), "  ")
  ]
}

const name = Args.text({ name: "NAME" }).pipe(Args.withDescription("The tool's name in the catalog"))
const version = Args.text({ name: "VERSION" }).pipe(Args.withDescription("The version id (v_…), as jitbox catalog ls lists it"))

const lsCommand = Command.make("ls", {
  ...Connection.options,
  json: OperatorOptions.json,
  name: Options.text("name").pipe(Options.withDescription("Only the versions of this tool"), Options.optional)
}, (config): Effect.Effect<void, CatalogCommandError> =>
  Effect.flatMap(
    withCatalog(config, (catalog) => catalog.entries(Option.getOrUndefined(config.name))),
    (entries) => Console.log(config.json ? JSON.stringify(entries) : table(entries).join("\n"))
  )).pipe(Command.withDescription("List the published versions of the namespace's catalog, newest first"))

const showCommand = Command.make("show", {
  ...Connection.options,
  json: OperatorOptions.json,
  name,
  version: Options.text("version").pipe(Options.withDescription("This version (default: the newest, whatever its status)"), Options.optional)
}, (config): Effect.Effect<void, CatalogCommandError> =>
  Effect.flatMap(
    withCatalog(config, async (catalog): Promise<Shown> => {
      const given = Option.getOrUndefined(config.version)
      const entry = given === undefined ? (await catalog.entries(config.name))[0] : await catalog.entry(config.name, given)
      if (entry === undefined) throw new SharedCatalog.CatalogError({ name: config.name, reason: "NotFound", detail: "no version in the catalog" })
      const pkg = await catalog.package(entry.version_id)
      const files = Object.entries(pkg.files).map(([path, text]) => ({ path, bytes: Buffer.byteLength(text) })).sort((a, b) => a.path < b.path ? -1 : 1)
      return { entry, files }
    }),
    (shown) => Console.log(config.json ? JSON.stringify(shown) : describe(shown).join("\n"))
  )).pipe(Command.withDescription("Show a published version: its entry, the files of its package and its measurements"))

const reviewCommand = (status: "approved" | "revoked", command: string, description: string) =>
  Command.make(command, { ...Connection.options, json: OperatorOptions.json, name, version }, (config): Effect.Effect<void, CatalogCommandError> =>
    Effect.flatMap(
      withCatalog(config, (catalog, principal) => catalog.review(config.name, config.version, status, principal)),
      (entry) => Console.log(config.json ? JSON.stringify(entry) : `${entry.name} ${entry.version_id}: ${reviewOf(entry)}`)
    )).pipe(Command.withDescription(description))

/** @since 0.1.0 @category commands */
export const command = Command.make("catalog").pipe(
  Command.withDescription("Review the namespace's shared tool catalog: list, show, approve and revoke published versions"),
  Command.withSubcommands([
    lsCommand,
    showCommand,
    reviewCommand("approved", "approve", "Approve a published version: the namespace's sessions may load it"),
    reviewCommand("revoked", "revoke", "Revoke a version: no session loads it any more (those that hold it keep their copy); it is not approved again")
  ])
)
