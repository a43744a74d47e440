/**
 * Sandbox overhead, per language, in one run:
 *
 * (a) warm: a JSON-lines round trip to a raw warm child spawned with the same layers (prlimit,
 *     bwrap, seccomp, uid, permission flags, scrubbed environment), a minimal echo loop with no
 *     jitbox, versus a jitbox warm `invoke` of a trivial echo tool;
 * (b) cold: spawning that raw child and doing one round trip, versus a jitbox `activate` of a new
 *     version plus its first `invoke`.
 *
 * Raw and jitbox samples alternate (ABAB) so both see the same machine load. Medians are written to
 * benchmarks/results/sandbox.json with warm_ratio and cold_ratio per language, and a Markdown table
 * to benchmarks/results/sandbox.md. Targets: warm ≤ 1.3×, cold ≤ 1.2×.
 *
 * For Bash the JT-CTR-06 contract needs a fresh process per invocation (stdin to EOF, exactly one
 * JSON value on stdout), so a second raw baseline forks a subshell per request, the least a
 * correct warm Bash runner can do; its ratio is reported as warm_ratio_vs_subshell.
 *
 * Run: pnpm bench:sandbox   (BENCH_WARM, BENCH_COLD override the iteration counts)
 */
import type { CodeRunner } from "../packages/core/src/index.js"
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { launch, type Mount } from "../packages/sandbox/src/internal/spawn.js"
import { SandboxConfig, SandboxLayers, SandboxRunner } from "../packages/sandbox/src/index.js"

type Language = CodeRunner.CodeSource["language"]

const warmIterations = Number(process.env.BENCH_WARM ?? 3000)
const coldIterations = Number(process.env.BENCH_COLD ?? 30)
const warmBudgetMs = 20_000

const options: SandboxConfig.SandboxOptions = { maximumRuntimeEnvironments: 4 }
const config = SandboxConfig.make(options)
const iso = SandboxLayers.detect(config)
const runner = SandboxRunner.make(options)
const context: CodeRunner.InvocationContext = {
  callId: "bench",
  toolName: "echo",
  depth: 0,
  signal: undefined,
  callTool: () => Promise.reject(new Error("no composition in this benchmark"))
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
write(
  "echo.mjs",
  `let b = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (c) => {
  b += c
  let i
  while ((i = b.indexOf("\\n")) !== -1) {
    const m = JSON.parse(b.slice(0, i))
    b = b.slice(i + 1)
    process.stdout.write(JSON.stringify({ id: m.id, value: m.args }) + "\\n")
  }
})
`
)
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

const pkg: Mount = { host: rawDir, inside: iso.bwrap !== undefined ? "/mnt/pkg" : rawDir, writable: false }
const work: Mount = { host: rawWork, inside: iso.bwrap !== undefined ? "/mnt/work" : rawWork, writable: true }

const rawLaunch = (language: Language | "bash-subshell"): ChildProcessWithoutNullStreams => {
  const memory = config.limits.memoryMiB
  const base = { env: {}, mounts: [pkg, work], workDir: work, marker: "jitbox-bench-raw" }
  switch (language) {
    case "javascript":
    case "typescript": {
      const flags = iso.permissionFlag !== undefined ? [iso.permissionFlag, `--allow-fs-read=${pkg.inside}`] : []
      return launch(iso, config, {
        ...base,
        command: config.nodePath,
        args: [...flags, ...iso.nodeFlags, `--max-old-space-size=${memory}`, `${pkg.inside}/echo.mjs`],
        addressSpaceMiB: memory + SandboxLayers.NodeAddressSpaceExtraMiB,
        noFork: true
      })
    }
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
        args: ["--norc", "--noprofile", `${pkg.inside}/${language === "bash" ? "echo.sh" : "echo-subshell.sh"}`],
        addressSpaceMiB: memory,
        noFork: false
      })
    default:
      throw new Error(`no raw child for ${language}`)
  }
}

/** A raw child with a promise per reply line. */
const rawChild = (language: Language | "bash-subshell") => {
  const proc = rawLaunch(language)
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
  const common = { toolName: "echo", versionId, language, entrypoint: "echo" }
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
  }
}

// ---------------------------------------------------------------------------------------------

const median = (samples: ReadonlyArray<number>): number => {
  const sorted = [...samples].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}
const time = async (f: () => Promise<unknown>): Promise<number> => {
  const start = performance.now()
  await f()
  return performance.now() - start
}

interface LanguageResult {
  warm_raw_us: number
  warm_jitbox_us: number
  warm_ratio: number
  warm_samples: number
  warm_raw_subshell_us?: number
  warm_ratio_vs_subshell?: number
  cold_raw_ms: number
  cold_jitbox_ms: number
  cold_ratio: number
  cold_samples: number
}

