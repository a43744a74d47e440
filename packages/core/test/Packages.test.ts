import { describe, expect, it } from "@effect/vitest"
import { fileURLToPath } from "node:url"
import type { CodeRunnerShape } from "../src/CodeRunner.js"
import { PackageError } from "../src/HarnessError.js"
import { JitHarness } from "../src/JitHarness.js"
import { tool } from "../src/Tool.js"
import type { CreateToolRequest, UpdateToolRequest } from "../src/ToolRequest.js"
import { add, codeTool, deferred, makeHarness, rejection, twiceSource } from "./fixtures.js"

const disk: Record<string, string> = { "a.txt": "hello", "b.txt": "😀😀x" }
const readFile = tool({
  name: "read_file",
  description: "Reads a file.",
  guidelines: "Use to read one file.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
}, ({ path }: { path: string }) => disk[path] ?? "")

/** The reference's package example (CON-23, PKG-01..03), in TypeScript. */
const entry = `
import { summarize } from "./batch"
export const summarize_files = tool({
  description: "Read many files in code and return one compact summary.",
  guidelines: "Use to summarize every requested file in one call.",
  parameters: { type: "object", properties: { paths: { type: "array", items: { type: "string" } } }, required: ["paths"] }
}, async ({ paths }: { paths: string[] }) => await summarize(harness, paths))
`
const batch = `
import { parse } from "./parsers"
import { split } from "./parsers/lines"
export async function summarize(h: { callTool(name: string, args: unknown): Promise<unknown> }, paths: string[]): Promise<string> {
  const lines: string[] = []
  for (const path of parse(paths)) {
    const text = await h.callTool("read_file", { path }) as string
    lines.push(\`\${path}: \${text.length} characters\`)
  }
  return split(lines)
}
`
const parsers = `export const parse = (paths: string[]) => paths.filter((path) => path !== "")\n`
const lines = `export const split = (items: string[]) => items.join("\\n")\n`
const packageFiles = { "batch.ts": batch, "parsers/index.ts": parsers, "parsers/lines.ts": lines }

const withPackage = async () => {
  const harness = new JitHarness({ tools: [add, readFile] })
  await harness.createTool({ entrypoint: "summarize_files", source: entry, files: packageFiles })
  return harness
}

const valueTool = (name: string, value: string) => codeTool(name, JSON.stringify(value))

