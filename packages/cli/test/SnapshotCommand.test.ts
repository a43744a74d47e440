/**
 * `jitbox snapshot` as a process: `inspect` of a file (code tools in three languages with their
 * version ids, a text tool, a base tool, an unload mark) and of a session id in the namespace's KV
 * snapshot store on a real nats-server (`--kv`), also one that a `jitbox sessions --store kv`
 * process stored; a path is read as a file even with JITBOX_SERVER set, and a snapshot named by
 * no flag or by two fails `ConfigError` naming `--file` and `--kv`; `verify` of a snapshot that activates (its code tools
 * loaded in real sandboxed subprocesses; exit 0) and of one whose module throws (exit 1,
 * `PackageError` naming the tool) and of a file that is no snapshot (exit 1, `SnapshotError`);
 * `diff` of two files, and of a KV session against a file (added, removed, changed with the files' line counts, base tools, unload marks;
 * `--exit-code` exits 3). The version ids are the ones the harness gives the tools. `verify` runs
 * from the bundled command too (`scripts/bundle.mjs`), which finds its dependencies from the bundle.
 */
import { JitHarness, JitHarnessSnapshot } from "@jitbox/core"
import { connect, KvSnapshotStore } from "@jitbox/nats"
import { NatsServer } from "@jitbox/testing"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SnapshotCommand } from "../src/index.js"
import { plain, spawnCli } from "./cliProcess.js"

const execFileAsync = promisify(execFile)

/** Where the spawned `jitbox` runs (`spawnCli`'s working directory). */
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url))

const square = `export const square = tool({ description: "Square an integer.", guidelines: "Use to square an integer." }, async ({ value }: { value: number }) => value * value)\n`
const squareV2 = `export const square = tool({ description: "Square an integer.", guidelines: "Use to square an integer." }, async ({ value }: { value: number }) => {\n  return value * value\n})\n`
const add = `from jitbox import tool\n\n@tool(description="Add two numbers.", guidelines="Use to add.")\ndef add(a: int, b: int) -> int:\n    return a + b\n`
const shout = `export const shout = tool({ description: "Upper-cases text.", guidelines: "Use to shout." }, async ({ text }) => String(text).toUpperCase())\n`
const cube = `export const cube = tool({ description: "Cube a number.", guidelines: "Use to cube." }, async ({ value }) => value ** 3)\n`

const a: JitHarnessSnapshot.JitHarnessSnapshot = {
  format_version: 1,
  tools: [
    { name: "square", language: "typescript", entrypoint: "square", source: square },
    { name: "add", language: "python", entrypoint: "add", source: add },
    { name: "shout", language: "javascript", entrypoint: "shout", source: shout, parameters: { type: "object", properties: { text: { type: "string" } } } }
  ],
  text_tools: [{ name: "style_guide", description: "How to write.", markdown: "# Style\n\nBe brief.\n" }],
  base_tools: ["search"],
  unloaded_tools: ["shout"]
}

const b: JitHarnessSnapshot.JitHarnessSnapshot = {
  ...a,
  tools: [{ ...a.tools[0]!, source: squareV2 }, a.tools[2]!, { name: "cube", language: "javascript", entrypoint: "cube", source: cube }],
  text_tools: [{ ...a.text_tools[0]!, markdown: "# Style\n\nBe brief.\nBe kind.\n" }],
  base_tools: ["search", "fetch"],
  unloaded_tools: []
}

const broken: JitHarnessSnapshot.JitHarnessSnapshot = {
  ...a,
  tools: [...a.tools, { name: "broken", language: "javascript", entrypoint: "broken", source: `throw new Error("the module fails to load")\nexport const broken = 1\n` }]
}

let server: NatsServer.Handle | undefined
let directory: string
const file = (name: string) => path.join(directory, name)

