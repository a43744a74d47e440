/**
 * Sandbox overhead, per language (JavaScript, TypeScript, Python, Bash, C#), in one run:
 *
 * (a) warm: a JSON-lines round trip to a raw warm child spawned with the same layers (prlimit,
 *     bwrap, seccomp, uid, permission flags, scrubbed environment), a minimal echo loop with no
 *     jitbox, versus a jitbox warm `invoke` of a trivial echo tool;
 * (b) cold: spawning that raw child and doing one round trip, versus a jitbox `activate` of a new
 *     version plus its first `invoke`.
 *
 * For Bash the JT-CTR-06 contract needs a fresh process per invocation (stdin to EOF, exactly one
 * JSON value on stdout, `exit`/`set -e` as in a script), so a second raw baseline forks a subshell
 * per request, the least a correct warm Bash runner can do; jitbox against it is
 * `warm_ratio_vs_subshell` (target ≤ 1.3×, like the other warm ratios). Both fork and tear down a
 * process around every request, a cycle that takes longer than the requests themselves on these
 * machines, so for Bash each sample is taken twice: spaced (after a pause of BENCH_BASH_PAUSE_MS,
 * 5 ms, in which every child finishes its previous request and gets its next subshell ready: the
 * latency of a call as a model makes them, seconds apart), then back to back (a second call right
 * after the first: each side's whole cycle is on the path). The spaced figures are the warm_*
 * keys, the back-to-back ones warm_back_to_back_*. Without the pause the figure would depend on
 * the interleaving: the calls of the other sides in between hide a short cycle but not a long one.
 *
 * For C# the raw child is a Mono echo loop compiled once and run with the same flags (heap bound,
 * address space, no fork), and a raw cold sample compiles a one-file echo with `mcs` under the same
 * layers (only its output directory writable) before it starts that child: jitbox's cold path
 * compiles every new version.
 *
 * Method (warm round trips on 2-core VMs are bimodal: the same raw child measures 26 µs in one run
 * and 62 µs in the next, depending on where the scheduler puts host and child, so comparing medians
 * of separate blocks is not trustworthy):
 *
 * - Samples are interleaved one by one: raw, jitbox, jitbox, raw, … (the order alternates, so
 *   neither side always runs right after the other); for Bash raw, subshell and jitbox rotate.
 * - Each sample of jitbox is divided by its adjacent raw sample (same iteration); the figure is the
 *   median of these paired ratios, with p25/p75 over all pairs and the median of each block.
 * - Both sides are placed the same way: the benchmark process and every process it starts (the raw
 *   children, jitbox's children, esbuild) are pinned with `taskset` to the same CPU set. Two
 *   placements are measured, in alternating blocks: `one-cpu` (everything on the last CPU: no
 *   cross-CPU wake-ups, the stable figure, and the one the targets are judged on) and `all-cpus`
 *   (everything may use every CPU: the scheduler decides, as in production).
 * - Every block starts a fresh raw child and activates a fresh jitbox version (warm), so blocks also
 *   sample different process placements in memory; a warm-up is discarded per block.
 *
 * Writes benchmarks/results/sandbox.json (per language: the `one-cpu` figures at the top level,
 * `warm_ratio`/`cold_ratio` are ratios of medians, `warm_paired_ratio`/`cold_paired_ratio` the
 * paired medians and spreads; every placement under `placements`; a compact line per run under
 * `runs`, labelled with BENCH_LABEL) and benchmarks/results/sandbox.md (generated tables, then the
 * notes kept below the marker line; not committed: the runs and notes start from
 * benchmarks/reference/ when there are no results yet).
 *
 * Run: pnpm bench:sandbox   (BENCH_BLOCKS, BENCH_WARM, BENCH_BASH_WARM, BENCH_COLD: blocks and
 * samples per block; BENCH_PLACEMENTS=one-cpu,all-cpus; BENCH_LANGUAGES; BENCH_LABEL; BENCH_CODE names the
 * code measured when it is not the checked-out commit)
 */