describe("packages (PKG-01..13)", () => {
  it("runs a package whose entry reaches helpers and sub-folders through relative imports (PKG-01..03, PKG-05, CON-23)", async () => {
    const harness = await withPackage()
    expect(await harness.callTool("summarize_files", { paths: ["a.txt", "", "b.txt"] })).toBe("a.txt: 5 characters\nb.txt: 5 characters")
    expect(harness.profile("read_file").calls.map((call) => call.caller_tool_name)).toEqual(["summarize_files", "summarize_files"])
  })

  it("runs a JavaScript package with .mjs and .json files", async () => {
    const harness = makeHarness()
    const source = `
import { greet } from "./lib/greet.mjs"
import data from "./data.json"
export const hello = tool({ description: "Greets.", guidelines: "Use in tests." }, async () => greet(data.who))
`
    await harness.createTool({
      entrypoint: "hello",
      language: "javascript",
      source,
      files: { "lib/greet.mjs": `export const greet = (who) => "hello " + who`, "data.json": `{ "who": "𝔘" }` }
    })
    expect(await harness.callTool("hello")).toBe("hello 𝔘")
    expect(harness.source("hello")).toMatchObject({ kind: "code", language: "javascript", entry_file: "index.js" })
  })

  it("inspect_tool lists every file with its code-point count, entry included (PKG-07, MGMT-25)", async () => {
    const harness = await withPackage()
    const inspected = (await harness.callTool("inspect_tool", { name: "summarize_files" })) as { files: unknown }
    expect(inspected.files).toEqual([
      { path: "batch.ts", chars: batch.length },
      { path: "index.ts", chars: entry.length },
      { path: "parsers/index.ts", chars: parsers.length },
      { path: "parsers/lines.ts", chars: lines.length }
    ])
  })

  it("read_tool_source pages one file, the entry module by default (PKG-07, MGMT-08)", async () => {
    const harness = await withPackage()
    expect(await harness.callTool("read_tool_source", { name: "summarize_files" })).toMatchObject({ path: "index.ts", content: entry })
    expect(await harness.callTool("read_tool_source", { name: "summarize_files", path: "parsers/lines.ts" })).toMatchObject({
      path: "parsers/lines.ts",
      content: lines,
      next_offset: null
    })
    expect(await rejection(harness.callTool("read_tool_source", { name: "summarize_files", path: "nope.ts" }))).toMatchObject({
      _tag: "InvalidToolRequest",
      reason: "UnknownPath"
    })
  })

  it("update_tool adds and replaces the files sent, deletes the ones named and keeps the rest (PKG-08, MGMT-03)", async () => {
    const harness = await withPackage()
    const before = harness.definition("summarize_files").version_id
    const newLines = `import { suffix } from "./suffix"\nexport const split = (items: string[]) => items.join(" | ") + suffix\n`
    expect(await harness.updateTool({
      name: "summarize_files",
      files: { "parsers/lines.ts": newLines, "parsers/suffix.ts": `export const suffix = "."` }
    })).toEqual({ name: "summarize_files", status: "loaded" })
    expect(await harness.callTool("summarize_files", { paths: ["a.txt", "b.txt"] })).toBe("a.txt: 5 characters | b.txt: 5 characters.")
    const source = harness.source("summarize_files")
    expect(source.kind === "code" && source.files).toEqual({
      "batch.ts": batch,
      "index.ts": entry,
      "parsers/index.ts": parsers,
      "parsers/lines.ts": newLines,
      "parsers/suffix.ts": `export const suffix = "."`
    })
    expect(harness.definition("summarize_files").version_id).not.toBe(before)
    await harness.updateTool({ name: "summarize_files", files: { "parsers/lines.ts": lines }, remove: ["parsers/suffix.ts"] })
    const after = harness.source("summarize_files")
    expect(after.kind === "code" && Object.keys(after.files)).toEqual(["batch.ts", "index.ts", "parsers/index.ts", "parsers/lines.ts"])
    expect(harness.definition("summarize_files").version_id).toBe(before)
  })

  it("a cross-file refactor applies as one version (PKG-09)", async () => {
    const harness = await withPackage()
    // Renaming an export in one file and its use in another: each half alone would not link.
    await harness.updateTool({
      name: "summarize_files",
      files: {
        "parsers/lines.ts": `export const joinLines = (items: string[]) => items.join(";")\n`,
        "batch.ts": batch.replace(`import { split } from "./parsers/lines"`, `import { joinLines as split } from "./parsers/lines"`)
      }
    })
    expect(await harness.callTool("summarize_files", { paths: ["a.txt", "b.txt"] })).toBe("a.txt: 5 characters;b.txt: 5 characters")
  })

  it("every version is its own module: an update resets module state, harnesses never share it (PKG-11, D-03, X-08)", async () => {
    const counter = codeTool("count", `++counter`, `let counter = 0`)
    const first = makeHarness()
    const second = makeHarness()
    await first.createTool({ entrypoint: "count", source: counter })
    await second.createTool({ entrypoint: "count", source: counter })
    expect(first.definition("count").version_id).toBe(second.definition("count").version_id)
    expect([await first.callTool("count"), await first.callTool("count"), await first.callTool("count")]).toEqual([1, 2, 3])
    expect(await second.callTool("count")).toBe(1)
    await first.updateTool({ name: "count", source: counter })
    expect(await first.callTool("count")).toBe(1)
    expect(await second.callTool("count")).toBe(2)
  })
})

interface FailureCase {
  readonly title: string
  readonly create: CreateToolRequest
  readonly update: Omit<UpdateToolRequest, "name">
  readonly expected: Record<string, unknown>
  readonly createExpected?: Record<string, unknown>
}

