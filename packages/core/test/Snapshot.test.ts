/**
 * Snapshots (SNAP-01..20, D-17): what a snapshot holds, how it is written and read, and how it is
 * activated. Tools whose modules have side effects at top level show when a module really runs.
 */
import { spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { HarnessError, JitHarness, JitHarnessSnapshot, tool } from "../src/index.js"

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url))
const coreIndex = fileURLToPath(new URL("../src/index.ts", import.meta.url))

const add = tool({
  name: "add",
  description: "Add two integers.",
  guidelines: "Use for integer addition.",
  parameters: {
    type: "object",
    properties: { left: { type: "integer" }, right: { type: "integer" } },
    required: ["left", "right"]
  }
}, ({ left, right }: { left: number; right: number }) => left + right)

const twiceSource = `export const twice = tool({
  description: "Add the same integer twice.",
  guidelines: "Use to add an integer to itself.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }) => await harness.callTool("add", { left: value, right: value }))
`

/** A module that counts its activations in `globalThis[key]` and its own calls in a module global. */
const counterSource = (entrypoint: string, key: string) => `const key = ${JSON.stringify(key)}
globalThis[key] = (globalThis[key] ?? 0) + 1
let count = 0
export const ${entrypoint} = tool({ description: "Count this module's calls.", guidelines: "Use in tests." }, () => ++count)
`

/** A module that creates `marker` when it is activated. */
const markerSource = (entrypoint: string, marker: string) => `import { writeFileSync } from "node:fs"
writeFileSync(${JSON.stringify(marker)}, "activated")
export const ${entrypoint} = tool({ description: "Answer marked.", guidelines: "Use in tests." }, () => "marked")
`

const activations = (key: string): number => ((globalThis as Record<string, unknown>)[key] as number | undefined) ?? 0
let keys = 0
const freshKey = () => `__jitbox_snapshot_test_${process.pid}_${++keys}`

const codeRecord = (name: string, source: string): JitHarnessSnapshot.CodeToolRecord => ({
  name,
  language: "typescript",
  entrypoint: name,
  source
})

const snapshotOf = (
  tools: ReadonlyArray<JitHarnessSnapshot.CodeToolRecord>,
  rest: Partial<JitHarnessSnapshot.JitHarnessSnapshot> = {}
): JitHarnessSnapshot.JitHarnessSnapshot => ({
  format_version: 1,
  tools,
  text_tools: [],
  base_tools: [],
  unloaded_tools: [],
  ...rest
})

const rejection = async (promise: Promise<unknown>): Promise<any> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error("expected a rejection, but the promise resolved")
}

const thrown = (f: () => unknown): any => {
  try {
    f()
  } catch (error) {
    return error
  }
  throw new Error("expected an exception")
}

let directory: string
const harnesses: Array<JitHarness> = []
const track = (harness: JitHarness): JitHarness => {
  harnesses.push(harness)
  return harness
}

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), "jitbox-snapshot-test-"))
})

afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((harness) => harness.release()))
  await rm(directory, { recursive: true, force: true })
})

