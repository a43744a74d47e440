/**
 * `jitbox snapshot inspect|verify|diff`: what a snapshot holds, whether it would activate, and
 * what changed between two. A snapshot is named by a path, or, when `--server` (or
 * `JITBOX_SERVER`) is given, by a session id in the namespace's JetStream KV snapshot store
 * (`KvSnapshotStore`, bucket `jitbox-snapshots-<namespace>`). Either way it is decoded with the
 * snapshot schema (`JitHarnessSnapshot.fromJson`'s rules and bounds) before anything else.
 *
 * - `inspect`: the code tools (language, version id, files, bytes, duration class, declared
 *   parameters), text tools, base tool names and unload marks, and the snapshot's size.
 * - `verify`: activates the snapshot in a `JitHarness` of this process with sandboxed code
 *   execution (`SandboxRunner`) and nothing attached (no event or profile sink, no admission, no
 *   store), then releases it. Exit 0 when it activates; otherwise the activation's typed error
 *   (`SnapshotError` `Activation`, `PackageError`, …) and exit 1. A terminal shows its progress.
 * - `diff A B`: tools added, removed and changed (version ids; for a changed code tool, which of
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
import { KvSnapshotStore, NatsConnection } from "@jitbox/nats"
import { Ids, SnapshotStore, type TransportError } from "@jitbox/runtime"
import { SandboxRunner } from "@jitbox/sandbox"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs/promises"
import * as Connection from "./Connection.js"
import * as ExitCode from "./ExitCode.js"
import * as OperatorOptions from "./OperatorOptions.js"
import * as Progress from "./Progress.js"
import * as Table from "./Table.js"

/** A snapshot as read: where from, its JSON's size, and the decoded value. @since 0.1.0 @category models */
export interface Loaded {
  /** `file <path>` or `kv <bucket>/<sessionId>`. */
  readonly source: string
  readonly bytes: number
  readonly snapshot: JitHarnessSnapshot.JitHarnessSnapshot
}

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

/** `--server` without a default: given (or JITBOX_SERVER set), a snapshot is a session id in KV. @since 0.1.0 @category options */
export const server = Options.text("server").pipe(
  Options.withDescription("NATS server URL(s): the snapshots named are session ids in the namespace's KV snapshot store; environment variable JITBOX_SERVER; without it they are files"),
  Options.withFallbackConfig(Config.string("JITBOX_SERVER")),
  Options.optional
)

const shared = { server, namespace: Connection.namespace, ...Connection.security, json: OperatorOptions.json }

/** The largest snapshot file read (the stores' default bound). */
const maxFileBytes = SnapshotStore.defaultMaxBytes

/**
 * Reads the snapshot `name`: a file, or with a server a session id in the namespace's KV store.
 *
 * @since 0.1.0
 * @category constructors
 */
export const load = (
  name: string,
  config: Connection.SecurityConfig & { readonly server: Option.Option<string>; readonly namespace: string }
): Effect.Effect<Loaded, JitHarnessSnapshot.SnapshotError | HarnessError.ConfigError | TransportError.TransportError> =>
  Option.match(config.server, {
    onNone: () =>
      Effect.gen(function*() {
        const stat = yield* Effect.tryPromise({
          try: () => fs.stat(name),
          catch: (error) =>
            new JitHarnessSnapshot.SnapshotError({
              reason: (error as { code?: string }).code === "ENOENT" ? "NotFound" : "Io",
              path: name,
              detail: error instanceof Error ? error.message : String(error)
            })
        })
        if (stat.size > maxFileBytes) {
          return yield* new JitHarnessSnapshot.SnapshotError({ reason: "Invalid", path: name, detail: `${stat.size} bytes; a snapshot is at most ${maxFileBytes}` })
        }
        const text = yield* Effect.tryPromise({
          try: () => fs.readFile(name, "utf8"),
          catch: (error) => new JitHarnessSnapshot.SnapshotError({ reason: "Io", path: name, detail: error instanceof Error ? error.message : String(error) })
        })
        const snapshot = yield* SnapshotStore.decode(text, name)
        return { source: `file ${name}`, bytes: byteLength(text), snapshot }
      }),
    onSome: (servers) =>
      Effect.scoped(Effect.gen(function*() {
        const connection = { ...config, server: servers }
        const { namespace } = yield* Connection.prefixOf(connection)
        const sessionId = yield* Ids.decode(Ids.SessionId, "snapshot (a session id)")(name)
        const { nc } = yield* NatsConnection.make(yield* Connection.natsOptions(connection, `jitbox-snapshot-${namespace}`))
        const store = yield* KvSnapshotStore.fromConnection(nc, { namespace })
        const found = yield* store.load(sessionId)
        if (Option.isNone(found)) {
          return yield* new JitHarnessSnapshot.SnapshotError({ reason: "NotFound", path: `${store.bucket}/${sessionId}`, detail: "no snapshot stored for this session" })
        }
        return { source: `kv ${store.bucket}/${sessionId}`, bytes: byteLength(JitHarnessSnapshot.toJson(found.value)), snapshot: found.value }
      }))
  })

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

const snapshotArg = Args.text({ name: "FILE-or-SESSION" }).pipe(
  Args.withDescription("A snapshot file, or with --server a session id in the namespace's KV snapshot store")
)

const inspectCommand = Command.make("inspect", { ...shared, snapshot: snapshotArg }, (config): Effect.Effect<void, SnapshotCommandError> =>
  Effect.gen(function*() {
    const inspection = inspect(yield* load(config.snapshot, config))
    yield* Console.log(config.json ? JSON.stringify(inspection) : inspectionText(inspection).join("\n"))
  })).pipe(Command.withDescription("What a snapshot holds: code and text tools, languages, version ids, sizes, base tools, unload marks."))

const verifyCommand = Command.make("verify", { ...shared, snapshot: snapshotArg }, (config): Effect.Effect<void, SnapshotCommandError> =>
  Effect.scoped(Effect.gen(function*() {
    const loaded = yield* load(config.snapshot, config)
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

const diffCommand = Command.make(
  "diff",
  { ...shared, exitCode, from: Args.text({ name: "A" }), to: Args.text({ name: "B" }) },
  (config): Effect.Effect<void, SnapshotCommandError> =>
    Effect.gen(function*() {
      const [a, b] = yield* Effect.all([load(config.from, config), load(config.to, config)])
      const difference = diff(a, b)
      yield* Console.log(config.json ? JSON.stringify(difference) : diffText(difference).join("\n"))
      if (config.exitCode && !difference.same) return yield* new ExitCode.ExitWith({ code: ExitCode.codes.differ, detail: "the snapshots differ" })
    })
).pipe(Command.withDescription("What changed from snapshot A to B: tools added, removed and changed (version ids, what in them changed), base tools, unload marks."))

/** @since 0.1.0 @category commands */
export const command = Command.make("snapshot").pipe(
  Command.withDescription("Inspect, verify and compare snapshots (files, or session ids in the namespace's KV store with --server)."),
  Command.withSubcommands([inspectCommand, verifyCommand, diffCommand])
)
