/**
 * Snapshots (SNAP-01..20, D-17): the toolbox as JSON — code tools with their files, text tools,
 * base tool names and unload marks — never measurements, errors, history or module state.
 * Loading only validates (an effect Schema, errors name the field); activation is the harness's.
 * Validation applies every rule that creating a tool applies to its package (`CodePackage.check`:
 * relative identifier paths with the language's extensions, at most 32 files, at most 200,000
 * code points per file; names as `checkName`; the entry module only as `source`), so a snapshot
 * that activation would refuse is refused by `fromJson`/`load` already, naming the field
 * (`tools.0.files["../x.ts"]: ...`).
 *
 * A snapshot file crosses a trust boundary, so decoding also bounds what it reads (`limits`): at
 * most 256 code tools, 256 text tools, 1,024 base tool names and 1,536 unload marks; markdown,
 * descriptions and guidelines of at most 200,000 code points (create_tool's file limit), an
 * entrypoint of at most 1,000; declared `parameters` nested at most 64 levels deep and at most
 * 200,000 characters of JSON. `toJson` (and so `save`) refuses what `fromJson` would refuse.
 * Format 1 unless some tool has more than one file, then 2; a format-1 file without
 * `text_tools` loads with none.
 *
 * @since 0.1.0
 */
import { readFile } from "node:fs/promises"
import * as Path from "node:path"
import * as Either from "effect/Either"
import type * as ParseResult from "effect/ParseResult"
import * as ParseIssues from "./ParseIssues.js"
import * as Schema from "effect/Schema"
import { ToolExample } from "./ToolRequest.js"
import * as AtomicFile from "./AtomicFile.js"
import * as CodePackage from "./CodePackage.js"
import * as CodePoints from "./CodePoints.js"
import { PackageError, ToolDefinitionError } from "./HarnessError.js"
import * as JsonLength from "./JsonLength.js"
import { checkName } from "./Tool.js"
import { CodeLanguages } from "./ToolOrigin.js"

/**
 * What decoding a snapshot accepts at most. Counts of records, lengths in code points.
 *
 * @since 0.1.0
 * @category constants
 */
export const limits = {
  tools: 256,
  textTools: 256,
  baseTools: 1_024,
  /** Every tool a snapshot can hold. */
  unloadedTools: 256 + 256 + 1_024,
  markdownChars: CodePackage.maxFileChars,
  /** A description or guidelines. */
  declaredChars: CodePackage.maxFileChars,
  entrypointChars: 1_000,
  /** Levels of objects and arrays, the `parameters` object itself being the first. */
  parametersDepth: 64,
  /** Characters of `JSON.stringify(parameters)`. */
  parametersChars: 200_000
} as const

const atMost = (max: number, what: string) => ({
  message: (issue: ParseResult.ParseIssue) =>
    `a snapshot holds at most ${max} ${what}, this one has ${(issue.actual as ReadonlyArray<unknown>).length}`
})

const longerThan = (text: string, max: number): boolean => text.length > max && CodePoints.count(text, max + 1) > max

const Text = (max: number) =>
  Schema.String.pipe(Schema.filter((text) => !longerThan(text, max) || `at most ${max} characters, this one has more`))

/**
 * The path to the first object or array nested more than `max` levels below `value` (which counts
 * as one), or `undefined`; never descends further than that.
 */
const tooDeep = (value: unknown, max: number, path: Array<PropertyKey> = []): Array<PropertyKey> | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  if (max === 0) return path
  const entries: Iterable<readonly [PropertyKey, unknown]> = Array.isArray(value) ? value.entries() : Object.entries(value)
  for (const [key, item] of entries) {
    path.push(key)
    if (tooDeep(item, max - 1, path) !== undefined) return path
    path.pop()
  }
  return undefined
}

const deeperThan = (value: unknown, max: number): boolean => tooDeep(value, max) !== undefined

const Parameters = Schema.Record({ key: Schema.String, value: Schema.Unknown }).pipe(
  Schema.filter((parameters) => {
    if (deeperThan(parameters, limits.parametersDepth)) {
      return `a parameters schema nests at most ${limits.parametersDepth} levels deep`
    }
    const length = JsonLength.measure(parameters, limits.parametersChars + 1)
    return length === null || length <= limits.parametersChars ||
      `a parameters schema takes at most ${limits.parametersChars} characters of JSON`
  })
)

const Language = Schema.Literal(...CodeLanguages)
const Name = Schema.String.pipe(Schema.filter((name) => {
  try {
    checkName(name)
    return true
  } catch (error) {
    if (error instanceof ToolDefinitionError) return error.detail
    throw error
  }
}))
const Declared = {
  description: Schema.optional(Text(limits.declaredChars)),
  guidelines: Schema.optional(Text(limits.declaredChars)),
  parameters: Schema.optional(Parameters)
}

