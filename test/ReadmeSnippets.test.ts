/**
 * Every TypeScript example in the READMEs compiles: each ```ts fenced block of README.md and
 * packages/*\/README.md is written, as it is, to its own module under test/.snippets/ (ignored by
 * git) and type-checked there by the workspace's TypeScript, with the settings a consumer would use:
 * `strict`, `module` / `moduleResolution` `NodeNext`, `noEmit`, `skipLibCheck`. `@jitbox/*` resolve
 * through the workspace's node_modules with the `@jitbox/source` condition (the TypeScript sources,
 * so no build is needed first); third-party packages the jitbox packages depend on (`effect`, say),
 * and those they take as peers or develop with (`ai` and `@langchain/*` for the adapters' examples),
 * are linked into test/.snippets/node_modules from the package that has them.
 *
 * Each block is a module of its own (`.mts`, so top-level await works): it must import and define
 * what it uses. A fragment that cannot stand alone opts out with a marker on its fence line,
 * ```ts no-check. A failure names the README, the line of the block's fence, and every compiler
 * error with its line in the README.
 *
 * To look at a failure by hand: `pnpm exec tsc -p test/.snippets` after a run.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import { beforeAll, describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("..", import.meta.url))
const snippetDir = path.join(root, "test", ".snippets")
const optOut = "no-check"

interface Block {
  /** The README, relative to the repository root. */
  readonly readme: string
  /** 1-based line of the opening fence in the README. */
  readonly fenceLine: number
  readonly code: string
  readonly checked: boolean
  /** Where the block is written. */
  readonly file: string
}

const readmes = (): Array<string> => {
  const packages = fs.readdirSync(path.join(root, "packages"), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && fs.existsSync(path.join(root, "packages", entry.name, "README.md")))
    .map((entry) => path.posix.join("packages", entry.name, "README.md"))
    .sort()
  return ["README.md", ...packages]
}

/** The fenced blocks of a Markdown text whose info string starts with `ts` or `typescript`. */
const blocksOf = (readme: string, text: string): Array<Block> => {
  const lines = text.split("\n")
  const blocks: Array<Block> = []
  let open: { readonly fence: string; readonly indent: number; readonly line: number; readonly info: string } | undefined
  let body: Array<string> = []
  lines.forEach((line, index) => {
    if (open === undefined) {
      const match = /^( *)(`{3,}|~{3,})\s*([^`]*)$/.exec(line)
      if (match === null) return
      open = { fence: match[2]!, indent: match[1]!.length, line: index + 1, info: match[3]!.trim() }
      body = []
      return
    }
    const closing = new RegExp(`^ *${open.fence[0] === "`" ? "`" : "~"}{${open.fence.length},}\\s*$`)
    if (!closing.test(line)) {
      body.push(line.startsWith(" ".repeat(open.indent)) ? line.slice(open.indent) : line.trimStart())
      return
    }
    const [language = "", ...flags] = open.info.split(/\s+/)
    if (language === "ts" || language === "typescript") {
      const slug = readme.replace(/(^|\/)README\.md$/, "$1README").replace(/[^A-Za-z0-9]+/g, "-")
      blocks.push({
        readme,
        fenceLine: open.line,
        code: body.join("\n"),
        checked: !flags.includes(optOut),
        file: path.join(snippetDir, `${slug}-L${open.line}.mts`)
      })
    }
    open = undefined
  })
  if (open !== undefined) throw new Error(`${readme}:${(open as { line: number }).line}: a fenced block is never closed`)
  return blocks
}

const allBlocks: Array<Block> = readmes().flatMap((readme) => blocksOf(readme, fs.readFileSync(path.join(root, readme), "utf8")))
const checkedBlocks = allBlocks.filter((block) => block.checked)

const compilerOptions = {
  strict: true,
  target: "ES2022",
  lib: ["ES2023"],
  module: "NodeNext",
  moduleResolution: "NodeNext",
  customConditions: ["@jitbox/source"],
  types: ["node"],
  noEmit: true,
  skipLibCheck: true
} as const