beforeAll(async () => {
  server = await NatsServer.start()
  directory = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-cli-snapshot-"))
  for (const [name, snapshot] of [["a.json", a], ["b.json", b], ["broken.json", broken]] as const) fs.writeFileSync(file(name), JitHarnessSnapshot.toJson(snapshot))
  fs.writeFileSync(file("not-a-snapshot.json"), JSON.stringify({ format_version: 1, tools: [{ name: "x y" }] }))
  const store = await KvSnapshotStore.open({ namespace: "snap", connection: { servers: server.url } })
  await store.save("s1", b)
  await store.close()
}, 60_000)

afterAll(async () => {
  await server?.close()
  if (directory !== undefined) fs.rmSync(directory, { recursive: true, force: true })
})

const run = async (args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}) => {
  const child = spawnCli(["snapshot", ...args], env)
  const code = await child.exited()
  return { code, stdout: plain(child.stdout()), stderr: plain(child.stderr()) }
}

describe("jitbox snapshot", () => {
  it("the version ids are the ones the harness gives the tools it activates", async () => {
    const snapshot = { ...a, tools: a.tools.filter((tool) => tool.language !== "python") }
    const harness = await JitHarness.fromSnapshot(snapshot, { codeExecution: "trusted" })
    const inspection = SnapshotCommand.inspect({ source: "", bytes: 0, snapshot })
    for (const tool of [...inspection.tools, ...inspection.textTools]) {
      expect((harness.inspectTool(tool.name) as { version_id?: string }).version_id, tool.name).toBe(tool.versionId)
    }
    await harness.release()
  })

  it("inspect of a file: the tools, languages, version ids, sizes, base tools and unload marks; --json the same", async () => {
    const [text, json] = await Promise.all([run(["inspect", file("a.json")]), run(["inspect", "--json", file("a.json")])])
    expect([text.code, json.code]).toEqual([0, 0])
    const inspection = SnapshotCommand.inspect({ source: `file ${file("a.json")}`, bytes: fs.statSync(file("a.json")).size, snapshot: a })
    expect(JSON.parse(json.stdout)).toEqual(inspection)
    expect(inspection.languages).toEqual(["javascript", "python", "typescript"])
    const lines = text.stdout.split("\n")
    expect(lines[0]).toBe(`snapshot file ${file("a.json")}`)
    expect(lines[1]).toMatch(/^format 1, \d+(\.\d)? (B|KiB), 3 code tools \(javascript, python, typescript\), 1 text tools, 1 base tools, 1 unloaded$/)
    expect(text.stdout).toMatch(/^CODE TOOL +LANGUAGE +VERSION +FILES +SIZE +DURATION +PARAMETERS +UNLOADED$/m)
    expect(text.stdout).toMatch(new RegExp(`^square +typescript +${inspection.tools[0]!.versionId} +1 +\\d+ B +short +- +-$`, "m"))
    expect(text.stdout).toMatch(new RegExp(`^shout +javascript +${inspection.tools[2]!.versionId} +1 +\\d+ B +short +declared +yes$`, "m"))
    expect(text.stdout).toMatch(/^style_guide +v_[0-9a-f]{20} +\d+ B +-$/m)
    expect(text.stdout).toMatch(/^base tools: search$/m)
    expect(text.stdout).toMatch(/^unloaded: shout$/m)
  }, 120_000)

  it("inspect --kv: a session id in the namespace's KV snapshot store on --server, and a session with none: exit 1 NotFound", async () => {
    const env = { JITBOX_SERVER: server!.url }
    const [found, missing] = await Promise.all([run(["inspect", "--namespace", "snap", "--kv", "s1"], env), run(["inspect", "--namespace", "snap", "--kv", "s2"], env)])
    expect(found.code, found.stderr).toBe(0)
    expect(found.stdout.split("\n")[0]).toBe("snapshot kv jitbox-snapshots-snap/s1")
    expect(found.stdout).toMatch(/^cube +javascript +v_/m)
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain("jitbox: SnapshotError: jitbox-snapshots-snap/s2: no snapshot stored for this session")
  }, 120_000)

  it("with JITBOX_SERVER set, --file ./a.json and a bare path read the file, never a session id", async () => {
    const relative = `./${path.relative(repoRoot, file("a.json"))}`
    const env = { JITBOX_SERVER: server!.url, JITBOX_NAMESPACE: "snap" }
    const [flag, bare] = await Promise.all([run(["inspect", "--file", relative], env), run(["inspect", relative], env)])
    expect([flag.code, bare.code], flag.stderr + bare.stderr).toEqual([0, 0])
    expect(flag.stdout.split("\n")[0]).toBe(`snapshot file ${relative}`)
    expect(bare.stdout).toBe(flag.stdout)
  }, 120_000)

  it("a snapshot named by no flag, or by --file and --kv both, fails ConfigError naming the flags (exit 1)", async () => {
    const [none, both, diffHalf] = await Promise.all([
      run(["inspect"], { JITBOX_SERVER: server!.url }),
      run(["verify", "--file", file("a.json"), "--kv", "s1"], { JITBOX_SERVER: server!.url }),
      run(["diff", "--from-kv", "s1"])
    ])
    expect([none.code, both.code, diffHalf.code]).toEqual([1, 1, 1])
    expect(none.stderr).toContain("jitbox: ConfigError: --file/--kv: name the snapshot: --file PATH or --kv SESSION")
    expect(both.stderr).toContain("jitbox: ConfigError: --file/--kv: --file and --kv both name a snapshot; give one: --file PATH or --kv SESSION")
    expect(diffHalf.stderr).toContain("jitbox: ConfigError: --to-file/--to-kv: name the snapshot: --to-file PATH or --to-kv SESSION")
  }, 120_000)

  it("jitbox sessions --store kv keeps a session's snapshot in the namespace's KV store, where inspect --kv reads it", async () => {
    const namespace = "hosted"
    const host = spawnCli(["sessions", "--server", server!.url, "--namespace", namespace, "--store", "kv", "--idle-timeout", "10m"])
    try {
      await host.line(/^ready sessions hosted$/)
      const client = await connect({ servers: server!.url, namespace, timeoutMs: 60_000 })
      try {
        await client.session("k1").createTool({ kind: "text", name: "howto", description: "How to ask.", source: "# Steps\nAsk twice.\n" })
      } finally {
        await client.close()
      }
      // the host saves a session's snapshot before it answers the change
      const store = await KvSnapshotStore.open({ namespace, connection: { servers: server!.url } })
      const stored = await store.load("k1")
      await store.close()
      expect(stored?.text_tools.map((tool) => tool.name)).toEqual(["howto"])
      const inspected = await run(["inspect", "--json", "--kv", "k1"], { JITBOX_SERVER: server!.url, JITBOX_NAMESPACE: namespace })
      expect(inspected.code, inspected.stderr).toBe(0)
      expect(JSON.parse(inspected.stdout)).toMatchObject({ source: "kv jitbox-snapshots-hosted/k1", textTools: [{ name: "howto" }] })
    } finally {
      host.kill()
    }
  }, 120_000)

  it("verify: a snapshot that activates exits 0; one whose module throws exits 1 with PackageError naming the tool; a file that is no snapshot, SnapshotError", async () => {
    const [ok, failing, invalid] = await Promise.all([
      run(["verify", file("a.json")]),
      run(["verify", "--json", file("broken.json")]),
      run(["verify", file("not-a-snapshot.json")])
    ])
    expect(ok.code, ok.stderr).toBe(0)
    expect(ok.stdout).toMatch(new RegExp(`^ok file ${file("a.json")}: activates \\(3 code tools, 1 text tools\\) in \\S+$`, "m"))
    expect(ok.stderr).toBe("")
    expect(failing.code).toBe(1)
    expect(JSON.parse(failing.stdout)).toMatchObject({ activates: false, error: { _tag: "PackageError", tool: "broken", reason: "ActivationError" } })
    expect(failing.stderr).toContain("jitbox: PackageError: ")
    expect(failing.stderr).toContain("the module fails to load")
    expect(invalid.code).toBe(1)
    expect(invalid.stderr).toMatch(/^jitbox: SnapshotError: .*not-a-snapshot\.json: not a valid jitbox snapshot: tools\.0\./m)
  }, 120_000)

  it("verify from the bundled command (what bin/jitbox.js runs after pnpm build) in this workspace: esbuild, ajv and the sandbox's runtime files are found from the bundle", async () => {
    const cli = fileURLToPath(new URL("..", import.meta.url))
    const outdir = fs.mkdtempSync(path.join(cli, "node_modules", ".jitbox-bundle-"))
    try {
      await execFileAsync(process.execPath, [path.join(cli, "scripts/bundle.mjs"), outdir], { cwd: cli })
      const { stdout, stderr } = await execFileAsync(process.execPath, [path.join(outdir, "jitbox.mjs"), "snapshot", "verify", file("a.json")], { cwd: repoRoot })
      expect(plain(stdout), stderr).toMatch(new RegExp(`^ok file ${file("a.json")}: activates \\(3 code tools, 1 text tools\\) in \\S+$`, "m"))
    } finally {
      fs.rmSync(outdir, { recursive: true, force: true })
    }
  }, 120_000)

  it("verify on a terminal: the activation's progress is drawn in place on the line, then erased before the result", async () => {
    const child = spawnCli(["snapshot", "verify", file("a.json")], {}, { terminal: true })
    expect(await child.exited()).toBe(0)
    const out = child.stdout()
    expect(out).toMatch(/\r\x1b\[2K\S+ activating snapshot \[[#-]{20}\] 0\/3 0% /)
    expect(out).toMatch(/\r\x1b\[2K\S+ activating snapshot \[#{20}\] 3\/3 100% /)
    expect(out).toMatch(/\r\x1b\[2K\x1b\[\?25h(\r?\n)?ok file /)
  }, 120_000)

  it("diff: added, removed, changed (version ids, files' lines), base tools and unload marks; --exit-code exits 3 when they differ, 0 when not", async () => {
    const [text, json, differ, same, kvToFile] = await Promise.all([
      run(["diff", file("a.json"), file("b.json")]),
      run(["diff", "--json", file("a.json"), file("b.json")]),
      run(["diff", "--exit-code", file("a.json"), file("b.json")]),
      run(["diff", "--exit-code", file("a.json"), file("a.json")]),
      run(["diff", "--exit-code", "--namespace", "snap", "--from-kv", "s1", "--to-file", file("b.json")], { JITBOX_SERVER: server!.url })
    ])
    expect([text.code, json.code, differ.code, same.code, kvToFile.code], kvToFile.stderr).toEqual([0, 0, 3, 0, 0])
    expect(kvToFile.stdout.split("\n").slice(0, 2)).toEqual(["--- kv jitbox-snapshots-snap/s1", `+++ file ${file("b.json")}`])
    expect(differ.stderr).toBe("")
    const versions = (snapshot: JitHarnessSnapshot.JitHarnessSnapshot) => SnapshotCommand.inspect({ source: "", bytes: 0, snapshot }).tools
    const [before, after] = [versions(a), versions(b)]
    expect(text.stdout.split("\n")).toEqual([
      `--- file ${file("a.json")}`,
      `+++ file ${file("b.json")}`,
      `+ code tool cube ${after[2]!.versionId}`,
      `- code tool add ${before[1]!.versionId}`,
      `~ code tool square ${before[0]!.versionId} -> ${after[0]!.versionId}`,
      "    changed index.ts +3 -1",
      expect.stringMatching(/^~ text tool style_guide v_\w+ -> v_\w+ \(markdown\)$/),
      "    changed SKILL.md +1 -0",
      "+ base tool fetch",
      "- unloaded shout",
      "1 added, 1 removed, 2 changed; base tools +1 -0; unloaded +0 -1",
      ""
    ])
    expect(JSON.parse(json.stdout)).toMatchObject({ same: false, added: [{ name: "cube" }], removed: [{ name: "add" }], baseTools: { added: ["fetch"] } })
    expect(same.stdout).toContain("no changes")
  }, 120_000)
})
