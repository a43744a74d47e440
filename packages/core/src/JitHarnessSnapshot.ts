/**
 * Snapshots (SNAP-01..20, D-17): the toolbox as JSON — code tools with their files, text tools,
 * base tool names and unload marks — never measurements, errors, history or module state.
 * Loading only validates (an effect Schema, errors name the field); activation is the harness's.
 * Validation applies every rule that creating a tool applies to its package (`CodePackage.check`:
 * relative identifier paths with the language's extensions, at most 32 files, at most 200,000
 * code points per file; names as `checkName`; the entry module only as `source`), so a snapshot
 * that activation would refuse is refused by `fromJson`/`load` already, naming the field
 * (`tools.0.files["../x.ts"]: ...`).
 * Format 1 unless some tool has more than one file, then 2; a format-1 file without
 * `text_tools` loads with none.
 *
 * @since 0.1.0
 */
import { readFile } from "node:fs/promises"
import * as Path from "node:path"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AtomicFile from "./AtomicFile.js"
import * as CodePackage from "./CodePackage.js"
import { PackageError, ToolDefinitionError } from "./HarnessError.js"
import { checkName } from "./Tool.js"
import { CodeLanguages } from "./ToolOrigin.js"

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
  description: Schema.optional(Schema.String),
  guidelines: Schema.optional(Schema.String),
  parameters: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
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
  entrypoint: Schema.String,
  source: Schema.String,
  files: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  /** 003's duration class; absent means short. */
  duration: Schema.optional(Schema.Literal("short", "long")),
  ...Declared
}).pipe(Schema.filter(checkPackage))

/** @since 0.1.0 @category schemas */
export const TextToolRecord = Schema.Struct({
  name: Name,
  description: Schema.String,
  markdown: Schema.String
})

/** @since 0.1.0 @category schemas */
export const JitHarnessSnapshot = Schema.Struct({
  format_version: Schema.Literal(1, 2),
  tools: Schema.Array(CodeToolRecord),
  text_tools: Schema.optionalWith(Schema.Array(TextToolRecord), { default: () => [] }),
  base_tools: Schema.optionalWith(Schema.Array(Name), { default: () => [] }),
  unloaded_tools: Schema.optionalWith(Schema.Array(Name), { default: () => [] })
})

/** @since 0.1.0 @category models */
export interface JitHarnessSnapshot extends Schema.Schema.Type<typeof JitHarnessSnapshot> {}

/** @since 0.1.0 @category models */
export type CodeToolRecord = Schema.Schema.Type<typeof CodeToolRecord>

/** @since 0.1.0 @category models */
export type TextToolRecord = Schema.Schema.Type<typeof TextToolRecord>

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

const decode = Schema.decodeUnknownEither(Schema.parseJson(JitHarnessSnapshot), { onExcessProperty: "error" })
const encode = Schema.encodeEither(JitHarnessSnapshot)

const identifier = /^[A-Za-z_][A-Za-z0-9_]*$/

/** `tools.0.files["../x.ts"]`: identifiers and indices joined by dots, any other key quoted. */
const fieldPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.length === 0 ? "(root)" : path.map((key, index) =>
    typeof key === "number" || (typeof key === "string" && identifier.test(key))
      ? `${index === 0 ? "" : "."}${String(key)}`
      : `[${JSON.stringify(typeof key === "symbol" ? key.toString() : key)}]`
  ).join("")

const invalid = (error: ParseResult.ParseError, path: string | undefined): SnapshotError =>
  new SnapshotError({
    reason: "Invalid",
    ...(path === undefined ? {} : { path }),
    detail: `not a valid jitbox snapshot: ${
      ParseResult.ArrayFormatter.formatErrorSync(error)
        .map((issue) => `${fieldPath(issue.path)}: ${issue.message}`)
        .join("; ")
    }`
  })

/**
 * Parses and validates a snapshot; never executes anything (SNAP-12).
 *
 * @since 0.1.0
 * @category codecs
 */
export const fromJson = (json: string, path?: string): JitHarnessSnapshot => {
  const result = decode(json)
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
