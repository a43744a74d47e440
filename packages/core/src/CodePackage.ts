/**
 * Code packages (D-08, PKG-01..09): an entry file plus up to 31 helper files reached by relative
 * imports, each at most 200,000 code points, with identifier path segments.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import * as CodePoints from "./CodePoints.js"
import { PackageError } from "./HarnessError.js"
import type { CodeLanguage } from "./ToolOrigin.js"

/** @since 0.1.0 @category constants */
export const maxFiles = 32

/** @since 0.1.0 @category constants */
export const maxFileChars = 200_000

const entryFiles: Record<CodeLanguage, string> = {
  typescript: "index.ts",
  javascript: "index.js",
  python: "__init__.py",
  bash: "main.sh",
  csharp: "Tool.cs"
}

const extensions: Record<CodeLanguage, ReadonlyArray<string>> = {
  typescript: [".ts", ".js", ".json"],
  javascript: [".js", ".mjs", ".json"],
  python: [".py"],
  bash: [".sh"],
  csharp: [".cs"]
}

/** The entry file of a package in `language`. @since 0.1.0 @category getters */
export const entryFile = (language: CodeLanguage): string => entryFiles[language]

const segment = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * Checks one relative path: identifier segments, an allowed extension on the last one, no `..`,
 * no absolute path, no empty segment, no backslash.
 *
 * @since 0.1.0
 * @category validation
 */
export const checkPath = (name: string, language: CodeLanguage, path: string): string => {
  const invalid = (why: string) => new PackageError({ name, reason: "InvalidPath", path, detail: `file path '${path}' ${why}` })
  if (path.startsWith("/") || path.includes("\\")) throw invalid("must be relative and use '/' separators")
  const parts = path.split("/")
  const last = parts[parts.length - 1]!
  const extension = extensions[language].find((ext) => last.endsWith(ext))
  if (extension === undefined) throw invalid(`must end with ${extensions[language].join(", ")} for ${language}`)
  const stem = last.slice(0, -extension.length)
  for (const part of [...parts.slice(0, -1), stem]) {
    if (part === "..") throw invalid("must not contain '..'")
    if (part === "" || part === ".") throw invalid("must not contain empty segments")
    if (!segment.test(part)) throw invalid(`has segment '${part}', which is not an identifier`)
  }
  return path
}

/**
 * Checks a whole package (entry file included) and returns it with keys in a stable order.
 *
 * @since 0.1.0
 * @category validation
 */
export const check = (
  name: string,
  language: CodeLanguage,
  files: Readonly<Record<string, string>>
): Readonly<Record<string, string>> => {
  const paths = Object.keys(files).sort()
  if (!(entryFile(language) in files)) {
    throw new PackageError({ name, reason: "MissingFile", path: entryFile(language), detail: `the package has no entry file ${entryFile(language)}` })
  }
  if (paths.length > maxFiles) {
    throw new PackageError({
      name,
      reason: "TooManyFiles",
      detail: `a package holds at most ${maxFiles} files, entry point included; this one has ${paths.length}`
    })
  }
  const checked: Record<string, string> = {}
  for (const path of paths) {
    checkPath(name, language, path)
    const text = files[path]
    if (typeof text !== "string") {
      throw new PackageError({ name, reason: "InvalidPath", path, detail: `file '${path}' must be a string of source` })
    }
    if (text.length > maxFileChars && CodePoints.count(text, maxFileChars + 1) > maxFileChars) {
      throw new PackageError({
        name,
        reason: "FileTooLarge",
        path,
        detail: `file '${path}' has more than ${maxFileChars} characters`
      })
    }
    checked[path] = text
  }
  return checked
}

/**
 * The immutable version id (D-03): a content hash of everything that defines the version.
 *
 * @since 0.1.0
 * @category constructors
 */
export const versionId = (parts: {
  readonly kind: string
  readonly language?: string | undefined
  readonly entrypoint?: string | undefined
  readonly files: Readonly<Record<string, string>>
  readonly description?: string | undefined
  readonly guidelines?: string | undefined
  readonly parameters?: unknown
}): string => {
  const hash = createHash("sha256")
  hash.update(JSON.stringify([
    parts.kind,
    parts.language ?? null,
    parts.entrypoint ?? null,
    Object.keys(parts.files).sort().map((path) => [path, parts.files[path]]),
    parts.description ?? null,
    parts.guidelines ?? null,
    parts.parameters ?? null
  ]))
  return `v_${hash.digest("hex").slice(0, 20)}`
}