const good = valueTool("subject", "v1")
const failures: ReadonlyArray<FailureCase> = [
  {
    title: "a syntax error in a helper file (PKG-10, X-10)",
    create: { entrypoint: "subject", source: `import "./helper"\n${good}`, files: { "helper.ts": "export const = ;" } },
    update: { source: `import "./helper"\n${good}`, files: { "helper.ts": "export const = ;" } },
    expected: { _tag: "PackageError", reason: "CompileError", path: "helper.ts" }
  },
  {
    title: "a broken relative import (PKG-09, PKG-10)",
    create: { entrypoint: "subject", source: `import { gone } from "./gone"\n${codeTool("subject", "gone")}` },
    update: { source: `import { gone } from "./gone"\nconsole.log(gone)\n${good}` },
    expected: { _tag: "PackageError", reason: "ImportError" }
  },
  {
    title: "an unresolvable package import",
    create: { entrypoint: "subject", source: `import "no-such-package-anywhere"\n${good}` },
    update: { source: `import "no-such-package-anywhere"\n${good}` },
    expected: { _tag: "PackageError", reason: "ImportError" }
  },
  {
    title: "a missing entry point (CON-03)",
    create: { entrypoint: "subject", source: valueTool("other", "x") },
    update: { source: valueTool("other", "x") },
    expected: { _tag: "PackageError", reason: "MissingEntrypoint" }
  },
  {
    title: "an entry point that is not a tool(...) (CON-03, X-04)",
    create: { entrypoint: "subject", source: `export const subject = () => "v9"` },
    update: { source: `export const subject = () => "v9"` },
    expected: { _tag: "PackageError", reason: "EntrypointNotATool" }
  },
  {
    title: "module code that throws while loading",
    create: { entrypoint: "subject", source: `throw new Error("load failed")\n${good}` },
    update: { source: `throw new Error("load failed")\n${good}` },
    expected: { _tag: "PackageError", reason: "ActivationError" }
  },
  {
    title: "a file path with .. (D-08, PKG-04)",
    create: { entrypoint: "subject", source: good, files: { "../evil.ts": "export {}" } },
    update: { files: { "lib/../../evil.ts": "export {}" } },
    expected: { _tag: "PackageError", reason: "InvalidPath" }
  },
  {
    title: "an absolute file path (D-08)",
    create: { entrypoint: "subject", source: good, files: { "/etc/evil.ts": "export {}" } },
    update: { files: { "/evil.ts": "export {}" } },
    expected: { _tag: "PackageError", reason: "InvalidPath" }
  },
  {
    title: "a path segment that is not an identifier (PKG-04)",
    create: { entrypoint: "subject", source: good, files: { "my-lib/x.ts": "export {}" } },
    update: { files: { "lib//x.ts": "export {}" } },
    expected: { _tag: "PackageError", reason: "InvalidPath" }
  },
  {
    title: "a file with an extension the language does not allow (D-08)",
    create: { entrypoint: "subject", source: good, files: { "helper.py": "x = 1" } },
    update: { files: { "lib\\x.ts": "export {}" } },
    expected: { _tag: "PackageError", reason: "InvalidPath" }
  },
  {
    title: "the entry module sent as a file",
    create: { entrypoint: "subject", source: good, files: { "index.ts": good } },
    update: { remove: ["index.ts"] },
    expected: { reason: expect.stringMatching(/InvalidPath|FieldNotAllowed/) }
  },
  {
    title: "a 33rd file (PKG-06, D-08)",
    create: {
      entrypoint: "subject",
      source: good,
      files: Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`f${i}.ts`, `export const n${i} = ${i}`]))
    },
    update: { files: Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`f${i}.ts`, `export const n${i} = ${i}`])) },
    expected: { _tag: "PackageError", reason: "TooManyFiles" }
  },
  {
    title: "a file of 200,001 code points (PKG-06, D-04, D-08)",
    create: { entrypoint: "subject", source: good, files: { "big.ts": "/*" + "😀".repeat(199_997) + "*/" } },
    update: { files: { "big.ts": "/*" + "😀".repeat(199_997) + "*/" } },
    expected: { _tag: "PackageError", reason: "FileTooLarge", path: "big.ts" }
  },
  {
    title: "an entry module of 200,001 code points (D-08)",
    create: { entrypoint: "subject", source: good + "/*" + "x".repeat(200_001 - good.length - 4) + "*/" },
    update: { source: good + "/*" + "x".repeat(200_001 - good.length - 4) + "*/" },
    expected: { _tag: "PackageError", reason: "FileTooLarge", path: "index.ts" }
  },
  {
    title: "a kind change (D-13, AMB-23)",
    create: { kind: "text", entrypoint: "subject", name: "subject", source: "# no" } as CreateToolRequest,
    update: { kind: "text", markdown: "# now text" },
    expected: { _tag: "InvalidToolRequest" }
  },
  {
    title: "a language change, or a language the harness does not know",
    create: { entrypoint: "subject", language: "cobol" as never, source: good },
    createExpected: { _tag: "ValidationError" },
    update: { language: "javascript", source: good },
    expected: { _tag: "InvalidToolRequest", reason: "FieldNotAllowed" }
  }
]