describe("Snapshot contents (SNAP-06, SNAP-07, SNAP-10, D-17)", () => {
  it("D-17 is format 1 for single-file tools and always writes text_tools, even empty", async () => {
    const harness = track(new JitHarness({ tools: [add] }))
    await harness.createTool({ entrypoint: "twice", source: twiceSource })
    const snapshot = harness.snapshot()
    expect(snapshot.format_version).toBe(1)
    const path = join(directory, "harness.json")
    await harness.save(path)
    const written = JSON.parse(await readFile(path, "utf8"))
    expect(written.format_version).toBe(1)
    expect(written).toHaveProperty("text_tools")
    expect(written.text_tools).toEqual([])
    expect(written.tools).toEqual([{
      name: "twice",
      language: "typescript",
      entrypoint: "twice",
      source: twiceSource
    }])
  })

  it("D-17 SNAP-20 is format 2 once a tool has more than one file, and the package survives a round trip", async () => {
    const harness = track(new JitHarness({ tools: [add] }))
    await harness.createTool({ entrypoint: "twice", source: twiceSource })
    await harness.createTool({
      entrypoint: "label",
      source: `import { prefix } from "./parts/prefix"
export const label = tool({ description: "Label a value.", guidelines: "Use in tests." }, ({ value }) => prefix + String(value))`,
      files: { "parts/prefix.ts": `export const prefix = "value: "` }
    })
    const path = join(directory, "harness.json")
    await harness.save(path)
    const written = JSON.parse(await readFile(path, "utf8"))
    expect(written.format_version).toBe(2)
    expect(written.tools.find((t: { name: string }) => t.name === "label").files).toEqual({
      "parts/prefix.ts": `export const prefix = "value: "`
    })
    expect(written.tools.find((t: { name: string }) => t.name === "twice").files).toBeUndefined()

    const restored = track(await JitHarness.fromSnapshot(await JitHarnessSnapshot.load(path), { tools: [add] }))
    expect(await restored.callTool("label", { value: 7 })).toBe("value: 7")
    expect(restored.source("label")).toEqual(harness.source("label"))
    expect(restored.snapshot()).toEqual(harness.snapshot())
  })

  it("D-17 SNAP-11 a format-1 file without text_tools loads with none", async () => {
    const path = join(directory, "old.json")
    await writeFile(path, JSON.stringify({ format_version: 1, tools: [codeRecord("twice", twiceSource)] }))
    const snapshot = await JitHarnessSnapshot.load(path)
    expect(snapshot.text_tools).toEqual([])
    const harness = track(await JitHarness.fromSnapshot(snapshot, { tools: [add] }))
    expect(harness.listTools().filter((t) => t.origin === "text")).toEqual([])
    expect(await harness.callTool("twice", { value: 4 })).toBe(8)
  })

  it("D-17 a format-1 snapshot cannot hold a multi-file tool", () => {
    const json = JSON.stringify({
      format_version: 1,
      tools: [{ ...codeRecord("twice", twiceSource), files: { "helper.ts": "export const x = 1" } }],
      text_tools: []
    })
    const error = thrown(() => JitHarnessSnapshot.fromJson(json))
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect(error.reason).toBe("Invalid")
    expect(error.message).toMatch(/format_version/)
  })

  it("SNAP-06 SNAP-10 keeps code records, text records, base names and unload marks", async () => {
    const harness = track(new JitHarness({ tools: [add] }))
    await harness.createTool({ entrypoint: "twice", source: twiceSource, description: "Declared description." })
    await harness.createTool({ kind: "text", name: "recipe", description: "How to double.", source: "# Double\n1. twice" })
    await harness.createTool({ kind: "text", name: "notes", description: "Notes.", source: "keep" })
    await harness.unloadTool("twice")
    await harness.unloadTool("recipe")
    const snapshot = harness.snapshot()
    expect(snapshot.base_tools).toEqual(["add"])
    expect(snapshot.unloaded_tools).toEqual(["recipe", "twice"])
    expect(snapshot.text_tools).toEqual([
      { name: "recipe", description: "How to double.", markdown: "# Double\n1. twice" },
      { name: "notes", description: "Notes.", markdown: "keep" }
    ])
    expect(snapshot.tools).toEqual([{ ...codeRecord("twice", twiceSource), description: "Declared description." }])

    const restored = track(await JitHarness.fromSnapshot(snapshot))
    const states = Object.fromEntries(restored.listTools().map((t) => [t.name, `${t.origin}:${t.state}`]))
    expect(states).toEqual({ twice: "code:unloaded", recipe: "text:unloaded", notes: "text:loaded", add: "base:unbound" })
    expect(restored.snapshot()).toEqual(snapshot)
  })

  it("SNAP-07 holds no measurements, errors or module state: only the five documented fields", async () => {
    const key = freshKey()
    const harness = track(new JitHarness({ tools: [add] }))
    await harness.createTool({ entrypoint: "counter", source: counterSource("counter", key) })
    await harness.callTool("counter", {})
    await harness.callTool("counter", {})
    await rejection(harness.callTool("add", { left: "x" }))
    const json = JitHarnessSnapshot.toJson(harness.snapshot())
    expect(Object.keys(JSON.parse(json)).sort()).toEqual(["base_tools", "format_version", "text_tools", "tools", "unloaded_tools"])
    expect(json).not.toMatch(/ValidationError|call_id|duration|completed/)
  })
})