/**
 * The package rules of tool creation, for a record: the issue names the field (`source` for the
 * entry module, `files` for the count, `files[path]` for one helper).
 */
const checkPackage = (record: {
  readonly name: string
  readonly language: (typeof CodeLanguages)[number]
  readonly source: string
  readonly files?: { readonly [path: string]: string } | undefined
}): true | { readonly path: ReadonlyArray<PropertyKey>; readonly message: string } => {
  const entryFile = CodePackage.entryFile(record.language)
  if (record.files !== undefined && Object.hasOwn(record.files, entryFile)) {
    return { path: ["files", entryFile], message: `${entryFile} is the entry module: it belongs in source, not in files` }
  }
  try {
    CodePackage.check(record.name, record.language, { ...record.files, [entryFile]: record.source })
    return true
  } catch (error) {
    if (!(error instanceof PackageError)) throw error
    const path = error.path === undefined ? ["files"] : error.path === entryFile ? ["source"] : ["files", error.path]
    return { path, message: error.detail }
  }
}

/** A code tool: its entry module as `source`, helper modules (format 2) in `files`. @since 0.1.0 @category schemas */
export const CodeToolRecord = Schema.Struct({
  name: Name,
  language: Language,
  entrypoint: Text(limits.entrypointChars),
  source: Schema.String,
  files: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  /** 003's duration class; absent means short. */
  duration: Schema.optional(Schema.Literal("short", "long")),
  /** The examples the version passed when it was built (kept so it can be published); a restore does not run them. */
  examples: Schema.optional(Schema.Array(ToolExample).pipe(Schema.maxItems(8))),
  ...Declared
}).pipe(Schema.filter(checkPackage))

/** @since 0.1.0 @category schemas */
export const TextToolRecord = Schema.Struct({
  name: Name,
  description: Text(limits.declaredChars),
  markdown: Text(limits.markdownChars)
})

/** @since 0.1.0 @category schemas */
export const JitHarnessSnapshot = Schema.Struct({
  format_version: Schema.Literal(1, 2),
  tools: Schema.Array(CodeToolRecord).pipe(Schema.maxItems(limits.tools, atMost(limits.tools, "code tools"))),
  text_tools: Schema.optionalWith(
    Schema.Array(TextToolRecord).pipe(Schema.maxItems(limits.textTools, atMost(limits.textTools, "text tools"))),
    { default: () => [] }
  ),
  base_tools: Schema.optionalWith(
    Schema.Array(Name).pipe(Schema.maxItems(limits.baseTools, atMost(limits.baseTools, "base tool names"))),
    { default: () => [] }
  ),
  unloaded_tools: Schema.optionalWith(
    Schema.Array(Name).pipe(Schema.maxItems(limits.unloadedTools, atMost(limits.unloadedTools, "unload marks"))),
    { default: () => [] }
  )
})

/** @since 0.1.0 @category models */
export interface JitHarnessSnapshot extends Schema.Schema.Type<typeof JitHarnessSnapshot> {}

/** @since 0.1.0 @category models */
export type CodeToolRecord = Schema.Schema.Type<typeof CodeToolRecord>

/** @since 0.1.0 @category models */
export type TextToolRecord = Schema.Schema.Type<typeof TextToolRecord>

/**
 * The package files of a code tool's record: its helper files and its entry module.
 *
 * @since 0.1.0
 * @category getters
 */
export const filesOf = (record: CodeToolRecord): Record<string, string> => ({
  ...record.files,
  [CodePackage.entryFile(record.language)]: record.source
})

/**
 * The version id the harness gives a code tool's record when it activates it.
 *
 * @since 0.1.0
 * @category getters
 */
export const codeVersionId = (record: CodeToolRecord): string =>
  CodePackage.versionId({
    kind: "code",
    language: record.language,
    entrypoint: record.entrypoint,
    files: filesOf(record),
    description: record.description,
    guidelines: record.guidelines,
    parameters: record.parameters
  })

/** The version id the harness gives a text tool's record. @since 0.1.0 @category getters */
export const textVersionId = (record: TextToolRecord): string =>
  CodePackage.versionId({ kind: "text", files: { "SKILL.md": record.markdown }, description: record.description })

/** A snapshot that cannot be read, parsed or written. @since 0.1.0 @category errors */
export class SnapshotError extends Schema.TaggedError<SnapshotError>()("SnapshotError", {
  reason: Schema.Literal("Invalid", "NotFound", "Io", "Activation"),
  path: Schema.optional(Schema.String),
  detail: Schema.String
}) {
  override get message(): string {
    return this.path === undefined ? this.detail : `${this.path}: ${this.detail}`
  }
}

const decode = Schema.decodeUnknownEither(JitHarnessSnapshot, { onExcessProperty: "error" })
const encode = Schema.encodeEither(JitHarnessSnapshot)

/**
 * How deep any value of a snapshot may nest: the root, `tools`, a record and its `parameters`
 * (4 levels) plus the 63 levels below `parameters`. Checked before the schema runs, since its error
 * messages print the offending value and would overflow the stack on a deeper one.
 */