describe("failed creates and updates (PKG-09, UNL-09, MGMT-27)", () => {
  it.each(failures)("create_tool with $title fails typed and registers nothing", async ({ create, createExpected, expected }) => {
    const harness = makeHarness()
    const error = await rejection(harness.callTool("create_tool", create))
    expect(error).toMatchObject(createExpected ?? expected)
    expect(harness.listTools().map((entry) => entry.name)).toEqual(["add"])
    expect(harness.profile("create_tool").calls[0]).toMatchObject({ status: "failed", error_type: error._tag })
    expect(harness.toolErrors("create_tool").errors[0]).toMatchObject({ error_type: error._tag, message: error.message })
  })

  it.each(failures)("update_tool with $title fails typed and the previous version still answers", async ({ expected, update }) => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "subject", source: good, files: { "keep.ts": "export const keep = 1" } })
    const before = harness.definition("subject")
    const sourceBefore = harness.source("subject")
    const error = await rejection(harness.callTool("update_tool", { name: "subject", ...update }))
    expect(error).toMatchObject(expected)
    expect(await harness.callTool("subject")).toBe("v1")
    expect(harness.definition("subject")).toEqual(before)
    expect(harness.source("subject")).toEqual(sourceBefore)
    expect(harness.toolErrors("update_tool").errors[0]).toMatchObject({ error_type: error._tag, status: "failed" })
  })

  it("a kind change on update is InvalidToolRequest KindChange (D-13)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "subject", source: good })
    await harness.createTool({ kind: "text", name: "steps", description: "Steps.", source: "# Steps" })
    expect(await rejection(harness.updateTool({ name: "subject", kind: "text", markdown: "# x" }))).toMatchObject({ reason: "KindChange" })
    expect(await rejection(harness.updateTool({ name: "steps", kind: "code", source: good }))).toMatchObject({ reason: "KindChange" })
  })

  it("accepts 32 files and a file of exactly 200,000 astral code points (PKG-06, D-04)", async () => {
    const harness = makeHarness()
    const files = Object.fromEntries(Array.from({ length: 31 }, (_, i) => [`f${i}.ts`, `export const n${i} = ${i}`]))
    await harness.createTool({ entrypoint: "subject", source: good, files })
    const big = "/*" + "😀".repeat(199_996) + "*/"
    expect(Array.from(big).length).toBe(200_000)
    await harness.updateTool({ name: "subject", files: { "f0.ts": big } })
    const inspected = (await harness.callTool("inspect_tool", { name: "subject" })) as { files: Array<{ path: string; chars: number }> }
    expect(inspected.files).toHaveLength(32)
    expect(inspected.files.find((file) => file.path === "f0.ts")?.chars).toBe(200_000)
  })

  it("name clashes: management names are reserved, base names protected, existing names need update_tool (MGMT-13, MGMT-14)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "subject", source: good })
    const clashes: ReadonlyArray<readonly [CreateToolRequest, string]> = [
      [{ entrypoint: "list_tools", source: valueTool("list_tools", "x") }, "Reserved"],
      [{ entrypoint: "x", name: "create_tool", source: valueTool("x", "x") }, "Reserved"],
      [{ kind: "text", name: "inspect_tool_errors", description: "d", source: "# x" }, "Reserved"],
      [{ entrypoint: "add", source: valueTool("add", "x") }, "BaseTool"],
      [{ kind: "text", name: "add", description: "d", source: "# x" }, "BaseTool"],
      [{ entrypoint: "subject", source: valueTool("subject", "v2") }, "Exists"]
    ]
    for (const [request, reason] of clashes) {
      expect(await rejection(harness.callTool("create_tool", request))).toMatchObject({ _tag: "NameConflict", reason })
    }
    expect(await harness.callTool("subject")).toBe("v1")
    expect(await harness.callTool("add", { left: 1, right: 1 })).toBe(2)
    expect(await harness.callTool("list_tools", {})).toMatchObject({ total: 2 })
  })
})