describe("Saving (SNAP-01, SNAP-04, SNAP-05)", () => {
  it("SNAP-01 nothing is written until the application saves", async () => {
    const harness = track(new JitHarness({ tools: [add] }))
    await harness.createTool({ entrypoint: "twice", source: twiceSource })
    await harness.callTool("twice", { value: 1 })
    expect(await readdir(directory)).toEqual([])
    await harness.save(join(directory, "harness.json"))
    expect(await readdir(directory)).toEqual(["harness.json"])
  })

  it("SNAP-04 a missing parent directory is a typed SnapshotError and nothing is created", async () => {
    const harness = track(new JitHarness({ tools: [add] }))
    await harness.createTool({ entrypoint: "twice", source: twiceSource })
    const path = join(directory, "missing", "harness.json")
    const error = await rejection(harness.save(path))
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect(error._tag).toBe("SnapshotError")
    expect(error.reason).toBe("NotFound")
    expect(error.path).toBe(path)
    expect(existsSync(join(directory, "missing"))).toBe(false)
    expect(await readdir(directory)).toEqual([])
  })

  it("SNAP-05 replaces the file whole and leaves no temporary file behind", async () => {
    const harness = track(new JitHarness({ tools: [add] }))
    const path = join(directory, "harness.json")
    await writeFile(path, "previous content that is longer than nothing at all ".repeat(200))
    await harness.createTool({ entrypoint: "twice", source: twiceSource })
    await harness.save(path)
    expect(await readFile(path, "utf8")).toBe(JitHarnessSnapshot.toJson(harness.snapshot()))
    expect(await readdir(directory)).toEqual(["harness.json"])
  })

  it("SNAP-05 a write that fails halfway leaves the previous file intact and no temporary file", async () => {
    const path = join(directory, "harness.json")
    await writeFile(path, "the previous snapshot")
    // Encoding fails after the temporary file was opened: the write is interrupted.
    const broken = { ...snapshotOf([]), format_version: 3 } as unknown as JitHarnessSnapshot.JitHarnessSnapshot
    const error = await rejection(JitHarnessSnapshot.save(broken, path))
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect(await readFile(path, "utf8")).toBe("the previous snapshot")
    expect(await readdir(directory)).toEqual(["harness.json"])
  })

  it("SNAP-05 a rename that fails removes the temporary file", async () => {
    const path = join(directory, "harness.json")
    await mkdir(path) // a directory where the file should go: rename fails
    const error = await rejection(JitHarnessSnapshot.save(snapshotOf([]), path))
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect(error.reason).toBe("Io")
    expect(await readdir(directory)).toEqual(["harness.json"])
    expect(await readdir(path)).toEqual([])
  })
})

describe("Loading validates and never executes (SNAP-12, SNAP-17)", () => {
  it("SNAP-12 load, fromJson and toJson run no module code; activation does", async () => {
    const marker = join(directory, "activated.txt")
    const path = join(directory, "harness.json")
    await writeFile(path, JSON.stringify(snapshotOf([codeRecord("marked", markerSource("marked", marker))])))
    const loaded = await JitHarnessSnapshot.load(path)
    const again = JitHarnessSnapshot.fromJson(JitHarnessSnapshot.toJson(loaded))
    expect(again).toEqual(loaded)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(existsSync(marker)).toBe(false)

    const harness = track(await JitHarness.fromSnapshot(loaded))
    expect(existsSync(marker)).toBe(true)
    expect(await harness.callTool("marked", {})).toBe("marked")
  })

  it("SNAP-17 toJson and fromJson round-trip a snapshot for application storage", async () => {
    const harness = track(new JitHarness({ tools: [add] }))
    await harness.createTool({ entrypoint: "twice", source: twiceSource })
    await harness.createTool({ kind: "text", name: "recipe", description: "How to double.", source: "1. twice" })
    await harness.unloadTool("recipe")
    const snapshot = harness.snapshot()
    const json = JitHarnessSnapshot.toJson(snapshot)
    expect(JitHarnessSnapshot.fromJson(json)).toEqual(snapshot)
    const restored = track(await JitHarness.fromSnapshot(JitHarnessSnapshot.fromJson(json), { tools: [add] }))
    expect(await restored.callTool("twice", { value: 21 })).toBe(42)
  })

  it("a missing file is a SnapshotError NotFound", async () => {
    const error = await rejection(JitHarnessSnapshot.load(join(directory, "nothing.json")))
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect(error.reason).toBe("NotFound")
  })
})

