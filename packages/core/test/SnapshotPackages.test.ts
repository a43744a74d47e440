/**
 * Validation-only loading applies the package rules of tool creation (CodePackage.check, checkName,
 * the entry-file rule): a snapshot that activation would refuse is already refused by
 * `fromJson`/`load`, with a `SnapshotError` naming the field, and without running anything.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { JitHarnessSnapshot } from "../src/index.js"

const source = `export const twice = tool({ description: "d", guidelines: "g" }, ({ value }) => value * 2)\n`

const snapshotWith = (record: Record<string, unknown>, format = 2) => ({
  format_version: format,
  tools: [{ name: "twice", language: "typescript", entrypoint: "twice", source, ...record }],
  text_tools: []
})

const thrown = (f: () => unknown): any => {
  try {
    f()
  } catch (error) {
    return error
  }
  throw new Error("expected an exception")
}

const invalid = (snapshot: unknown) => {
  const error = thrown(() => JitHarnessSnapshot.fromJson(JSON.stringify(snapshot)))
  expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
  expect(error.reason).toBe("Invalid")
  return error as JitHarnessSnapshot.SnapshotError
}

let directory: string
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), "jitbox-snapshot-packages-"))
})
afterEach(async () => {
  await rm(directory, { recursive: true, force: true })
})

describe("fromJson and load apply the package rules of create_tool", () => {
  it.each([
    ["a '..' segment", "../x.ts", /must not contain '\.\.'/],
    ["a nested '..' segment", "parts/../../x.ts", /must not contain '\.\.'/],
    ["an absolute path", "/etc/x.ts", /must be relative/],
    ["a backslash", "parts\\x.ts", /must be relative/],
    ["an empty segment", "parts//x.ts", /empty segments/],
    ["a segment that is not an identifier", "my-parts/x.ts", /not an identifier/],
    ["an extension of another language", "helper.py", /must end with \.ts, \.js, \.json/]
  ])("a helper path with %s is refused, naming tools.0.files[path]", (_, path, detail) => {
    const error = invalid(snapshotWith({ files: { [path]: "export const x = 1" } }))
    expect(error.message).toContain(`tools.0.files[${JSON.stringify(path)}]: `)
    expect(error.message).toMatch(detail)
  })

  it("load refuses a '..' path too, naming the file and the field", async () => {
    const path = join(directory, "escape.json")
    await writeFile(path, JSON.stringify(snapshotWith({ files: { "../x.ts": "export const x = 1" } })))
    const error = await JitHarnessSnapshot.load(path).then(() => undefined, (e: unknown) => e) as any
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect(error.path).toBe(path)
    expect(error.message).toContain(`tools.0.files["../x.ts"]: file path '../x.ts' must not contain '..'`)
  })

  it("a package with more than 32 files, entry included, is refused at tools.0.files", () => {
    const files = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`f${i}.ts`, `export const x = ${i}`]))
    const error = invalid(snapshotWith({ files }))
    expect(error.message).toMatch(/tools\.0\.files: a package holds at most 32 files, entry point included; this one has 33/)
    // 31 helpers plus the entry file is the largest package there is
    delete files["f0.ts"]
    expect(JitHarnessSnapshot.fromJson(JSON.stringify(snapshotWith({ files }))).tools[0]!.files).toEqual(files)
  })

  it("a helper file over 200,000 code points is refused at its path; exactly 200,000 astral code points load", () => {
    const error = invalid(snapshotWith({ files: { "big.ts": "x".repeat(200_001) } }))
    expect(error.message).toContain(`tools.0.files["big.ts"]: file 'big.ts' has more than 200000 characters`)
    // 400,000 UTF-16 units, but 200,000 code points: the limit counts code points
    const astral = "😀".repeat(200_000)
    expect(JitHarnessSnapshot.fromJson(JSON.stringify(snapshotWith({ files: { "big.ts": astral } }))).tools).toHaveLength(1)
  })

  it("an entry source over 200,000 code points is refused at tools.0.source", () => {
    const error = invalid(snapshotWith({ source: "x".repeat(200_001) }, 1))
    expect(error.message).toContain("tools.0.source: file 'index.ts' has more than 200000 characters")
  })

  it.each([
    ["typescript", "index.ts"],
    ["javascript", "index.js"],
    ["python", "__init__.py"],
    ["bash", "main.sh"]
  ])("a %s package whose files repeat the entry module %s is refused: the entry is source", (language, entry) => {
    const error = invalid(snapshotWith({ language, files: { [entry]: "x" } }))
    expect(error.message).toContain(`tools.0.files[${JSON.stringify(entry)}]: `)
    expect(error.message).toMatch(/entry module/)
  })

  it("paths are checked for the record's own language", () => {
    const error = invalid(snapshotWith({ language: "python", source: "x = 1", files: { "helper.ts": "x" } }))
    expect(error.message).toContain(`tools.0.files["helper.ts"]: file path 'helper.ts' must end with .py for python`)
    expect(JitHarnessSnapshot.fromJson(JSON.stringify(snapshotWith({ language: "python", source: "x = 1", files: { "pkg/helper.py": "y = 2" } }))).tools)
      .toHaveLength(1)
  })

  it.each([
    ["tools.0.name", (s: any) => (s.tools[0].name = "9lives")],
    ["tools.0.name", (s: any) => (s.tools[0].name = "x".repeat(65))],
    ["text_tools.0.name", (s: any) => s.text_tools.push({ name: "has space", description: "d", markdown: "m" })],
    ["unloaded_tools.0", (s: any) => (s.unloaded_tools = [""])]
  ])("names follow checkName: %s", (field, edit) => {
    const snapshot: any = snapshotWith({})
    edit(snapshot)
    const error = invalid(snapshot)
    expect(error.message).toContain(`${field}: tool name`)
    expect(error.message).toMatch(/must match/)
  })

  it("the error of the second tool names tools.1", () => {
    const snapshot: any = snapshotWith({})
    snapshot.tools.push({ ...snapshot.tools[0], name: "other", files: { "/abs.ts": "x" } })
    expect(invalid(snapshot).message).toContain(`tools.1.files["/abs.ts"]: `)
  })

  it("toJson refuses what fromJson would refuse, with a SnapshotError", () => {
    const bad = snapshotWith({ files: { "../x.ts": "x" } }) as unknown as JitHarnessSnapshot.JitHarnessSnapshot
    const error = thrown(() => JitHarnessSnapshot.toJson(bad))
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect(error.message).toContain(`tools.0.files["../x.ts"]: `)
  })

  it("a valid multi-file package still loads unchanged", () => {
    const snapshot = snapshotWith({ files: { "parts/prefix.ts": "export const p = 1", "data.json": "{}" } })
    expect(JitHarnessSnapshot.fromJson(JSON.stringify(snapshot))).toEqual({ ...snapshot, base_tools: [], unloaded_tools: [] })
  })
})
