/**
 * `jitbox bench` as a process: with `--json` it prints the result as JSON and writes result.json
 * and the two SVG charts into `--out`; a tool that throws exits 1 naming the failure; a bad
 * argument exits 2. Progress is printed only to a terminal: none reaches a pipe, and under a
 * pseudo-terminal (`script`) it does. No timing is asserted.
 */
import { Bench, BenchResult } from "@jitbox/bench"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BenchCommand } from "../src/index.js"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { plain, spawnCli } from "./cliProcess.js"

const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url))

const spawned = async (args: ReadonlyArray<string>) => {
  const process_ = spawnCli(args)
  const code = await process_.exited()
  return { code, stdout: plain(process_.stdout()), stderr: plain(process_.stderr()) }
}

let directory: string
let snapshot: string
beforeAll(() => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-cli-bench-"))
  snapshot = path.join(directory, "toolbox.json")
  fs.writeFileSync(snapshot, JSON.stringify({
    format_version: 1,
    tools: [
      {
        name: "add",
        language: "javascript",
        entrypoint: "add",
        source: `export const add = tool({ description: "Add two integers.", guidelines: "Use for integer addition.",
  parameters: { type: "object", properties: { left: { type: "integer" }, right: { type: "integer" } }, required: ["left", "right"] } },
  ({ left, right }) => left + right)\n`
      },
      {
        name: "fails",
        language: "javascript",
        entrypoint: "fails",
        source: `export const fails = tool({ description: "Always throws.", guidelines: "Never use." }, () => { throw new RangeError("out of range on purpose") })\n`
      }
    ]
  }))
})
afterAll(() => fs.rmSync(directory, { recursive: true, force: true }))

describe("jitbox bench", () => {
  it("--json on an embedded runtime at depths 0,1: the result on stdout and its files in --out", async () => {
    const out = path.join(directory, "out")
    const { code, stdout, stderr } = await spawned([
      "bench", "--snapshot", snapshot, "--tool", "add", "--args", '{"left":1,"right":2}',
      "--depths", "0,1", "--warmup", "1", "--iterations", "4", "--concurrency", "2", "--json", "--out", out
    ])
    expect(code, stderr).toBe(0)
    expect(stderr).toBe("")
    const printed = Effect.runSync(BenchResult.decode(JSON.parse(stdout)))
    expect(printed.target.kind).toBe("embedded")
    expect(printed.runs.map((run) => [run.depth, run.stats.iterations])).toEqual([[0, 4], [1, 4]])
    expect(printed.args).toEqual({ left: 1, right: 2 })
    expect(printed.concurrency).toBe(2)
    expect(fs.readdirSync(out).sort()).toEqual([Bench.files.histogram, Bench.files.result, Bench.files.depths].sort())
    expect(Effect.runSync(BenchResult.decode(JSON.parse(fs.readFileSync(path.join(out, Bench.files.result), "utf8"))))).toEqual(printed)
    for (const file of [Bench.files.histogram, Bench.files.depths]) {
      const svg = fs.readFileSync(path.join(out, file), "utf8")
      expect(svg.startsWith("<?xml")).toBe(true)
      expect(svg).toContain("</svg>")
    }
  }, 120_000)

  it("on a terminal (a pseudo-terminal from `script`): progress on stderr, then the table", async () => {
    const command = [
      process.execPath, "--conditions=@jitbox/source", "--import", "tsx", bin,
      "bench", "--snapshot", snapshot, "--tool", "add", "--args", '{"left":1,"right":2}', "--harness", "--warmup", "0", "--iterations", "3"
    ].map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(" ")
    const child = spawn("script", ["-qec", command, "/dev/null"], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => void (output += chunk.toString()))
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve))
    expect(code, output).toBe(0)
    expect(output).toContain("setting up the harness target")
    expect(output).toMatch(/direct floor \[[#-]+\] 3\/3/)
    expect(output).toMatch(/depth 0 \[[#-]+\] 3\/3/)
    expect(plain(output)).toMatch(/^depth 0\s+\d/m)
  }, 120_000)

  it("a tool that throws: exit code 1 and the typed failure on stderr", async () => {
    const { code, stderr } = await spawned(["bench", "--snapshot", snapshot, "--tool", "fails", "--harness", "--warmup", "0", "--iterations", "2"])
    expect(code).toBe(1)
    expect(stderr).toContain("jitbox: BenchToolFailed: fails failed")
    expect(stderr).toContain("out of range on purpose")
  }, 120_000)

  it("a bad argument: exit code 2 and what is wrong on stderr", async () => {
    const { code, stderr } = await spawned(["bench", "--snapshot", snapshot, "--tool", "add", "--depth", "1", "--depths", "0,1"])
    expect(code).toBe(2)
    expect(stderr).toContain("give --depth or --depths, not both")
  }, 120_000)
})

describe("the table and the depths (in this process)", () => {
  it("the options' defaults are the benchmark's own (kept in the command so that --help loads no benchmark)", () => {
    const { concurrency, warmup, iterations, maximumDepth } = Bench.defaults
    expect(BenchCommand.defaults).toEqual({ concurrency, warmup, iterations, maximumDepth })
  })

  it("parses depths and refuses what is not one", () => {
    expect(BenchCommand.parseDepths("0,1, 2,4")).toEqual([0, 1, 2, 4])
    for (const bad of ["", "1,x", "-1", "1.5", "99"]) expect(() => BenchCommand.parseDepths(bad)).toThrow(/--depths/)
    expect(() => BenchCommand.parseArgs("{x")).toThrow(/--args/)
  })

  it("prints a row per floor and per depth, with the ratios of the result", async () => {
    const result = await Bench.run({
      snapshot: JSON.parse(fs.readFileSync(snapshot, "utf8")),
      tool: "add",
      args: { left: 1, right: 2 },
      target: { kind: "harness" },
      depths: [0, 3],
      warmup: 1,
      iterations: 5
    })
    const lines = BenchCommand.table(result).split("\n")
    expect(lines.filter((line) => /^(direct floor|raw floor|depth \d+)\s/.test(line)).map((line) => line.split(/\s{2,}/)[0])).toEqual([
      "direct floor",
      "depth 0",
      "depth 3"
    ])
    const depth3 = lines.find((line) => line.startsWith("depth 3"))!.split(/\s{2,}/)
    // the table's own rounding (toLocaleString's), which differs from toFixed's on ties such as 17.825
    expect(depth3[4]).toBe(result.runs[1]!.median_over_direct.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }))
    expect(lines.join("\n")).toContain("raw floor: none")
  })
})