import type { CodeRunner } from "../packages/core/src/index.js"
import { type ChildProcessWithoutNullStreams, execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { launch, type Mount, type WorkDir } from "../packages/sandbox/src/internal/spawn.js"
import { Isolation, SandboxConfig, SandboxRunner } from "../packages/sandbox/src/index.js"
import { Measure, ProcessCpu, RawEcho } from "@jitbox/bench"
import { previous, resultsDir } from "./output.js"

const { median, quantile, round } = Measure

type Language = CodeRunner.CodeSource["language"]

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback)
const blocks = env("BENCH_BLOCKS", 5)
const warmPairs = env("BENCH_WARM", 600)
const bashWarmPairs = env("BENCH_BASH_WARM", 60)
const coldPairs = env("BENCH_COLD", 6)
const bashPauseMs = env("BENCH_BASH_PAUSE_MS", 5)
const label = process.env.BENCH_LABEL ?? ""

const options: SandboxConfig.SandboxOptions = { maximumRuntimeEnvironments: 4 }
const config = SandboxConfig.make(options)
const iso = Isolation.detect(config)
const runner = SandboxRunner.make(options)
const sessionId = "bench"
const host: CodeRunner.CallHost = {
  sessionId,
  callTool: () => Promise.reject(new Error("no composition in this benchmark"))
}

/**
 * One activation through the runner's interface: calls name it by id and hand back the runner's
 * promise, as the harness's dispatcher does for a call without a policy.
 */
interface Activated {
  readonly invoke: (args: unknown) => Promise<unknown>
  readonly dispose: () => Promise<void>
}

let calls = 0
const activate = async (source: CodeRunner.CodeSource): Promise<Activated> => {
  await runner.activate(source, host)
  return {
    invoke: (args) =>
      runner.invoke({
        activationId: source.activationId,
        toolName: source.toolName,
        args,
        context: { sessionId, callId: `bench-${++calls}`, parentCallId: null, depth: 1, withinChange: false, deadline: null }
      }, undefined),
    dispose: () => runner.release(source.activationId)
  }
}

// ---------------------------------------------------------------------------------------------
// placement: the benchmark process and all its descendants on one CPU set

const cpuCount = os.cpus().length
const allPlacements: Record<string, string> = {
  "one-cpu": String(cpuCount - 1),
  "all-cpus": cpuCount > 1 ? `0-${cpuCount - 1}` : "0"
}
const placements = (process.env.BENCH_PLACEMENTS ?? "one-cpu,all-cpus").split(",").filter((p) => p in allPlacements)
const headline = placements[0]!
let canPin = true

/** Pids of the processes below `root`, from /proc (host pids, so namespaced children are included). */
const { descendants } = ProcessCpu

