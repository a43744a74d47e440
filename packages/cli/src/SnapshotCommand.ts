/**
 * `jitbox snapshot inspect|verify|diff`: what a snapshot holds, whether it would activate, and
 * what changed between two. A snapshot is named explicitly (`SnapshotSource`): `--file PATH` (or a
 * bare path, only ever a file) or `--kv SESSION`, a session id in the namespace's JetStream KV
 * snapshot store on `--server` (`KvSnapshotStore`, bucket `jitbox-snapshots-<namespace>`); `diff`
 * takes `--from-file`/`--from-kv` and `--to-file`/`--to-kv`, or two paths. Either way it is
 * decoded with the snapshot schema (`JitHarnessSnapshot.fromJson`'s rules and bounds) before
 * anything else.
 *
 * - `inspect`: the code tools (language, version id, files, bytes, duration class, declared
 *   parameters), text tools, base tool names and unload marks, and the snapshot's size.
 * - `verify`: activates the snapshot in a `JitHarness` of this process with sandboxed code
 *   execution (`SandboxRunner`) and nothing attached (no event or profile sink, no admission, no
 *   store), then releases it. Exit 0 when it activates; otherwise the activation's typed error
 *   (`SnapshotError` `Activation`, `PackageError`, …) and exit 1. A terminal shows its progress.
 * - `diff`: tools added, removed and changed (version ids; for a changed code tool, which of
 *   its language, entry point, files, declared contract and duration changed, with lines added
 *   and removed per file), base tools and unload marks added and removed. `--exit-code`: exit 3
 *   when they differ.
 *
 * `--json` prints the same as one JSON document.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { HarnessError, JitHarness, JitHarnessSnapshot } from "@jitbox/core"
import type { CodeRunner } from "@jitbox/core"
import type { TransportError } from "@jitbox/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Connection from "./Connection.js"
import * as ExitCode from "./ExitCode.js"
import * as OperatorOptions from "./OperatorOptions.js"
import * as Progress from "./Progress.js"
import * as SnapshotSource from "./SnapshotSource.js"
import * as Table from "./Table.js"

/** A snapshot as read: where from, its JSON's size, and the decoded value. @since 0.1.0 @category models */
export type Loaded = SnapshotSource.Loaded

/** @since 0.1.0 @category models */
export interface CodeToolSummary {
  readonly name: string
  readonly language: string
  readonly versionId: string
  readonly entrypoint: string
  readonly files: ReadonlyArray<string>
  readonly bytes: number
  readonly duration: "short" | "long"
  readonly parameters: boolean
  readonly unloaded: boolean
}

/** What `inspect` reports. @since 0.1.0 @category models */
export interface Inspection {
  readonly source: string
  readonly formatVersion: number
  readonly bytes: number
  readonly languages: ReadonlyArray<string>
  readonly tools: ReadonlyArray<CodeToolSummary>
  readonly textTools: ReadonlyArray<{ readonly name: string; readonly versionId: string; readonly bytes: number; readonly unloaded: boolean }>
  readonly baseTools: ReadonlyArray<string>
  readonly unloadedTools: ReadonlyArray<string>
}

const encoder = new TextEncoder()
const byteLength = (text: string) => encoder.encode(text).length

/** Every file of a code tool, entry module included, by path. */
const { codeVersionId, filesOf, textVersionId } = JitHarnessSnapshot

/**
 * What a snapshot holds.
 *
 * @since 0.1.0
 * @category constructors
 */
export const inspect = (loaded: Loaded): Inspection => {
  const { snapshot } = loaded
  const unloaded = new Set(snapshot.unloaded_tools)
  return {
    source: loaded.source,
    formatVersion: snapshot.format_version,
    bytes: loaded.bytes,
    languages: [...new Set(snapshot.tools.map((tool) => tool.language))].sort(),
    tools: snapshot.tools.map((tool) => {
      const files = filesOf(tool)
      return {
        name: tool.name,
        language: tool.language,
        versionId: codeVersionId(tool),
        entrypoint: tool.entrypoint,
        files: Object.keys(files).sort(),
        bytes: Object.values(files).reduce((sum, text) => sum + byteLength(text), 0),
        duration: tool.duration ?? "short",
        parameters: tool.parameters !== undefined,
        unloaded: unloaded.has(tool.name)
      }
    }),
    textTools: snapshot.text_tools.map((tool) => ({ name: tool.name, versionId: textVersionId(tool), bytes: byteLength(tool.markdown), unloaded: unloaded.has(tool.name) })),
    baseTools: snapshot.base_tools,
    unloadedTools: snapshot.unloaded_tools
  }
}