describe("Damaged snapshots", () => {
  const valid = () => snapshotOf([codeRecord("twice", twiceSource)], { base_tools: ["add"] })

  it("a truncated file is a SnapshotError naming the file", async () => {
    const path = join(directory, "truncated.json")
    const text = JitHarnessSnapshot.toJson(valid())
    await writeFile(path, text.slice(0, Math.floor(text.length / 2)))
    const error = await rejection(JitHarnessSnapshot.load(path))
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect(error.reason).toBe("Invalid")
    expect(error.path).toBe(path)
    expect(error.message).toContain(path)
  })

  it.each([
    ["a removed entrypoint", "tools.0.entrypoint", (s: any) => delete s.tools[0].entrypoint],
    ["an unknown language", "tools.0.language", (s: any) => (s.tools[0].language = "cobol")],
    ["a source that is not a string", "tools.0.source", (s: any) => (s.tools[0].source = 42)],
    ["an unknown format version", "format_version", (s: any) => (s.format_version = 3)],
    ["an invalid base tool name", "base_tools.0", (s: any) => (s.base_tools[0] = "no spaces allowed")],
    ["a field nobody wrote", "tools.0.author", (s: any) => (s.tools[0].author = "me")],
    ["a text tool without markdown", "text_tools.0.markdown", (s: any) => s.text_tools.push({ name: "recipe", description: "d" })]
  ])("a hand-edited snapshot with %s is a SnapshotError naming %s", async (_, field, edit) => {
    const edited = JSON.parse(JitHarnessSnapshot.toJson(valid()))
    edit(edited)
    const path = join(directory, "edited.json")
    await writeFile(path, JSON.stringify(edited))
    const error = await rejection(JitHarnessSnapshot.load(path))
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect(error.reason).toBe("Invalid")
    expect(error.message).toContain(`${field}:`)
  })

  it("one broken tool installs nothing: the good module ran, but every call fails with the activation error", async () => {
    const key = freshKey()
    const snapshot = snapshotOf([
      codeRecord("counter", counterSource("counter", key)),
      codeRecord("broken", `throw new Error("this module cannot load")\nexport const broken = tool({ description: "d", guidelines: "g" }, () => 1)`)
    ], { text_tools: [{ name: "recipe", description: "A recipe.", markdown: "1. count" }], base_tools: ["add"] })
    const harness = track(new JitHarness(snapshot, { tools: [add] }))
    const error = await rejection(harness.ready)
    expect(error).toBeInstanceOf(HarnessError.PackageError)
    expect(error.name).toBe("broken")
    expect(error.reason).toBe("ActivationError")
    expect(error.message).toContain("this module cannot load")
    expect(activations(key)).toBe(1)

    expect(harness.listTools().map((t) => t.name)).toEqual(["add"])
    expect(await rejection(harness.callTool("counter", {}))).toBe(error)
    expect(await rejection(harness.callTool("recipe", {}))).toBe(error)
    expect(await rejection(harness.callTool("add", { left: 1, right: 2 }))).toBe(error)
    expect(await rejection(JitHarness.fromSnapshot(snapshot))).toBeInstanceOf(HarnessError.PackageError)
    expect(harness.profile().calls).toEqual([])
  })

  it.each([
    ["a name used twice", { tools: [codeRecord("twice", twiceSource)], text_tools: [{ name: "twice", description: "d", markdown: "m" }] }],
    ["a reserved management name", { tools: [], text_tools: [{ name: "create_tool", description: "d", markdown: "m" }] }],
    ["an unload mark for an unknown tool", { tools: [codeRecord("twice", twiceSource)], unloaded_tools: ["ghost"] }]
  ])("a snapshot with %s is refused at activation with a SnapshotError, nothing installed", async (_, content) => {
    const harness = track(new JitHarness(snapshotOf(content.tools, content), { tools: [add] }))
    const error = await rejection(harness.ready)
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect(error.reason).toBe("Activation")
    expect(harness.listTools().map((t) => t.name)).toEqual(["add"])
    expect(await rejection(harness.callTool("twice", { value: 1 }))).toBe(error)
  })
})