/** Pins this process (every thread) and every descendant to `cpus`; later children inherit it. */
const place = (placement: string): void => {
  if (!canPin) return
  const cpus = allPlacements[placement]!
  for (const pid of [process.pid, ...descendants(process.pid)]) {
    try {
      execFileSync("taskset", ["-a", "-p", "-c", cpus, String(pid)], { stdio: "ignore" })
    } catch (error) {
      if (pid === process.pid) {
        canPin = false
        console.warn(`cannot pin with taskset (${(error as Error).message}); placements are not controlled`)
        return
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// raw children: the same launch (layers, limits, environment) as jitbox's, a minimal echo loop

const rawDir = fs.mkdtempSync(path.join(config.tmpDir, "jitbox-bench-raw-"))
fs.chmodSync(rawDir, 0o755)
const rawWork = fs.mkdtempSync(path.join(config.tmpDir, "jitbox-bench-work-"))
if (iso.runAs !== undefined) fs.chownSync(rawWork, iso.runAs.uid, iso.runAs.gid)
const write = (name: string, text: string) => {
  fs.writeFileSync(path.join(rawDir, name), text)
  fs.chmodSync(path.join(rawDir, name), 0o644)
}
write("echo.mjs", RawEcho.echoLoop)
write(
  "echo.py",
  `import json, os
buf = b""
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    buf += chunk
    while b"\\n" in buf:
        line, buf = buf.split(b"\\n", 1)
        m = json.loads(line)
        os.write(1, (json.dumps({"id": m["id"], "value": m["args"]}, separators=(",", ":")) + "\\n").encode())
`
)
write("echo.sh", `while IFS= read -r line; do printf '%s\\n' "$line"; done\n`)
write("echo-subshell.sh", `while :; do ( IFS= read -r line || exit 1; printf '%s\\n' "$line" ) || break; done\n`)
// the least a Mono child can do per request: split the line at "args" by hand, no JSON library
write(
  "echo.cs",
  `using System; using System.IO; using System.Text;
public static class Echo {
  public static void Main() {
    var input = new StreamReader(Console.OpenStandardInput(65536), new UTF8Encoding(false));
    var output = Console.OpenStandardOutput(65536);
    string line;
    while ((line = input.ReadLine()) != null) {
      var id = line.Substring(7, line.IndexOf('"', 7) - 7);
      var args = line.Substring(line.IndexOf("\\"args\\":") + 7, line.Length - line.IndexOf("\\"args\\":") - 8);
      var bytes = Encoding.UTF8.GetBytes("{\\"id\\":\\"" + id + "\\",\\"value\\":" + args + "}\\n");
      output.Write(bytes, 0, bytes.Length);
      output.Flush();
    }
  }
}
`
)
if (iso.mono !== undefined) {
  const compiled = spawnSync(iso.mono.path, [iso.mono.mcs, "-nologo", "-optimize+", `-out:${path.join(rawDir, "echo.exe")}`, path.join(rawDir, "echo.cs")], { encoding: "utf8" })
  if (compiled.status !== 0) throw new Error(`the raw C# echo did not compile: ${compiled.stdout}${compiled.stderr}`)
  fs.chmodSync(path.join(rawDir, "echo.exe"), 0o644)
}

const pkg: Mount = { host: rawDir, inside: iso.bwrap !== undefined ? "/mnt/pkg" : rawDir, writable: false }
// as for a jitbox child: a tmpfs inside bubblewrap, else a host directory
const work: WorkDir = iso.bwrap !== undefined ? { inside: "/mnt/work", host: undefined } : { inside: rawWork, host: rawWork }

type RawKind = Language | "bash-subshell"

const rawLaunch = (kind: RawKind): ChildProcessWithoutNullStreams => {
  const memory = config.limits.memoryMiB
  // the raw echo children close no inherited descriptor: "self" only spares them the host's listing
  const base = { env: {}, mounts: [pkg], workDir: work, marker: "jitbox-bench-raw", inheritedDescriptors: "self" as const }
  switch (kind) {
    case "javascript":
    case "typescript":
      return launch(iso, config, { ...base, ...Isolation.nodeCommand(iso, config, pkg.inside, "echo.mjs") })
    case "python":
      return launch(iso, config, {
        ...base,
        command: iso.python!.path,
        args: ["-I", "-S", "-B", `${pkg.inside}/echo.py`],
        addressSpaceMiB: memory,
        noFork: true
      })
    case "bash":
    case "bash-subshell":
      return launch(iso, config, {
        ...base,
        command: config.bashPath,
        args: ["--norc", "--noprofile", `${pkg.inside}/${kind === "bash" ? "echo.sh" : "echo-subshell.sh"}`],
        addressSpaceMiB: memory,
        noFork: false
      })
    case "csharp":
      return launch(iso, config, { ...base, ...Isolation.monoCommand(iso.mono!, config, [`${pkg.inside}/echo.exe`]) })
    default:
      throw new Error(`no raw child for ${kind}`)
  }
}

/**
 * The raw side of a C# cold sample's compilation: `mcs` compiles the echo under the same layers as
 * jitbox's compiler child (package read-only, one writable output directory), to its exit.
 */
const rawCompile = (): Promise<void> => {
  const outHost = fs.mkdtempSync(path.join(config.tmpDir, "jitbox-bench-mcs-"))
  if (iso.runAs !== undefined) fs.chownSync(outHost, iso.runAs.uid, iso.runAs.gid)
  const out: Mount = { host: outHost, inside: iso.bwrap !== undefined ? "/mnt/out" : outHost, writable: true }
  const args = [iso.mono!.mcs, "-nologo", "-target:library", "-optimize+", `-out:${out.inside}/echo.dll`, `${pkg.inside}/echo.cs`]
  const child = launch(iso, config, {
    ...Isolation.monoCommand(iso.mono!, config, args),
    mounts: [pkg, out],
    workDir: work,
    marker: "jitbox-bench-raw",
    inheritedDescriptors: "self"
  })
  child.stdout.resume()
  child.stderr.resume()
  child.stdin.end()
  return new Promise((resolve, reject) =>
    child.on("close", (code) => {
      fs.rmSync(outHost, { recursive: true, force: true })
      if (code === 0) resolve()
      else reject(new Error(`the raw C# compile exited ${code}`))
    })
  )
}

/** A raw child with a promise per reply line. */
const rawChild = (kind: RawKind) => {
  const proc = rawLaunch(kind)
  let pending: ((line: string) => void) | undefined
  let buffer = ""
  proc.stdout.setEncoding("utf8")
  proc.stdout.on("data", (chunk: string) => {
    buffer += chunk
    let i
    while ((i = buffer.indexOf("\n")) !== -1) {
      const line = buffer.slice(0, i)
      buffer = buffer.slice(i + 1)
      const resolve = pending
      pending = undefined
      resolve?.(line)
    }
  })
  const exited = new Promise<void>((resolve) => proc.on("exit", () => resolve()))
  let n = 0
  return {
    roundTrip: (): Promise<unknown> =>
      new Promise((resolve) => {
        pending = (line) => resolve(JSON.parse(line))
        const id = String(++n)
        proc.stdin.write(JSON.stringify({ id, args: { i: n } }) + "\n")
      }),
    kill: () => {
      try {
        process.kill(-proc.pid!, "SIGKILL")
      } catch {
        proc.kill("SIGKILL")
      }
      return exited
    }
  }
}

// ---------------------------------------------------------------------------------------------
// jitbox tools: the same trivial echo

let versions = 0
const echoSource = (language: Language): CodeRunner.CodeSource => {
  const versionId = `bench-${language}-${++versions}`
  const common = { sessionId, activationId: versionId, toolName: "echo", versionId, language, entrypoint: "echo" }
  switch (language) {
    case "javascript":
      return { ...common, entryFile: "index.js", files: { "index.js": `export const echo = tool({ description: "Echo" }, (args) => args)\n` } }
    case "typescript":
      return {
        ...common,
        entryFile: "index.ts",
        files: { "index.ts": `export const echo = tool({ description: "Echo" }, (args: Record<string, unknown>) => args)\n` }
      }
    case "python":
      return {
        ...common,
        entryFile: "__init__.py",
        files: { "__init__.py": `@tool(guidelines="Use to echo.", parameters={"type": "object"})\ndef echo(**args):\n    return args\n` }
      }
    case "bash":
      return { ...common, entryFile: "main.sh", files: { "main.sh": `IFS= read -r input\nprintf '%s\\n' "$input"\n` } }
    case "csharp":
      return {
        ...common,
        entrypoint: "Echo",
        entryFile: "Tool.cs",
        files: { "Tool.cs": `public static class Echo { public static string Run(string inputJson) { return inputJson; } }\n` }
      }
  }
}

// ---------------------------------------------------------------------------------------------
// statistics


const time = async (f: () => Promise<unknown>): Promise<number> => {
  const start = performance.now()
  await f()
  return performance.now() - start
}

/** Samples of one side (ms), block by block. */
type Series = Array<Array<number>>

interface PairedRatio {
  /** Median over all pairs of (jitbox sample / adjacent raw sample). */
  readonly median: number
  readonly p25: number
  readonly p75: number
  /** The paired median of each block, in order. */
  readonly block_medians: ReadonlyArray<number>
}

const paired = (jitbox: Series, raw: Series): PairedRatio => {
  const perBlock = jitbox.map((block, b) => block.map((x, i) => x / raw[b]![i]!))
  const all = perBlock.flat()
  return {
    median: round(median(all), 3),
    p25: round(quantile(all, 0.25), 3),
    p75: round(quantile(all, 0.75), 3),
    block_medians: perBlock.map((block) => round(median(block), 3))
  }
}

interface PlacementResult {
  warm_raw_us: number
  warm_jitbox_us: number
  /** Ratio of the medians of the interleaved samples. */
  warm_ratio: number
  warm_paired_ratio: PairedRatio
  warm_samples: number
  warm_raw_subshell_us?: number
  warm_ratio_vs_subshell?: number
  warm_paired_ratio_vs_subshell?: PairedRatio
  /** Bash: a second call right after the first, each side's fork and teardown cycle on the path. */
  warm_back_to_back?: {
    raw_us: number
    raw_subshell_us: number
    jitbox_us: number
    ratio: number
    paired_ratio: PairedRatio
    ratio_vs_subshell: number
    paired_ratio_vs_subshell: PairedRatio
  }
  cold_raw_ms: number
  cold_jitbox_ms: number
  cold_ratio: number
  cold_paired_ratio: PairedRatio
  cold_samples: number
}

// ---------------------------------------------------------------------------------------------
// measurement

interface Collected {
  warmRaw: Series
  warmJitbox: Series
  warmSubshell: Series
  /** Bash only: the back-to-back samples, same layout. */
  b2bRaw: Series
  b2bJitbox: Series
  b2bSubshell: Series
  coldRaw: Series
  coldJitbox: Series
}

const collected = new Map<string, Collected>()
const slot = (placement: string, language: Language): Collected => {
  const key = `${placement}/${language}`
  let c = collected.get(key)
  if (c === undefined) {
    c = { warmRaw: [], warmJitbox: [], warmSubshell: [], b2bRaw: [], b2bJitbox: [], b2bSubshell: [], coldRaw: [], coldJitbox: [] }
    collected.set(key, c)
  }
  return c
}

/**
 * One warm block: fresh children, a discarded warm-up, then `pairs` interleaved samples. For Bash
 * every side is sampled spaced (after a pause) and then back to back.
 */
const warmBlock = async (language: Language, into: Collected) => {
  interface Side {
    readonly name: "raw" | "subshell" | "jitbox"
    readonly call: () => Promise<unknown>
    readonly samples: Array<number>
    readonly b2b: Array<number>
  }
  const sides: Array<Side> = []
  const raw = rawChild(language)
  const forking = language === "bash" ? rawChild("bash-subshell") : undefined
  const code = await activate(echoSource(language))
  let i = 0
  sides.push({ name: "raw", call: () => raw.roundTrip(), samples: [], b2b: [] })
  if (forking !== undefined) sides.push({ name: "subshell", call: () => forking.roundTrip(), samples: [], b2b: [] })
  sides.push({ name: "jitbox", call: () => code.invoke({ i }), samples: [], b2b: [] })
  const bash = language === "bash"
  const pairs = bash ? bashWarmPairs : warmPairs
  const warmup = Math.max(10, Math.ceil(pairs / 10))
  for (i = 0; i < warmup + pairs; i++) {
    // alternate the order: raw first, then jitbox first (three sides rotate)
    const order = sides.length === 2
      ? (i % 2 === 0 ? sides : [sides[1]!, sides[0]!])
      : [0, 1, 2].map((k) => sides[(k + i) % 3]!)
    for (const side of order) {
      if (bash) await new Promise((resolve) => setTimeout(resolve, bashPauseMs))
      const ms = await time(side.call)
      const again = bash ? await time(side.call) : 0
      if (i >= warmup) {
        side.samples.push(ms)
        if (bash) side.b2b.push(again)
      }
    }
  }
  await raw.kill()
  await forking?.kill()
  await code.dispose()
  const side = (name: Side["name"]) => sides.find((s) => s.name === name)!
  into.warmRaw.push(side("raw").samples)
  into.warmJitbox.push(side("jitbox").samples)
  if (forking !== undefined) {
    into.warmSubshell.push(side("subshell").samples)
    into.b2bRaw.push(side("raw").b2b)
    into.b2bJitbox.push(side("jitbox").b2b)
    into.b2bSubshell.push(side("subshell").b2b)
  }
}

/** One cold block: `pairs` interleaved spawns (order alternating); teardown is not timed. */
const coldBlock = async (language: Language, into: Collected, warmup: number) => {
  const rawSamples: Array<number> = []
  const jitboxSamples: Array<number> = []
  const coldRaw = async () => {
    let child: ReturnType<typeof rawChild> | undefined
    const ms = await time(async () => {
      if (language === "csharp") await rawCompile()
      child = rawChild(language)
      await child.roundTrip()
    })
    await child!.kill()
    return ms
  }
  const coldJitbox = async (i: number) => {
    let code: Activated | undefined
    const ms = await time(async () => {
      code = await activate(echoSource(language))
      await code.invoke({ i })
    })
    await code!.dispose()
    return ms
  }
  for (let i = 0; i < warmup + coldPairs; i++) {
    let a: number
    let b: number
    if (i % 2 === 0) {
      a = await coldRaw()
      b = await coldJitbox(i)
    } else {
      b = await coldJitbox(i)
      a = await coldRaw()
    }
    if (i >= warmup) {
      rawSamples.push(a)
      jitboxSamples.push(b)
    }
  }
  into.coldRaw.push(rawSamples)
  into.coldJitbox.push(jitboxSamples)
}

const summarize = (c: Collected): PlacementResult => {
  const warmRaw = c.warmRaw.flat()
  const warmJitbox = c.warmJitbox.flat()
  const coldRaw = c.coldRaw.flat()
  const coldJitbox = c.coldJitbox.flat()
  const result: PlacementResult = {
    warm_raw_us: round(median(warmRaw) * 1000),
    warm_jitbox_us: round(median(warmJitbox) * 1000),
    warm_ratio: round(median(warmJitbox) / median(warmRaw), 2),
    warm_paired_ratio: paired(c.warmJitbox, c.warmRaw),
    warm_samples: warmRaw.length,
    cold_raw_ms: round(median(coldRaw), 2),
    cold_jitbox_ms: round(median(coldJitbox), 2),
    cold_ratio: round(median(coldJitbox) / median(coldRaw), 2),
    cold_paired_ratio: paired(c.coldJitbox, c.coldRaw),
    cold_samples: coldRaw.length
  }
  if (c.warmSubshell.length > 0) {
    const subshell = c.warmSubshell.flat()
    result.warm_raw_subshell_us = round(median(subshell) * 1000)
    result.warm_ratio_vs_subshell = round(median(warmJitbox) / median(subshell), 2)
    result.warm_paired_ratio_vs_subshell = paired(c.warmJitbox, c.warmSubshell)
    const [raw, sub, jit] = [c.b2bRaw.flat(), c.b2bSubshell.flat(), c.b2bJitbox.flat()].map(median) as [number, number, number]
    result.warm_back_to_back = {
      raw_us: round(raw * 1000),
      raw_subshell_us: round(sub * 1000),
      jitbox_us: round(jit * 1000),
      ratio: round(jit / raw, 2),
      paired_ratio: paired(c.b2bJitbox, c.b2bRaw),
      ratio_vs_subshell: round(jit / sub, 2),
      paired_ratio_vs_subshell: paired(c.b2bJitbox, c.b2bSubshell)
    }
  }
  return result
}

// ---------------------------------------------------------------------------------------------
// report

const targets = { warm_ratio: 1.3, cold_ratio: 1.2, warm_ratio_vs_subshell: 1.3 }

interface LanguageReport extends PlacementResult {
  placements: Record<string, PlacementResult>
}

interface RunLine {
  readonly date: string
  readonly commit: string
  readonly label: string
  readonly loadavg: ReadonlyArray<number>
  /** Per placement and language: paired medians [p25, p75] of warm, cold and (Bash) warm vs subshell. */
  readonly results: Record<
    string,
    Record<string, { warm: Array<number>; cold: Array<number>; vs_subshell?: Array<number>; vs_subshell_back_to_back?: Array<number>; warm_raw_us: number; warm_jitbox_us: number }>
  >
}

const commit = (): string => {
  if (process.env.BENCH_CODE !== undefined) return process.env.BENCH_CODE
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim()
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no", "--", "packages", "benchmarks/sandbox.ts"], { encoding: "utf8" }).trim()
    return dirty.length > 0 ? `${head}+` : head
  } catch {
    return "unknown"
  }
}

const NotesMarker = "<!-- Notes below this line are kept when the benchmark rewrites this file. -->"

const fmt = (r: PairedRatio) => `${r.median.toFixed(2)}× (${r.p25.toFixed(2)}–${r.p75.toFixed(2)})`
const mark = (r: PairedRatio, target: number) => `${fmt(r)} ${r.median <= target ? "✓" : "✗"}`
const blockRange = (r: PairedRatio) => `${Math.min(...r.block_medians).toFixed(2)}–${Math.max(...r.block_medians).toFixed(2)}`

const placementTable = (placement: string, results: Record<string, LanguageReport>): string => {
  const rows = Object.entries(results).map(([language, all]) => {
    const r = all.placements[placement]!
    return `| ${language} | ${r.warm_raw_us} | ${r.warm_jitbox_us} | ${mark(r.warm_paired_ratio, targets.warm_ratio)} | ${blockRange(r.warm_paired_ratio)} | ${r.warm_ratio.toFixed(2)}× | ${r.cold_raw_ms} | ${r.cold_jitbox_ms} | ${mark(r.cold_paired_ratio, targets.cold_ratio)} | ${blockRange(r.cold_paired_ratio)} |`
  })
  const bash = Object.entries(results)
    .filter(([, all]) => all.placements[placement]!.warm_paired_ratio_vs_subshell !== undefined)
    .map(([language, all]) => {
      const r = all.placements[placement]!
      const b = r.warm_back_to_back!
      return `\n\n${language}, against a raw child that forks a subshell per request (${r.warm_raw_subshell_us} µs; calls spaced ${bashPauseMs} ms apart): ` +
        `warm_ratio_vs_subshell ${mark(r.warm_paired_ratio_vs_subshell!, targets.warm_ratio_vs_subshell)} paired, blocks ${blockRange(r.warm_paired_ratio_vs_subshell!)}, ratio of medians ${r.warm_ratio_vs_subshell!.toFixed(2)}×.` +
        `\nBack to back (a second call right after the first): raw ${b.raw_us} µs, raw subshell ${b.raw_subshell_us} µs, jitbox ${b.jitbox_us} µs; ` +
        `vs subshell ${fmt(b.paired_ratio_vs_subshell)} paired (blocks ${blockRange(b.paired_ratio_vs_subshell)}), vs raw ${fmt(b.paired_ratio)}.`
    })
  return [
    `| language | warm raw µs | warm jitbox µs | warm paired ratio (p25–p75), ≤ ${targets.warm_ratio} | blocks | ratio of medians | cold raw ms | cold jitbox ms | cold paired ratio (p25–p75), ≤ ${targets.cold_ratio} | blocks |`,
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows
  ].join("\n") + bash.join("")
}

const runsTable = (runs: ReadonlyArray<RunLine>): string => {
  const languages = ["javascript", "typescript", "python", "bash", "csharp"]
  const cell = (x: Array<number> | undefined) => x === undefined ? "–" : `${x[0]!.toFixed(2)} (${x[1]!.toFixed(2)}–${x[2]!.toFixed(2)})`
  const lines = [
    `| date | commit | label | load | placement | ${languages.map((l) => `${l} warm`).join(" | ")} | bash warm vs subshell | bash back to back vs subshell | ${languages.map((l) => `${l} cold`).join(" | ")} |`,
    `|---|---|---|---|---|${languages.map(() => "---:").join("|")}|---:|---:|${languages.map(() => "---:").join("|")}|`
  ]
  for (const run of runs) {
    for (const [placement, results] of Object.entries(run.results)) {
      lines.push(
        `| ${run.date.slice(0, 16).replace("T", " ")} | ${run.commit} | ${run.label} | ${run.loadavg[0]} | ${placement} | ${languages.map((l) => cell(results[l]?.warm)).join(" | ")} | ${cell(results.bash?.vs_subshell)} | ${cell(results.bash?.vs_subshell_back_to_back)} | ${
          languages.map((l) => cell(results[l]?.cold)).join(" | ")
        } |`
      )
    }
  }
  return lines.join("\n")
}

const markdown = (report: {
  date: string
  commit: string
  host: { loadavg_before: ReadonlyArray<number>; loadavg_after: ReadonlyArray<number> }
  languages: Record<string, LanguageReport>
  runs: ReadonlyArray<RunLine>
}, notes: string) =>
  [
    "# Sandbox benchmark",
    "",
    "Generated by `pnpm bench:sandbox` (benchmarks/sandbox.ts). Raw: a minimal child spawned with the same layers and flags as",
    "jitbox's (a JSON-lines echo loop); jitbox: a warm `invoke` of a trivial echo tool (warm), `activate` + first `invoke` (cold).",
    "Raw and jitbox samples are interleaved one by one (the order alternating); a ratio is the median of the paired ratios",
    "(each jitbox sample over its adjacent raw sample), with p25–p75 over all pairs and the range of the block medians",
    `(${blocks} blocks, each with fresh children). Host and children are pinned with taskset to the same CPUs: one-cpu (all on`,
    "the last CPU; the targets are judged on this one) and all-cpus (all free on every CPU). Bash is sampled spaced",
    `(after a ${bashPauseMs} ms pause, so every side's previous request has finished its fork and teardown) and back to back.`,
    "",
    `Latest run: ${report.date} on ${report.commit}, load average ${report.host.loadavg_before.join(" ")} before, ${report.host.loadavg_after.join(" ")} after.`,
    "",
    ...placements.flatMap((placement) => [`## ${placement}`, "", placementTable(placement, report.languages), ""]),
    "## Runs",
    "",
    "Paired medians (p25–p75) of each recorded run, latest last.",
    "",
    runsTable(report.runs),
    "",
    NotesMarker,
    notes
  ].join("\n")

const main = async () => {
  const languages = runner.languages.filter((l): l is Language =>
    (process.env.BENCH_LANGUAGES ?? "javascript,typescript,python,bash,csharp").split(",").includes(l)
  )
  const loadBefore = os.loadavg()
  for (let block = 0; block < blocks; block++) {
    for (const placement of placements) {
      place(placement)
      for (const language of languages) {
        process.stdout.write(`block ${block + 1}/${blocks} ${placement} ${language}: warm…`)
        const into = slot(placement, language)
        await warmBlock(language, into)
        process.stdout.write(" cold…")
        await coldBlock(language, into, block === 0 ? 2 : 0)
        const w = paired(into.warmJitbox.slice(-1), into.warmRaw.slice(-1)).median
        const c = paired(into.coldJitbox.slice(-1), into.coldRaw.slice(-1)).median
        const s = into.warmSubshell.length > 0 ? ` vs subshell ${paired(into.warmJitbox.slice(-1), into.warmSubshell.slice(-1)).median}` : ""
        process.stdout.write(` warm ${w} cold ${c}${s}\n`)
      }
    }
  }
  place("all-cpus")
  const results: Record<string, LanguageReport> = {}
  for (const language of languages) {
    const byPlacement: Record<string, PlacementResult> = {}
    for (const placement of placements) byPlacement[placement] = summarize(slot(placement, language))
    results[language] = { ...byPlacement[headline]!, placements: byPlacement }
  }
  const dir = resultsDir()
  const jsonFile = path.join(dir, "sandbox.json")
  const mdFile = path.join(dir, "sandbox.md")
  let previousRuns: Array<RunLine> = []
  try {
    previousRuns = (JSON.parse(previous("sandbox.json") ?? "{}") as { runs?: Array<RunLine> }).runs ?? []
  } catch {
    // first run
  }
  let notes = ""
  try {
    const md = previous("sandbox.md") ?? ""
    const at = md.indexOf(NotesMarker)
    if (at !== -1) notes = md.slice(at + NotesMarker.length).replace(/^\n/, "")
  } catch {
    // first run
  }
  const date = new Date().toISOString()
  const head = commit()
  const triple = (r: PairedRatio) => [r.median, r.p25, r.p75]
  const run: RunLine = {
    date,
    commit: head,
    label,
    loadavg: loadBefore.map((l) => round(l, 2)),
    results: Object.fromEntries(placements.map((placement) => [
      placement,
      Object.fromEntries(languages.map((language) => {
        const r = results[language]!.placements[placement]!
        return [language, {
          warm: triple(r.warm_paired_ratio),
          cold: triple(r.cold_paired_ratio),
          ...(r.warm_paired_ratio_vs_subshell !== undefined ? { vs_subshell: triple(r.warm_paired_ratio_vs_subshell) } : {}),
          ...(r.warm_back_to_back !== undefined ? { vs_subshell_back_to_back: triple(r.warm_back_to_back.paired_ratio_vs_subshell) } : {}),
          warm_raw_us: r.warm_raw_us,
          warm_jitbox_us: r.warm_jitbox_us
        }]
      }))
    ]))
  }
  const report = {
    benchmark: "sandbox",
    date,
    commit: head,
    label,
    host: {
      node: process.version,
      platform: `${os.type()} ${os.release()} ${os.arch()}`,
      cpus: cpuCount,
      loadavg_before: loadBefore.map((l) => round(l, 2)),
      loadavg_after: os.loadavg().map((l) => round(l, 2))
    },
    method: {
      interleaving: "raw and jitbox samples alternate one by one, the order alternating (Bash: raw, subshell, jitbox rotate; each sampled after a pause, then again right after)",
      ratios: "warm_ratio / cold_ratio: ratio of medians; *_paired_ratio: median, p25 and p75 of jitbox sample / adjacent raw sample, and each block's median",
      placements: Object.fromEntries(placements.map((p) => [p, canPin ? `taskset -c ${allPlacements[p]} for the benchmark and every process it starts` : "not pinned (taskset failed)"])),
      headline_placement: headline,
      blocks,
      warm_pairs_per_block: warmPairs,
      bash_warm_pairs_per_block: bashWarmPairs,
      bash_pause_ms: bashPauseMs,
      cold_pairs_per_block: coldPairs
    },
    targets,
    isolation: runner.isolation.map(({ active, layer }) => ({ layer, active })),
    languages: results,
    runs: [...previousRuns, run].slice(-24)
  }
  fs.writeFileSync(jsonFile, JSON.stringify(report, null, 2) + "\n")
  fs.writeFileSync(mdFile, markdown(report, notes))
  for (const placement of placements) console.log(`\n${placement}\n${placementTable(placement, results)}`)
}

try {
  await main()
} finally {
  await runner.close()
  fs.rmSync(rawDir, { recursive: true, force: true })
  fs.rmSync(rawWork, { recursive: true, force: true })
}