const warm = async (language: Language) => {
  const raw = rawChild(language)
  const code = await runner.activate(echoSource(language))
  const iterations = language === "bash" ? Math.min(warmIterations, 400) : warmIterations
  const warmup = Math.ceil(iterations / 10)
  const rawSamples: Array<number> = []
  const jitboxSamples: Array<number> = []
  const started = performance.now()
  for (let i = 0; i < iterations + warmup && performance.now() - started < warmBudgetMs; i++) {
    const a = await time(() => raw.roundTrip())
    const b = await time(() => code.invoke({ i }, context))
    if (i >= warmup) {
      rawSamples.push(a)
      jitboxSamples.push(b)
    }
  }
  await raw.kill()
  await code.dispose()
  let subshell: number | undefined
  if (language === "bash") {
    const forking = rawChild("bash-subshell")
    const samples: Array<number> = []
    for (let i = 0; i < 20; i++) await forking.roundTrip()
    for (let i = 0; i < Math.min(rawSamples.length, 200); i++) samples.push(await time(() => forking.roundTrip()))
    await forking.kill()
    subshell = median(samples)
  }
  return { raw: median(rawSamples), jitbox: median(jitboxSamples), samples: rawSamples.length, subshell }
}

const cold = async (language: Language) => {
  const rawSamples: Array<number> = []
  const jitboxSamples: Array<number> = []
  const warmup = 3
  for (let i = 0; i < coldIterations + warmup; i++) {
    let child: ReturnType<typeof rawChild> | undefined
    const a = await time(async () => {
      child = rawChild(language)
      await child.roundTrip()
    })
    await child!.kill()
    let code: CodeRunner.ActivatedCode | undefined
    const b = await time(async () => {
      code = await runner.activate(echoSource(language))
      await code.invoke({ i }, context)
    })
    await code!.dispose()
    if (i >= warmup) {
      rawSamples.push(a)
      jitboxSamples.push(b)
    }
  }
  return { raw: median(rawSamples), jitbox: median(jitboxSamples), samples: rawSamples.length }
}

const main = async () => {
  const languages = runner.languages.filter((l): l is Language => ["javascript", "typescript", "python", "bash"].includes(l))
  const loadBefore = os.loadavg()
  const results: Record<string, LanguageResult> = {}
  for (const language of languages) {
    process.stdout.write(`${language}: warm…`)
    const w = await warm(language)
    process.stdout.write(" cold…")
    const c = await cold(language)
    results[language] = {
      warm_raw_us: round(w.raw * 1000),
      warm_jitbox_us: round(w.jitbox * 1000),
      warm_ratio: round(w.jitbox / w.raw, 2),
      warm_samples: w.samples,
      ...(w.subshell !== undefined
        ? { warm_raw_subshell_us: round(w.subshell * 1000), warm_ratio_vs_subshell: round(w.jitbox / w.subshell, 2) }
        : {}),
      cold_raw_ms: round(c.raw, 2),
      cold_jitbox_ms: round(c.jitbox, 2),
      cold_ratio: round(c.jitbox / c.raw, 2),
      cold_samples: c.samples
    }
    process.stdout.write(" done\n")
  }
  const report = {
    benchmark: "sandbox",
    date: new Date().toISOString(),
    host: {
      node: process.version,
      platform: `${os.type()} ${os.release()} ${os.arch()}`,
      cpus: os.cpus().length,
      loadavg_before: loadBefore.map((l) => round(l, 2)),
      loadavg_after: os.loadavg().map((l) => round(l, 2))
    },
    targets: { warm_ratio: 1.3, cold_ratio: 1.2 },
    isolation: runner.isolation.map(({ active, layer }) => ({ layer, active })),
    languages: results
  }
  const dir = path.join(path.dirname(new URL(import.meta.url).pathname), "results")
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "sandbox.json"), JSON.stringify(report, null, 2) + "\n")
  fs.writeFileSync(path.join(dir, "sandbox.md"), table(report.languages, report.targets) + "\n")
  console.log(table(report.languages, report.targets))
}

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits

const table = (results: Record<string, LanguageResult>, targets: { warm_ratio: number; cold_ratio: number }) => {
  const mark = (ratio: number, target: number) => `${ratio.toFixed(2)}× ${ratio <= target ? "✓" : "✗"}`
  const rows = Object.entries(results).map(([language, r]) =>
    `| ${language} | ${r.warm_raw_us} | ${r.warm_jitbox_us} | ${mark(r.warm_ratio, targets.warm_ratio)} | ${r.cold_raw_ms} | ${r.cold_jitbox_ms} | ${mark(r.cold_ratio, targets.cold_ratio)} |`
  )
  const notes = Object.entries(results)
    .filter(([, r]) => r.warm_raw_subshell_us !== undefined)
    .map(([language, r]) =>
      `\n${language}: a raw child that forks a subshell per request (the least a fresh-process-per-invocation runner does) takes ${r.warm_raw_subshell_us} µs; jitbox is ${r.warm_ratio_vs_subshell}× that.`
    )
  return [
    `| language | warm raw µs | warm jitbox µs | warm ratio (≤ ${targets.warm_ratio}) | cold raw ms | cold jitbox ms | cold ratio (≤ ${targets.cold_ratio}) |`,
    "|---|---:|---:|---:|---:|---:|---:|",
    ...rows
  ].join("\n") + notes.join("")
}

try {
  await main()
} finally {
  await runner.close()
  fs.rmSync(rawDir, { recursive: true, force: true })
  fs.rmSync(rawWork, { recursive: true, force: true })
}