describe("a snapshot cannot replace an application base tool (MGMT-14)", () => {
  const shadow = (name: string) =>
    codeRecord(name, `export const ${name} = tool({ description: "Shadow.", guidelines: "Use in tests." }, () => "from the snapshot")`)

  it("a code tool named like a base tool given in tools is refused, and the base tool is untouched", async () => {
    const key = freshKey()
    const snapshot = snapshotOf([shadow("add"), codeRecord("counter", counterSource("counter", key))])
    const harness = track(new JitHarness(snapshot, { tools: [add] }))
    const error = await rejection(harness.ready)
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect(error.reason).toBe("Activation")
    expect(error.message).toMatch(/'add' is an application base tool/)
    expect(activations(key)).toBe(0)
    expect(harness.listTools()).toEqual([{ name: "add", origin: "base", state: "loaded", description: "Add two integers." }])
  })

  it("a base tool bound while activation runs is not replaced either", async () => {
    const snapshot = snapshotOf([shadow("add")])
    const harness = track(new JitHarness(snapshot))
    harness.bindBaseTools([add])
    const error = await rejection(harness.ready)
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect(harness.listTools().map((t) => `${t.name}:${t.origin}`)).toEqual(["add:base"])
  })
})

describe("Activation (SNAP-03, SNAP-08, SNAP-13..16, SNAP-18, SNAP-19)", () => {
  it("SNAP-13 new JitHarness(snapshot, { tools }) activates at once, without any call", async () => {
    const key = freshKey()
    const snapshot = snapshotOf([codeRecord("counter", counterSource("counter", key))])
    const harness = track(new JitHarness(snapshot, { tools: [add] }))
    await harness.ready
    expect(activations(key)).toBe(1)
    expect(harness.profile().calls).toEqual([])
    expect(await harness.callTool("counter", {})).toBe(1)
    expect(activations(key)).toBe(1)
  })

  it("SNAP-13 JitHarness.fromSnapshot resolves with every module activated and base tools bound", async () => {
    const key = freshKey()
    const snapshot = snapshotOf([codeRecord("counter", counterSource("counter", key)), codeRecord("twice", twiceSource)], {
      base_tools: ["add"]
    })
    const harness = track(await JitHarness.fromSnapshot(snapshot, { tools: [add] }))
    expect(activations(key)).toBe(1)
    expect(harness.listTools().map((t) => `${t.name}:${t.state}`).sort()).toEqual(["add:loaded", "counter:loaded", "twice:loaded"])
    expect(await harness.callTool("twice", { value: 21 })).toBe(42)
  })

  it("a call made before activation finishes waits for it", async () => {
    const harness = track(new JitHarness(snapshotOf([codeRecord("twice", twiceSource)]), { tools: [add] }))
    expect(await harness.callTool("twice", { value: 2 })).toBe(4)
  })

  it("SNAP-08 reloading recreates module globals from source", async () => {
    const key = freshKey()
    const harness = track(new JitHarness())
    await harness.createTool({ entrypoint: "counter", source: counterSource("counter", key) })
    expect(await harness.callTool("counter", {})).toBe(1)
    expect(await harness.callTool("counter", {})).toBe(2)
    const restored = track(await JitHarness.fromSnapshot(harness.snapshot()))
    expect(activations(key)).toBe(2)
    expect(await restored.callTool("counter", {})).toBe(1)
    expect(await harness.callTool("counter", {})).toBe(3)
  })

  it("SNAP-03 each harness gets its own copy: globals, updates and unloads never cross, the file is untouched", async () => {
    const key = freshKey()
    const original = track(new JitHarness({ tools: [add] }))
    await original.createTool({ entrypoint: "counter", source: counterSource("counter", key) })
    await original.createTool({ entrypoint: "twice", source: twiceSource })
    const path = join(directory, "template.json")
    await original.save(path)
    const before = await readFile(path, "utf8")
    const template = await JitHarnessSnapshot.load(path)
    const pristine = structuredClone(template)

    const first = track(await JitHarness.fromSnapshot(template, { tools: [add] }))
    const second = track(await JitHarness.fromSnapshot(template, { tools: [add] }))
    expect(await first.callTool("counter", {})).toBe(1)
    expect(await first.callTool("counter", {})).toBe(2)
    expect(await second.callTool("counter", {})).toBe(1)

    await first.updateTool({ name: "twice", source: twiceSource.replace("right: value", "right: value + 1") })
    await first.unloadTool("counter")
    await first.createTool({ kind: "text", name: "only_first", description: "d", source: "m" })
    expect(await first.callTool("twice", { value: 21 })).toBe(43)
    expect(await second.callTool("twice", { value: 21 })).toBe(42)
    expect(await second.callTool("counter", {})).toBe(2)
    expect(second.listTools().map((t) => t.name)).not.toContain("only_first")

    expect(template).toEqual(pristine)
    expect(await readFile(path, "utf8")).toBe(before)
    const third = track(await JitHarness.fromSnapshot(template, { tools: [add] }))
    expect(await third.callTool("twice", { value: 21 })).toBe(42)
    expect(await third.callTool("counter", {})).toBe(1)
  })

  it("SNAP-14 the modules of unloaded tools are activated too; unload controls invocation only", async () => {
    const key = freshKey()
    const snapshot = snapshotOf([codeRecord("counter", counterSource("counter", key))], { unloaded_tools: ["counter"] })
    const harness = track(await JitHarness.fromSnapshot(snapshot))
    expect(activations(key)).toBe(1)
    const error = await rejection(harness.callTool("counter", {}))
    expect(error).toBeInstanceOf(HarnessError.ToolRejected)
    expect(error.reason).toBe("Unloaded")
    await harness.loadTool("counter")
    expect(await harness.callTool("counter", {})).toBe(1)
    expect(activations(key)).toBe(1)
  })

  it("SNAP-15 a missing base tool does not block activation, but calling it is rejected with a record", async () => {
    const snapshot = snapshotOf([codeRecord("twice", twiceSource)], { base_tools: ["add"] })
    const harness = track(await JitHarness.fromSnapshot(snapshot))
    expect(harness.listTools().find((t) => t.name === "add")?.state).toBe("unbound")

    const direct = await rejection(harness.callTool("add", { left: 1, right: 2 }))
    expect(direct).toBeInstanceOf(HarnessError.ToolRejected)
    expect(direct.reason).toBe("MissingBinding")
    const nested = await rejection(harness.callTool("twice", { value: 2 }))
    expect(nested).toBeInstanceOf(HarnessError.ToolRejected)
    expect(nested.reason).toBe("MissingBinding")

    const records = harness.profile("add").calls
    expect(records.map((r) => [r.status, r.error_type, r.caller_tool_name])).toEqual([
      ["rejected", "ToolRejected", "twice"],
      ["rejected", "ToolRejected", null]
    ])
    expect(harness.toolErrors("add").errors[0]?.status).toBe("rejected")
  })

  it("SNAP-16 base tools are bound through tools or later, and then the snapshot's tools use them", async () => {
    const snapshot = snapshotOf([codeRecord("twice", twiceSource)], { base_tools: ["add"] })
    const bound = track(await JitHarness.fromSnapshot(snapshot, { tools: [add] }))
    expect(await bound.callTool("twice", { value: 3 })).toBe(6)
    const late = track(await JitHarness.fromSnapshot(snapshot))
    late.bindBaseTools({ add })
    expect(await late.callTool("twice", { value: 3 })).toBe(6)
  })

  it("SNAP-09 a tool's npm dependencies must resolve where the snapshot is activated", async () => {
    const source = `import { Ajv } from "ajv"
const validate = new Ajv().compile({ type: "integer" })
export const is_integer = tool({ description: "Check for an integer.", guidelines: "Use in tests." }, ({ value }) => validate(value))`
    const snapshot = snapshotOf([codeRecord("is_integer", source)])
    const here = track(await JitHarness.fromSnapshot(snapshot, { moduleRoot: repoRoot }))
    expect(await here.callTool("is_integer", { value: 3 })).toBe(true)

    const elsewhere = track(new JitHarness(snapshot, { moduleRoot: directory }))
    const error = await rejection(elsewhere.ready)
    expect(error).toBeInstanceOf(HarnessError.PackageError)
    expect(error.reason).toBe("ImportError")
    expect(error.message).toContain("ajv")
  })

  it("SNAP-18 base unload marks are kept but only enforced when base tools are managed", async () => {
    const harness = track(new JitHarness({ tools: [add] }))
    await harness.unloadTool("add")
    const snapshot = harness.snapshot()
    expect(snapshot.unloaded_tools).toEqual(["add"])

    const unmanaged = track(await JitHarness.fromSnapshot(snapshot, { tools: [add], manageBaseTools: false }))
    expect(await unmanaged.callTool("add", { left: 1, right: 2 })).toBe(3)
    expect(unmanaged.snapshot().unloaded_tools).toEqual(["add"])

    const managed = track(await JitHarness.fromSnapshot(unmanaged.snapshot(), { tools: [add] }))
    const error = await rejection(managed.callTool("add", { left: 1, right: 2 }))
    expect(error.reason).toBe("Unloaded")
  })

  it("SNAP-19 an activated snapshot starts with empty measurements and an empty error cache", async () => {
    const harness = track(new JitHarness({ tools: [add] }))
    await harness.createTool({ entrypoint: "twice", source: twiceSource })
    await harness.callTool("twice", { value: 1 })
    await rejection(harness.callTool("twice", { value: "x" }))
    expect(harness.profile().calls.length).toBeGreaterThan(0)
    expect(harness.toolErrors().errors.length).toBeGreaterThan(0)

    const restored = track(await JitHarness.fromSnapshot(harness.snapshot(), { tools: [add] }))
    expect(restored.profile().calls).toEqual([])
    expect(restored.profile().stats).toEqual([])
    expect(restored.toolErrors().errors).toEqual([])
    expect(restored.toolErrors().retained_errors).toBe(0)
  })
})