const documentDepth = limits.parametersDepth + 3

/** An issue's message quotes the offending value; keep it short. */
const messageChars = 300

const identifier = /^[A-Za-z_][A-Za-z0-9_]*$/

/** `tools.0.files["../x.ts"]`: identifiers and indices joined by dots, any other key quoted. */
const fieldPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.length === 0 ? "(root)" : path.map((key, index) =>
    typeof key === "number" || (typeof key === "string" && identifier.test(key))
      ? `${index === 0 ? "" : "."}${String(key)}`
      : `[${JSON.stringify(typeof key === "symbol" ? key.toString() : key)}]`
  ).join("")

const shortened = (message: string): string => {
  const preview = CodePoints.preview(message, messageChars)
  return preview.truncated ? `${preview.text}…` : message
}

const invalidAt = (issues: ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }>, path: string | undefined) =>
  new SnapshotError({
    reason: "Invalid",
    ...(path === undefined ? {} : { path }),
    detail: `not a valid jitbox snapshot: ${issues.map((issue) => `${fieldPath(issue.path)}: ${shortened(issue.message)}`).join("; ")}`
  })

/** An optional field's union with `undefined` echoes every mistake as "Expected undefined"; drop the echo. */
const invalid = (error: ParseResult.ParseError, path: string | undefined): SnapshotError => {
  return invalidAt(ParseIssues.issues(error), path)
}

/** Refuses a value nested deeper than any field allows, naming the field it sits in. */
const checkDepth = (value: unknown, path: string | undefined): void => {
  const deep = tooDeep(value, documentDepth)
  if (deep === undefined) return
  const field = deep.slice(0, 3)
  const inParameters = field.length === 3 && field[0] === "tools" && field[2] === "parameters"
  throw invalidAt([{
    path: field,
    message: inParameters
      ? `a parameters schema nests at most ${limits.parametersDepth} levels deep`
      : `nests more than ${documentDepth} levels deep, deeper than any snapshot field`
  }], path)
}

/**
 * Parses and validates a snapshot; never executes anything (SNAP-12).
 *
 * @since 0.1.0
 * @category codecs
 */
export const fromJson = (json: string, path?: string): JitHarnessSnapshot => {
  let parsed: unknown
  try {
    parsed = JSON.parse(json)
  } catch (cause) {
    throw invalidAt([{ path: [], message: cause instanceof Error ? cause.message : String(cause) }], path)
  }
  checkDepth(parsed, path)
  const result = decode(parsed)
  if (Either.isLeft(result)) throw invalid(result.left, path)
  const snapshot = result.right
  const multiFile = snapshot.tools.some((tool) => tool.files !== undefined && Object.keys(tool.files).length > 0)
  if (multiFile && snapshot.format_version === 1) {
    throw new SnapshotError({
      reason: "Invalid",
      ...(path === undefined ? {} : { path }),
      detail: "format_version 1 cannot hold multi-file tools; expected format_version 2"
    })
  }
  return snapshot
}

/** Refuses, with a `SnapshotError`, what `fromJson` would refuse to read back. @since 0.1.0 @category codecs */
export const toJson = (snapshot: JitHarnessSnapshot): string => {
  checkDepth(snapshot, undefined)
  const result = encode(snapshot)
  if (Either.isLeft(result)) throw invalid(result.left, undefined)
  return JSON.stringify(result.right, null, 2) + "\n"
}

/** Reads and validates a snapshot file. @since 0.1.0 @category io */
export const load = async (path: string): Promise<JitHarnessSnapshot> => {
  let text: string
  try {
    text = await readFile(path, "utf8")
  } catch (cause) {
    const code = (cause as { code?: string }).code
    throw new SnapshotError({
      reason: code === "ENOENT" ? "NotFound" : "Io",
      path,
      detail: cause instanceof Error ? cause.message : String(cause)
    })
  }
  return fromJson(text, path)
}

/**
 * Writes a snapshot atomically (SNAP-04/05): a temporary file in the same directory, fsync, rename.
 * The parent directory must exist; on failure nothing is left behind.
 *
 * @since 0.1.0
 * @category io
 */
export const save = async (snapshot: JitHarnessSnapshot, path: string): Promise<void> => {
  try {
    await AtomicFile.write(path, () => toJson(snapshot))
  } catch (cause) {
    if (cause instanceof SnapshotError) throw new SnapshotError({ reason: cause.reason, path, detail: cause.detail })
    const code = (cause as { code?: string }).code
    throw new SnapshotError({
      reason: code === "ENOENT" ? "NotFound" : "Io",
      path,
      detail: code === "ENOENT"
        ? `the directory ${Path.dirname(Path.resolve(path))} does not exist`
        : cause instanceof Error
        ? cause.message
        : String(cause)
    })
  }
}