describe("examples run before a version is installed (D-20)", () => {
  const pair = codeTool("pair", `({ a: args.x, b: [args.x, "😀"] })`)

  it("installs a version whose examples deep-equal their expected output, key order ignored", async () => {
    const harness = makeHarness()
    const ack = await harness.callTool("create_tool", {
      entrypoint: "twice",
      source: twiceSource,
      examples: [{ input: { value: 2 }, expected_output: 4 }, { input: { value: -1 }, expected_output: -2 }]
    })
    expect(ack).toEqual({ name: "twice", status: "loaded" })
    await harness.createTool({ entrypoint: "pair", source: pair, examples: [{ input: { x: 1 }, expected_output: { b: [1, "😀"], a: 1 } }] })
    expect(await harness.callTool("pair", { x: 3 })).toEqual({ a: 3, b: [3, "😀"] })
  })

  it.each([
    ["a wrong output", [{ input: { x: 1 }, expected_output: { a: 2, b: [1, "😀"] } }], /example 1 returned/],
    ["a throwing example", [{ input: { x: 1, boom: true }, expected_output: null }], /threw/]
  ] as const)("refuses %s with ExampleFailed and installs nothing", async (_, examples, detail) => {
    const harness = makeHarness()
    const source = codeTool("pair", `args.boom ? (() => { throw new Error("boom") })() : ({ a: args.x, b: [args.x, "😀"] })`)
    const error = await rejection(harness.createTool({ entrypoint: "pair", source, examples: examples as never }))
    expect(error).toMatchObject({ _tag: "PackageError", reason: "ExampleFailed" })
    expect(error.message).toMatch(detail)
    expect(harness.listTools().map((entry) => entry.name)).toEqual(["add"])
  })

  it("refuses an example input the tool's schema rejects with ExampleFailed, and one that is no object as a bad request", async () => {
    const harness = makeHarness()
    const source = `export const half = tool({
  description: "Half of an even number.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }
}, ({ n }) => n / 2)`
    const invalid = await rejection(harness.createTool({ entrypoint: "half", source, examples: [{ input: { n: "two" }, expected_output: 1 }] }))
    expect(invalid).toMatchObject({ _tag: "PackageError", reason: "ExampleFailed" })
    expect(invalid.message).toMatch(/example 1: invalid input/)
    const malformed = await rejection(harness.createTool({ entrypoint: "half", source, examples: [{ input: "nope", expected_output: null }] as never }))
    expect(malformed).toMatchObject({ _tag: "InvalidToolRequest", reason: "FieldNotAllowed" })
    expect(malformed.message).toMatch(/^examples\.0\.input: /)
    expect(harness.listTools().map((entry) => entry.name)).toEqual(["add"])
  })

  it("an example that changes the toolbox runs within its change instead of waiting behind it forever (MGMT-15)", async () => {
    const harness = makeHarness()
    await harness.createTool({ kind: "text", name: "notes", description: "Notes.", source: "# n" })
    const source = codeTool("tidy", `(await harness.callTool("unload_tool", { name: "notes" }), "tidied")`)
    expect(await harness.createTool({ entrypoint: "tidy", source, examples: [{ input: {}, expected_output: "tidied" }] })).toEqual({
      name: "tidy",
      status: "loaded"
    })
    expect(harness.listTools().find((entry) => entry.name === "notes")?.state).toBe("unloaded")
    expect(await harness.loadTool("notes")).toEqual({ name: "notes", status: "loaded" })
    expect(await harness.callTool("tidy")).toBe("tidied")
    expect(await harness.loadTool("notes")).toEqual({ name: "notes", status: "loaded" })
  }, 5_000)

  it("an update whose example fails leaves the previous version answering", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "pair", source: pair })
    const error = await rejection(harness.updateTool({
      name: "pair",
      source: codeTool("pair", `"changed"`),
      examples: [{ input: { x: 1 }, expected_output: "something else" }]
    }))
    expect(error).toMatchObject({ reason: "ExampleFailed" })
    expect(await harness.callTool("pair", { x: 1 })).toEqual({ a: 1, b: [1, "😀"] })
  })
})