const kib = (bytes: number) => bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KiB`
const list = (names: ReadonlyArray<string>) => names.length === 0 ? "none" : names.map((name) => Table.cell(name)).join(", ")

/** `inspect` as text, line by line. @since 0.1.0 @category formatting */
export const inspectionText = (inspection: Inspection): Array<string> => [
  `snapshot ${inspection.source}`,
  `format ${inspection.formatVersion}, ${kib(inspection.bytes)}, ${inspection.tools.length} code tools (${inspection.languages.join(", ") || "no languages"}), ${inspection.textTools.length} text tools, ${inspection.baseTools.length} base tools, ${inspection.unloadedTools.length} unloaded`,
  "",
  ...(inspection.tools.length === 0 ? ["code tools: none"] : Table.render(
    ["CODE TOOL", "LANGUAGE", "VERSION", "FILES", "SIZE", "DURATION", "PARAMETERS", "UNLOADED"],
    inspection.tools.map((tool) => [
      tool.name,
      tool.language,
      tool.versionId,
      tool.files.length,
      kib(tool.bytes),
      tool.duration,
      tool.parameters ? "declared" : "-",
      tool.unloaded ? "yes" : "-"
    ])
  )),
  ...(inspection.textTools.length === 0 ? [] : ["", ...Table.render(
    ["TEXT TOOL", "VERSION", "SIZE", "UNLOADED"],
    inspection.textTools.map((tool) => [tool.name, tool.versionId, kib(tool.bytes), tool.unloaded ? "yes" : "-"])
  )]),
  "",
  `base tools: ${list(inspection.baseTools)}`,
  `unloaded: ${list(inspection.unloadedTools)}`
]

/** One tool that changed between two snapshots. @since 0.1.0 @category models */
export interface ChangedTool {
  readonly name: string
  readonly kind: "code" | "text"
  readonly from: string
  readonly to: string
  /** What changed: `language`, `entrypoint`, `description`, `guidelines`, `parameters`, `duration`, `markdown`. */
  readonly fields: ReadonlyArray<string>
  /** Per file: added, removed, or changed with lines added and removed. */
  readonly files: ReadonlyArray<{ readonly path: string; readonly change: "added" | "removed" | "changed"; readonly linesAdded: number; readonly linesRemoved: number }>
}

/** What `diff` reports. @since 0.1.0 @category models */
export interface Difference {
  readonly from: string
  readonly to: string
  readonly same: boolean
  readonly added: ReadonlyArray<{ readonly name: string; readonly kind: "code" | "text"; readonly versionId: string }>
  readonly removed: ReadonlyArray<{ readonly name: string; readonly kind: "code" | "text"; readonly versionId: string }>
  readonly changed: ReadonlyArray<ChangedTool>
  readonly baseTools: { readonly added: ReadonlyArray<string>; readonly removed: ReadonlyArray<string> }
  readonly unloaded: { readonly added: ReadonlyArray<string>; readonly removed: ReadonlyArray<string> }
}

/** Lines added and removed from `a` to `b`, counted as multisets of lines (no alignment). */
const lineChanges = (a: string, b: string): { readonly linesAdded: number; readonly linesRemoved: number } => {
  const counts = new Map<string, number>()
  for (const line of a.split("\n")) counts.set(line, (counts.get(line) ?? 0) + 1)
  let linesAdded = 0
  for (const line of b.split("\n")) {
    const left = counts.get(line) ?? 0
    if (left > 0) counts.set(line, left - 1)
    else linesAdded++
  }
  let linesRemoved = 0
  for (const left of counts.values()) linesRemoved += left
  return { linesAdded, linesRemoved }
}

const lineCount = (text: string) => text.split("\n").length

const setDiff = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => ({
  added: b.filter((name) => !a.includes(name)),
  removed: a.filter((name) => !b.includes(name))
})

/**
 * What changed from snapshot `a` to `b`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const diff = (a: Loaded, b: Loaded): Difference => {
  type Entry = { readonly kind: "code"; readonly tool: JitHarnessSnapshot.CodeToolRecord } | { readonly kind: "text"; readonly tool: JitHarnessSnapshot.TextToolRecord }
  const entries = (snapshot: JitHarnessSnapshot.JitHarnessSnapshot) =>
    new Map<string, Entry>([
      ...snapshot.tools.map((tool) => [tool.name, { kind: "code", tool }] as const),
      ...snapshot.text_tools.map((tool) => [tool.name, { kind: "text", tool }] as const)
    ])
  const versionOf = (entry: Entry) => entry.kind === "code" ? codeVersionId(entry.tool) : textVersionId(entry.tool)
  const before = entries(a.snapshot)
  const after = entries(b.snapshot)
  const added = [...after].filter(([name]) => !before.has(name)).map(([name, entry]) => ({ name, kind: entry.kind, versionId: versionOf(entry) }))
  const removed = [...before].filter(([name]) => !after.has(name)).map(([name, entry]) => ({ name, kind: entry.kind, versionId: versionOf(entry) }))
  const changed: Array<ChangedTool> = []
  for (const [name, old] of before) {
    const now = after.get(name)
    if (now === undefined) continue
    const from = versionOf(old)
    const to = versionOf(now)
    if (from === to && old.kind === now.kind && (old.kind !== "code" || old.tool.duration === (now.tool as JitHarnessSnapshot.CodeToolRecord).duration)) continue
    const fields: Array<string> = []
    const files: Array<ChangedTool["files"][number]> = []
    if (old.kind === "code" && now.kind === "code") {
      for (const field of ["language", "entrypoint", "description", "guidelines", "parameters", "duration"] as const) {
        if (JSON.stringify(old.tool[field] ?? null) !== JSON.stringify(now.tool[field] ?? null)) fields.push(field)
      }
      const oldFiles = filesOf(old.tool)
      const newFiles = filesOf(now.tool)
      for (const path of [...new Set([...Object.keys(oldFiles), ...Object.keys(newFiles)])].sort()) {
        const was = oldFiles[path]
        const is = newFiles[path]
        if (was === is) continue
        if (was === undefined) files.push({ path, change: "added", linesAdded: lineCount(is!), linesRemoved: 0 })
        else if (is === undefined) files.push({ path, change: "removed", linesAdded: 0, linesRemoved: lineCount(was) })
        else files.push({ path, change: "changed", ...lineChanges(was, is) })
      }
    } else if (old.kind === "text" && now.kind === "text") {
      if (old.tool.description !== now.tool.description) fields.push("description")
      if (old.tool.markdown !== now.tool.markdown) {
        fields.push("markdown")
        files.push({ path: "SKILL.md", change: "changed", ...lineChanges(old.tool.markdown, now.tool.markdown) })
      }
    } else {
      fields.push("kind")
    }
    changed.push({ name, kind: now.kind, from, to, fields, files })
  }
  const baseTools = setDiff(a.snapshot.base_tools, b.snapshot.base_tools)
  const unloaded = setDiff(a.snapshot.unloaded_tools, b.snapshot.unloaded_tools)
  return {
    from: a.source,
    to: b.source,
    same: added.length + removed.length + changed.length + baseTools.added.length + baseTools.removed.length + unloaded.added.length + unloaded.removed.length === 0,
    added,
    removed,
    changed,
    baseTools,
    unloaded
  }
}

/** `diff` as text, line by line. @since 0.1.0 @category formatting */
export const diffText = (difference: Difference): Array<string> => {
  const lines = [`--- ${difference.from}`, `+++ ${difference.to}`]
  if (difference.same) return [...lines, "no changes"]
  for (const tool of difference.added) lines.push(`+ ${tool.kind} tool ${Table.cell(tool.name)} ${tool.versionId}`)
  for (const tool of difference.removed) lines.push(`- ${tool.kind} tool ${Table.cell(tool.name)} ${tool.versionId}`)
  for (const tool of difference.changed) {
    lines.push(`~ ${tool.kind} tool ${Table.cell(tool.name)} ${tool.from} -> ${tool.to}${tool.fields.length === 0 ? "" : ` (${tool.fields.join(", ")})`}`)
    for (const file of tool.files) lines.push(`    ${file.change} ${Table.cell(file.path)} +${file.linesAdded} -${file.linesRemoved}`)
  }
  for (const name of difference.baseTools.added) lines.push(`+ base tool ${Table.cell(name)}`)
  for (const name of difference.baseTools.removed) lines.push(`- base tool ${Table.cell(name)}`)
  for (const name of difference.unloaded.added) lines.push(`+ unloaded ${Table.cell(name)}`)
  for (const name of difference.unloaded.removed) lines.push(`- unloaded ${Table.cell(name)}`)
  lines.push(
    `${difference.added.length} added, ${difference.removed.length} removed, ${difference.changed.length} changed` +
      `; base tools +${difference.baseTools.added.length} -${difference.baseTools.removed.length}; unloaded +${difference.unloaded.added.length} -${difference.unloaded.removed.length}`
  )
  return lines
}

/** What the snapshot commands can fail with. @since 0.1.0 @category errors */
export type SnapshotCommandError =
  | JitHarnessSnapshot.SnapshotError
  | HarnessError.ConfigError
  | HarnessError.PackageError
  | TransportError.TransportError
  | ExitCode.ExitWith

const shared = { ...Connection.options, json: OperatorOptions.json }

/**
 * Activates the snapshot in a sandboxed harness with nothing attached and releases it; fails with
 * the activation's error when it would not activate. `onTool` hears of each code tool activated.
 *
 * @since 0.1.0
 * @category constructors
 */
export const verify = (
  snapshot: JitHarnessSnapshot.JitHarnessSnapshot,
  onTool: (name: string, done: number) => void = () => undefined
): Effect.Effect<{ readonly tools: number; readonly textTools: number }, JitHarnessSnapshot.SnapshotError | HarnessError.ConfigError | HarnessError.PackageError> =>
  Effect.scoped(Effect.gen(function*() {
    // loaded here: the other commands, and --help, need no sandbox
    const { SandboxRunner } = yield* Effect.promise(() => import("@jitbox/sandbox"))
    const sandbox = yield* SandboxRunner.scoped()
    let done = 0
    const counting: CodeRunner.CodeRunnerShape = {
      languages: sandbox.languages,
      activate: (source, host) =>
        sandbox.activate(source, host).then((metadata) => {
          onTool(source.toolName, ++done)
          return metadata
        }),
      invoke: (invocation, signal) => sandbox.invoke(invocation, signal),
      release: (activationId) => sandbox.release(activationId)
    }
    const harness = yield* Effect.try({
      try: () => new JitHarness(snapshot, { sessionId: "verify", codeExecution: "sandboxed", runners: [counting] }),
      catch: (error) => error as HarnessError.ConfigError
    })
    yield* Effect.addFinalizer(() => Effect.promise(() => harness.release()))
    yield* Effect.tryPromise({
      try: () => harness.ready,
      catch: (error) =>
        error instanceof JitHarnessSnapshot.SnapshotError || error instanceof HarnessError.PackageError || error instanceof HarnessError.ConfigError
          ? error
          : new JitHarnessSnapshot.SnapshotError({ reason: "Activation", detail: error instanceof Error ? `${error.name}: ${error.message}` : String(error) })
    })
    return { tools: snapshot.tools.length, textTools: snapshot.text_tools.length }
  }))

/** `--file PATH`, `--kv SESSION` or a bare path: one snapshot (`SnapshotSource.choose`). */
const oneSnapshot = {
  file: Options.text("file").pipe(Options.withDescription("A snapshot file"), Options.optional),
  kv: Options.text("kv").pipe(Options.withDescription("A session id: its snapshot in the namespace's KV snapshot store on --server (bucket jitbox-snapshots-<namespace>)"), Options.optional),
  path: Args.text({ name: "FILE" }).pipe(Args.withDescription("A snapshot file (the same as --file; never a session id)"), Args.optional)
}

const inspectCommand = Command.make("inspect", { ...shared, ...oneSnapshot }, (config): Effect.Effect<void, SnapshotCommandError> =>
  Effect.gen(function*() {
    const inspection = inspect(yield* SnapshotSource.load(yield* SnapshotSource.choose(config), config))
    yield* Console.log(config.json ? JSON.stringify(inspection) : inspectionText(inspection).join("\n"))
  })).pipe(Command.withDescription("What a snapshot holds: code and text tools, languages, version ids, sizes, base tools, unload marks."))

const verifyCommand = Command.make("verify", { ...shared, ...oneSnapshot }, (config): Effect.Effect<void, SnapshotCommandError> =>
  Effect.scoped(Effect.gen(function*() {
    const loaded = yield* SnapshotSource.load(yield* SnapshotSource.choose(config), config)
    const total = loaded.snapshot.tools.length
    const progress = yield* Progress.scoped({ status: { label: "activating snapshot", done: 0, total } })
    const started = Date.now()
    const result = yield* Effect.either(verify(loaded.snapshot, (name, done) => progress.update({ done, detail: name })))
    progress.stop()
    const elapsedMs = Date.now() - started
    if (result._tag === "Left") {
      const error = result.left
      const where = error._tag === "PackageError" ? { tool: error.name, reason: error.reason } : "reason" in error ? { reason: error.reason } : {}
      yield* Console.log(
        config.json
          ? JSON.stringify({ source: loaded.source, activates: false, error: { _tag: error._tag, ...where, message: error.message }, elapsedMs })
          : `not ok ${loaded.source}: does not activate: ${error._tag}${"tool" in where ? ` ${where.reason} in tool '${Table.cell(where.tool)}'` : ""}: ${Table.cell(error.message, 500)}`
      )
      return yield* error
    }
    yield* Console.log(
      config.json
        ? JSON.stringify({ source: loaded.source, activates: true, tools: result.right.tools, textTools: result.right.textTools, elapsedMs })
        : `ok ${loaded.source}: activates (${result.right.tools} code tools, ${result.right.textTools} text tools) in ${Table.span(elapsedMs)}`
    )
  }))).pipe(Command.withDescription("Whether a snapshot would activate: activates it in a sandboxed harness with nothing attached, then releases it. Exit 1 with the activation's error when it would not."))

const exitCode = Options.boolean("exit-code").pipe(Options.withDescription("Exit 3 when the snapshots differ (0 when they are the same)"))

/** `--from-file`/`--from-kv` and `--to-file`/`--to-kv`, or two paths A B: the two snapshots of `diff`. */
const twoSnapshots = {
  fromFile: Options.text("from-file").pipe(Options.withDescription("Snapshot A: a file"), Options.optional),
  fromKv: Options.text("from-kv").pipe(Options.withDescription("Snapshot A: a session id in the namespace's KV snapshot store"), Options.optional),
  toFile: Options.text("to-file").pipe(Options.withDescription("Snapshot B: a file"), Options.optional),
  toKv: Options.text("to-kv").pipe(Options.withDescription("Snapshot B: a session id in the namespace's KV snapshot store"), Options.optional),
  paths: Args.text({ name: "FILE" }).pipe(Args.withDescription("Snapshot files A and B (never session ids); or name them with the flags"), Args.between(0, 2))
}

/** The two sources of `diff`: two paths fill A and B in order; one path fills the side no flag names. */
const diffSources = (config: {
  readonly fromFile: Option.Option<string>
  readonly fromKv: Option.Option<string>
  readonly toFile: Option.Option<string>
  readonly toKv: Option.Option<string>
  readonly paths: ReadonlyArray<string>
}) => {
  const fromNamed = Option.isSome(config.fromFile) || Option.isSome(config.fromKv)
  const [first, second] = config.paths
  const fromPath = fromNamed ? undefined : first
  const toPath = fromNamed ? first : second
  if (fromNamed && second !== undefined) {
    return Effect.fail(new HarnessError.ConfigError({ option: "--from-file/--from-kv", detail: "snapshot A is named by a flag and by a path; give A and B as two paths, or by the flags" }))
  }
  return Effect.all([
    SnapshotSource.choose({ file: config.fromFile, kv: config.fromKv, path: Option.fromNullable(fromPath) }, "from-", "A"),
    SnapshotSource.choose({ file: config.toFile, kv: config.toKv, path: Option.fromNullable(toPath) }, "to-", "B")
  ])
}

const diffCommand = Command.make(
  "diff",
  { ...shared, exitCode, ...twoSnapshots },
  (config): Effect.Effect<void, SnapshotCommandError> =>
    Effect.gen(function*() {
      const [from, to] = yield* diffSources(config)
      const [a, b] = yield* Effect.all([SnapshotSource.load(from, config), SnapshotSource.load(to, config)])
      const difference = diff(a, b)
      yield* Console.log(config.json ? JSON.stringify(difference) : diffText(difference).join("\n"))
      if (config.exitCode && !difference.same) return yield* new ExitCode.ExitWith({ code: ExitCode.codes.differ, detail: "the snapshots differ" })
    })
).pipe(Command.withDescription("What changed from snapshot A to B: tools added, removed and changed (version ids, what in them changed), base tools, unload marks."))

/** @since 0.1.0 @category commands */
export const command = Command.make("snapshot").pipe(
  Command.withDescription("Inspect, verify and compare snapshots: files (--file), or session ids in the namespace's KV snapshot store (--kv)."),
  Command.withSubcommands([inspectCommand, verifyCommand, diffCommand])
)
