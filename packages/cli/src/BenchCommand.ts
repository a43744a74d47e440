/**
 * `jitbox bench`: times a code tool of a snapshot file with `@jitbox/bench`, beside its
 * direct-call and raw-transport floors measured in the same run, and prints a table (or, with
 * `--json`, the result as JSON). Where the tool runs: an embedded runtime (default: coordinator,
 * worker with sandboxed children, in-memory transport, all in this process), a plain in-process
 * `JitHarness` (`--harness`), or a remote session (`--session ID` with the usual `--server`,
 * `--creds`, `--namespace` and their JITBOX_* variables). `--out DIR` writes `result.json` and the
 * SVG charts there. Progress goes to stderr, and only when stderr is a terminal.
 *
 * Exit codes (set by bin.ts): 0 when the run completed, 1 when it failed (the tool errored, the
 * target could not be set up), 2 for a bad argument.
 *
 * @since 0.1.0
 */
import { Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import type { Bench, BenchError, BenchResult, Target } from "@jitbox/bench"
import type { HarnessError } from "@jitbox/core"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Connection from "./Connection.js"
import * as Progress from "./Progress.js"

/** `Bench.defaults` (a test checks), here so that `--help` and the other commands load no benchmark. @since 0.1.0 @category constants */
export const defaults = { concurrency: 1, warmup: 20, iterations: 200, maximumDepth: 16 } as const

const helpOf = (error: unknown) => HelpDoc.p(error instanceof Error ? error.message : String(error))

const atLeast = (name: string, min: number) => (value: number): number => {
  if (!Number.isInteger(value) || value < min) throw new Error(`--${name}: expected an integer of at least ${min}, got ${value}`)
  return value
}

/**
 * Depths written `0,1,2,4`; throws naming the option otherwise.
 *
 * @since 0.1.0
 * @category constructors
 */
export const parseDepths = (text: string): ReadonlyArray<number> => {
  const parts = text.split(",").map((part) => part.trim())
  const depths = parts.map(Number)
  if (parts.length === 0 || parts.some((part) => !/^\d+$/.test(part)) || depths.some((d) => d > defaults.maximumDepth)) {
    throw new Error(`--depths: expected comma-separated depths from 0 to ${defaults.maximumDepth} such as 0,1,2,4, got '${text}'`)
  }
  return depths
}

/** The arguments given as JSON text; throws naming the option when it is not JSON. @since 0.1.0 @category constructors */
export const parseArgs = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new Error(`--args: expected JSON such as '{"left":1,"right":2}', got '${text}' (${error instanceof Error ? error.message : String(error)})`)
  }
}

/** @since 0.1.0 @category options */
export const options = {
  ...Connection.options,
  snapshot: Options.file("snapshot", { exists: "yes" }).pipe(Options.withDescription("The snapshot file (JitHarnessSnapshot JSON) holding the tool")),
  tool: Options.text("tool").pipe(Options.withDescription("The code tool of the snapshot to time")),
  args: Options.text("args").pipe(
    Options.withDescription("The tool's arguments as JSON (default {})"),
    Options.mapTryCatch(parseArgs, helpOf),
    Options.optional
  ),
  concurrency: Options.integer("concurrency").pipe(
    Options.withDescription(`Calls in flight (default ${defaults.concurrency})`),
    Options.mapTryCatch(atLeast("concurrency", 1), helpOf),
    Options.withDefault(defaults.concurrency)
  ),
  depth: Options.integer("depth").pipe(
    Options.withDescription(`One nesting depth: generated composing tools put in front of the tool (0–${defaults.maximumDepth}, default 0)`),
    Options.mapTryCatch(atLeast("depth", 0), helpOf),
    Options.optional
  ),
  depths: Options.text("depths").pipe(
    Options.withDescription("Several nesting depths, comma-separated (0,1,2,4): one run each, and a latency-vs-depth chart"),
    Options.mapTryCatch(parseDepths, helpOf),
    Options.optional
  ),
  warmup: Options.integer("warmup").pipe(
    Options.withDescription(`Untimed calls before each measured phase (default ${defaults.warmup})`),
    Options.mapTryCatch(atLeast("warmup", 0), helpOf),
    Options.withDefault(defaults.warmup)
  ),
  iterations: Options.integer("iterations").pipe(
    Options.withDescription(`Timed calls of each measured phase (default ${defaults.iterations})`),
    Options.mapTryCatch(atLeast("iterations", 1), helpOf),
    Options.withDefault(defaults.iterations)
  ),
  json: Options.boolean("json").pipe(Options.withDescription("Print the result as JSON instead of a table")),
  out: Options.directory("out").pipe(
    Options.withDescription("Write result.json, latency-histogram.svg and latency-vs-depth.svg into this directory (created if missing)"),
    Options.optional
  ),
  harness: Options.boolean("harness").pipe(
    Options.withDescription("Run the tool on a plain JitHarness in this process (trusted code) instead of an embedded runtime")
  ),
  session: Options.text("session").pipe(
    Options.withDescription("Time the tool in this remote session over NATS (--server, --creds, --namespace); its missing snapshot tools are created in it"),
    Options.optional
  )
} as const

/** What the benchmark fails with (a bad argument is a `ValidationError`). @since 0.1.0 @category errors */
export type BenchCommandError = BenchError.BenchError | HarnessError.ConfigError