describe("code runners (D-01, D-02, CodeRunner contract)", () => {
  /** A runner in the shape an out-of-process one has: activations named by id, invocations by activation id. */
  const fakeRunner = (log: Array<string>, gate?: Promise<void>): CodeRunnerShape => {
    const versions = new Map<string, string>()
    return {
      languages: ["python", "bash"],
      activate: async (source) => {
        log.push(`activate ${source.language} ${source.entryFile}`)
        if (Object.values(source.files).some((text) => text.includes("SyntaxError"))) {
          throw new PackageError({ name: source.toolName, reason: "CompileError", detail: "SyntaxError: invalid syntax" })
        }
        versions.set(source.activationId, source.files[source.entryFile]!)
        return {}
      },
      invoke: async ({ activationId, args }) => {
        if (gate !== undefined) await gate
        return { version: versions.get(activationId), args }
      },
      release: async (activationId) => {
        log.push(`dispose ${versions.get(activationId)}`)
        versions.delete(activationId)
      }
    }
  }
  const declared = {
    description: "A tool whose code cannot declare itself.",
    guidelines: "Use in tests.",
    parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }
  }

  it("a registered runner serves its language; the request declares what the code cannot", async () => {
    const log: Array<string> = []
    const harness = new JitHarness({ runners: [fakeRunner(log)] })
    await harness.callTool("create_tool", { language: "python", entrypoint: "py", source: "v1", ...declared })
    expect(await harness.callTool("py", { n: 1 })).toEqual({ version: "v1", args: { n: 1 } })
    expect(await rejection(harness.callTool("py", { n: "one" }))).toMatchObject({ _tag: "ValidationError" })
    expect(harness.definition("py")).toMatchObject({ language: "python", entrypoint: "py", description: declared.description, files: [{ path: "__init__.py", chars: 2 }] })
    await harness.callTool("create_tool", { language: "bash", name: "sh", source: "v1", ...declared })
    expect(harness.definition("sh")).toMatchObject({ language: "bash", entrypoint: "main", files: [{ path: "main.sh", chars: 2 }] })
    expect(log).toEqual(["activate python __init__.py", "activate bash main.sh"])
  })

  it("missing declarations are refused and the activated version is released", async () => {
    const log: Array<string> = []
    const harness = new JitHarness({ runners: [fakeRunner(log)] })
    const error = await rejection(harness.createTool({ language: "python", entrypoint: "py", source: "v1", description: "No guidelines." }))
    expect(error).toMatchObject({ _tag: "ToolDefinitionError", reason: "EmptyGuidelines" })
    expect(log).toEqual(["activate python __init__.py", "dispose v1"])
    expect(await rejection(harness.createTool({ language: "python", entrypoint: "py", source: "SyntaxError", ...declared }))).toMatchObject({ reason: "CompileError" })
  })

  it("a replaced version is released once its running invocations finish (UNL-08)", async () => {
    const log: Array<string> = []
    const gate = deferred<void>()
    const harness = new JitHarness({ runners: [fakeRunner(log, gate.promise)] })
    await harness.createTool({ language: "python", entrypoint: "py", source: "v1", ...declared })
    const running = harness.callTool("py", { n: 1 })
    await harness.updateTool({ name: "py", source: "v2" })
    expect(log).not.toContain("dispose v1")
    gate.resolve()
    expect(await running).toEqual({ version: "v1", args: { n: 1 } })
    await Promise.resolve()
    expect(log).toContain("dispose v1")
    expect(await harness.callTool("py", { n: 2 })).toEqual({ version: "v2", args: { n: 2 } })
    await harness.updateTool({ name: "py", source: "v3" })
    expect(log).toContain("dispose v2")
    await harness.release()
    expect(log.at(-1)).toBe("dispose v3")
  })

  it("a call refused by validation does not count as running: the old version stays until the real call ends (UNL-08)", async () => {
    const log: Array<string> = []
    const gate = deferred<void>()
    const harness = new JitHarness({ runners: [fakeRunner(log, gate.promise)] })
    await harness.createTool({ language: "python", entrypoint: "py", source: "v1", ...declared })
    expect(await rejection(harness.callTool("py", { n: "not a number" }))).toMatchObject({ _tag: "ValidationError" })
    const running = harness.callTool("py", { n: 1 })
    await harness.updateTool({ name: "py", source: "v2" })
    expect(log).not.toContain("dispose v1")
    gate.resolve()
    expect(await running).toEqual({ version: "v1", args: { n: 1 } })
    await Promise.resolve()
    expect(log).toContain("dispose v1")
    await harness.release()
  })
})