interface Manifest {
  readonly dependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
  readonly devDependencies?: Record<string, string>
}

/**
 * Third-party packages a snippet may import that the workspace root does not have: every
 * dependency of the jitbox packages, then their peer dependencies (an adapter's library) and
 * development dependencies (what an example uses alongside, LangGraph say), linked from the
 * package that has it.
 */
const linkDependencies = (): void => {
  const modules = path.join(snippetDir, "node_modules")
  fs.mkdirSync(modules, { recursive: true })
  const manifests = fs.readdirSync(path.join(root, "packages"))
    .filter((pkg) => fs.existsSync(path.join(root, "packages", pkg, "package.json")))
    .map((pkg) => [pkg, JSON.parse(fs.readFileSync(path.join(root, "packages", pkg, "package.json"), "utf8")) as Manifest] as const)
  const kinds = ["dependencies", "peerDependencies", "devDependencies"] as const
  for (const kind of kinds) for (const [pkg, manifest] of manifests) {
    for (const name of Object.keys(manifest[kind] ?? {})) {
      if (name.startsWith("@jitbox/") || fs.existsSync(path.join(root, "node_modules", name))) continue
      const link = path.join(modules, name)
      const target = path.join(root, "packages", pkg, "node_modules", name)
      if (fs.existsSync(link) || !fs.existsSync(target)) continue
      fs.mkdirSync(path.dirname(link), { recursive: true })
      fs.symlinkSync(fs.realpathSync(target), link, "dir")
    }
  }
}

/** Compiler errors per block, with README lines. */
const check = (): Map<Block, Array<string>> => {
  fs.rmSync(snippetDir, { recursive: true, force: true })
  fs.mkdirSync(snippetDir, { recursive: true })
  linkDependencies()
  for (const block of checkedBlocks) {
    // `export {}` last, so each block is a module and keeps its own line numbers
    fs.writeFileSync(block.file, `${block.code}\nexport {}\n`)
  }
  fs.writeFileSync(
    path.join(snippetDir, "tsconfig.json"),
    `${JSON.stringify({ compilerOptions, include: ["*.mts"] }, null, 2)}\n`
  )
  const parsed = ts.parseJsonConfigFileContent({ compilerOptions }, ts.sys, snippetDir)
  expect(parsed.errors.map((error) => ts.flattenDiagnosticMessageText(error.messageText, "\n"))).toEqual([])
  const program = ts.createProgram(checkedBlocks.map((block) => block.file), parsed.options)
  const global = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()]
  expect(global.map((error) => ts.flattenDiagnosticMessageText(error.messageText, "\n"))).toEqual([])
  const errors = new Map<Block, Array<string>>()
  for (const block of checkedBlocks) {
    const source = program.getSourceFile(block.file)
    if (source === undefined) {
      errors.set(block, ["the compiler did not read the block"])
      continue
    }
    const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]
    errors.set(
      block,
      diagnostics.map((diagnostic) => {
        const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")
        if (diagnostic.start === undefined) return `TS${diagnostic.code}: ${text}`
        const { character, line } = source.getLineAndCharacterOfPosition(diagnostic.start)
        return `${block.readme}:${block.fenceLine + 1 + line}:${character + 1}: TS${diagnostic.code}: ${text}`
      })
    )
  }
  return errors
}

describe("README TypeScript snippets", () => {
  let errors: Map<Block, Array<string>>

  beforeAll(() => {
    errors = check()
  }, 120_000)

  it("finds the blocks, and opts out only a few fragments", () => {
    expect(allBlocks.filter((block) => block.readme === "README.md").length).toBeGreaterThan(3)
    expect(allBlocks.length - checkedBlocks.length).toBeLessThanOrEqual(Math.ceil(allBlocks.length / 5))
  })

  it.each(checkedBlocks.map((block) => [`${block.readme}:${block.fenceLine}`, block] as const))(
    "%s type-checks",
    (_where, block) => {
      const found = errors.get(block) ?? []
      expect(found, `${block.readme}, block at line ${block.fenceLine}:\n${found.join("\n")}`).toEqual([])
    }
  )
})