/** A bad combination of arguments: said on stderr (the parser says its own), then the `ValidationError`. */
const badArgument = (text: string) =>
  Console.error(`jitbox bench: ${text}`).pipe(Effect.zipRight(Effect.fail(ValidationError.invalidValue(HelpDoc.p(text)))))

const fixed = (x: number, digits = 1) => x.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })

/**
 * The result as a table: one row per floor and per depth.
 *
 * @since 0.1.0
 * @category rendering
 */
export const table = (result: BenchResult.BenchResult): string => {
  const rows: Array<ReadonlyArray<string>> = [
    ["phase", "median µs", "p99 µs", "calls/s", "median × direct", "median × raw", "calls/s ÷ direct"]
  ]
  const { direct, raw } = result.floors
  rows.push(["direct floor", fixed(direct.stats.median_us), fixed(direct.stats.p99_us), fixed(direct.stats.calls_per_s, 0), "1.00", "", "1.00"])
  if (raw !== null) {
    rows.push([
      "raw floor",
      fixed(raw.stats.median_us),
      fixed(raw.stats.p99_us),
      fixed(raw.stats.calls_per_s, 0),
      fixed(raw.stats.median_us / direct.stats.median_us, 2),
      "1.00",
      fixed(raw.stats.calls_per_s / direct.stats.calls_per_s, 2)
    ])
  }
  for (const run of result.runs) {
    rows.push([
      `depth ${run.depth}`,
      fixed(run.stats.median_us),
      fixed(run.stats.p99_us),
      fixed(run.stats.calls_per_s, 0),
      fixed(run.median_over_direct, 2),
      run.median_over_raw === null ? "–" : fixed(run.median_over_raw, 2),
      fixed(run.throughput_over_direct, 2)
    ])
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)))
  const line = (row: ReadonlyArray<string>) => row.map((cell, c) => c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)).join("  ").trimEnd()
  return [
    `${result.tool} on ${result.target.description}`,
    `${result.concurrency} in flight; ${result.warmup} warm-up and ${result.iterations} timed calls per phase; Node ${result.node}, ${result.cpus} CPUs`,
    "",
    line(rows[0]!),
    ...rows.slice(1).map(line),
    "",
    `direct floor: ${direct.description}`,
    ...(raw === null ? ["raw floor: none (a plain harness has no transport)"] : [`raw floor: ${raw.description}`])
  ].join("\n")
}

/**
 * The run's progress as `Progress`'s line on stderr: drawn on a terminal, nothing when piped.
 *
 * @since 0.1.0
 * @category progress
 */
export const progressOf = (progress: Progress.Progress) => (step: Bench.Progress): void =>
  step.stage === "done"
    ? progress.update({ label: "done", done: undefined, total: undefined, detail: undefined })
    : step.stage === "setup"
    ? progress.update({ label: `setting up ${step.what}`, done: undefined, total: undefined })
    : progress.update({ label: step.what, done: step.done, total: step.total })

/** @since 0.1.0 @category commands */
export const command = Command.make("bench", options, (config): Effect.Effect<void, BenchCommandError | ValidationError.ValidationError> =>
  Effect.gen(function*() {
    if (Option.isSome(config.depth) && Option.isSome(config.depths)) return yield* badArgument("give --depth or --depths, not both")
    if (config.harness && Option.isSome(config.session)) return yield* badArgument("--harness runs in this process and --session in a remote one: give one of them")
    if (Option.isSome(config.depth) && config.depth.value > defaults.maximumDepth) {
      return yield* badArgument(`--depth: at most ${defaults.maximumDepth}, got ${config.depth.value}`)
    }
    const depths = Option.isSome(config.depths) ? config.depths.value : Option.isSome(config.depth) ? [config.depth.value] : [0]
    let target: Target.TargetOptions = config.harness ? { kind: "harness" } : { kind: "embedded" }
    if (Option.isSome(config.session)) {
      const connection = yield* Connection.natsOptions(config, "jitbox-bench")
      target = {
        kind: "remote",
        servers: connection.servers,
        connection,
        namespace: config.namespace,
        session: config.session.value
      }
    }
    const { Bench } = yield* Effect.promise(() => import("@jitbox/bench"))
    const progress = Progress.make()
    const result = yield* Bench.benchmark({
      snapshot: config.snapshot,
      tool: config.tool,
      args: Option.getOrElse(config.args, () => ({})),
      target,
      concurrency: config.concurrency,
      depths,
      warmup: config.warmup,
      iterations: config.iterations,
      onProgress: progress.enabled ? progressOf(progress) : undefined
    }).pipe(Effect.ensuring(Effect.sync(progress.stop)))
    const written = Option.isSome(config.out) ? yield* Bench.write(result, config.out.value) : undefined
    if (config.json) {
      yield* Console.log(JSON.stringify(result, null, 2))
    } else {
      yield* Console.log(table(result))
      if (written !== undefined) yield* Console.log(`\nwrote ${written.result}, ${written.histogram}, ${written.depths}`)
    }
  })).pipe(
    Command.withDescription("Time a code tool of a snapshot (embedded, in a plain harness, or in a remote session) beside its direct-call and raw-transport floors")
  )