describe("Across processes", () => {
  it("a snapshot written by one process is loaded and used by another", async () => {
    const path = join(directory, "from-child.json")
    const script = join(directory, "save.mts")
    await writeFile(script, `import { JitHarness, tool } from ${JSON.stringify(pathToFileURL(coreIndex).href)}
const add = tool({ name: "add", description: "Add.", guidelines: "Add.", parameters: { type: "object", properties: { left: { type: "integer" }, right: { type: "integer" } }, required: ["left", "right"] } }, ({ left, right }) => left + right)
const harness = new JitHarness({ tools: [add] })
await harness.createTool({ entrypoint: "twice", source: ${JSON.stringify(twiceSource)} })
await harness.createTool({ kind: "text", name: "recipe", description: "How to double.", source: "1. call twice" })
await harness.unloadTool("recipe")
process.stdout.write(String(await harness.callTool("twice", { value: 5 })))
await harness.save(${JSON.stringify(path)})
`)
    const child = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const process_ = spawn(process.execPath, ["--conditions=@jitbox/source", "--import", "tsx", script], { cwd: repoRoot })
      let stdout = ""
      let stderr = ""
      process_.stdout.on("data", (chunk) => (stdout += chunk))
      process_.stderr.on("data", (chunk) => (stderr += chunk))
      process_.on("error", reject)
      process_.on("close", (code) => resolve({ code, stdout, stderr }))
    })
    expect(child.stderr).toBe("")
    expect(child.code).toBe(0)
    expect(child.stdout).toBe("10")

    const snapshot = await JitHarnessSnapshot.load(path)
    expect(snapshot.base_tools).toEqual(["add"])
    expect(snapshot.unloaded_tools).toEqual(["recipe"])
    const harness = track(await JitHarness.fromSnapshot(snapshot, { tools: [add] }))
    expect(await harness.callTool("twice", { value: 21 })).toBe(42)
    expect(harness.profile().calls.map((c) => c.tool_name)).toEqual(["add", "twice"])
  }, 60_000)
})
