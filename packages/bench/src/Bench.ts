/**
 * Benchmarking a tool of a snapshot: how long one call takes through a target (a plain harness, an
 * embedded runtime's session, a remote session over NATS) at a concurrency and at each nesting
 * depth asked, beside two floors measured in the same run at the same concurrency:
 *
 * - the direct-call floor (`DirectCall`): the tool's package invoked on a code runner of this
 *   process without any dispatch (the trusted runner for a trusted harness, a sandbox runner for
 *   targets whose code runs sandboxed);
 * - the raw-transport floor (`RawFloor`): the arguments carried to a warm raw child and back with no
 *   jitbox code (none for a plain harness).
 *
 * Each measured phase makes `warmup` untimed calls, then `iterations` timed ones, `concurrency` in
 * flight. The phases run one after the other: the direct floor, the raw floor, then the depths in
 * ascending order. `onProgress` hears each phase start, about every twentieth of its calls, and its
 * end. Two faces: `benchmark` (an Effect failing `BenchError`) and `run` (a Promise rejecting with
 * it); `write` / `writeFiles` put `result.json` and the charts in a directory.
 *
 *     const result = await Bench.run({ snapshot: "toolbox.json", tool: "add", args: { left: 1, right: 2 }, depths: [0, 1, 2] })
 *     await Bench.writeFiles(result, "bench-out")
 *
 * @since 0.1.0
 */
import { JitHarnessSnapshot } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { BenchSetupError, BenchToolFailed, describe, type BenchError } from "./BenchError.js"
import * as BenchResult from "./BenchResult.js"
import * as Chart from "./Chart.js"
import * as DirectCall from "./DirectCall.js"
import { sample } from "./Measure.js"
import * as RawFloor from "./RawFloor.js"
import * as Target from "./Target.js"

/** @since 0.1.0 @category models */
export interface Progress {
  /** `setup` while the target and floors start; `measuring` during a phase; `done` at the end. */
  readonly stage: "setup" | "measuring" | "done"
  /** The phase: `direct floor`, `raw floor` or `depth N` (or what is being set up). */
  readonly what: string
  /** Timed calls completed in the phase (0 during warm-up and setup). */
  readonly done: number
  readonly total: number
}

/** @since 0.1.0 @category models */
export interface BenchOptions {
  /** A snapshot, or the path of a snapshot file. */
  readonly snapshot: JitHarnessSnapshot.JitHarnessSnapshot | string
  /** A code tool of the snapshot. */
  readonly tool: string
  /** Its arguments (default `{}`). */
  readonly args?: unknown
  /** Where it runs (default an embedded runtime). */
  readonly target?: Target.TargetOptions | undefined
  /** Calls in flight (default 1). */
  readonly concurrency?: number | undefined
  /** Nesting depths, each a run (default `[0]`). */
  readonly depths?: ReadonlyArray<number> | undefined
  /** Untimed calls before each phase (default 20). */
  readonly warmup?: number | undefined
  /** Timed calls of each phase (default 200). */
  readonly iterations?: number | undefined
  readonly onProgress?: ((progress: Progress) => void) | undefined
}

/** @since 0.1.0 @category constants */
export const defaults = { concurrency: 1, depths: [0], warmup: 20, iterations: 200, maximumDepth: 16 } as const

interface Settings {
  readonly concurrency: number
  readonly depths: ReadonlyArray<number>
  readonly warmup: number
  readonly iterations: number
}

const integerAtLeast = (name: string, value: number, min: number, max = Number.MAX_SAFE_INTEGER) =>
  Number.isInteger(value) && value >= min && value <= max
    ? Effect.succeed(value)
    : Effect.fail(new BenchSetupError({ step: "reading the options", detail: `${name} must be an integer from ${min} to ${max}, got ${String(value)}` }))

/**
 * The options' numbers, checked; depths sorted without repeats.
 *
 * @since 0.1.0
 * @category validation
 */
export const settings = (options: Omit<BenchOptions, "snapshot" | "tool">): Effect.Effect<Settings, BenchSetupError> =>
  Effect.gen(function*() {
    const concurrency = yield* integerAtLeast("concurrency", options.concurrency ?? defaults.concurrency, 1, 1_024)
    const warmup = yield* integerAtLeast("warmup", options.warmup ?? defaults.warmup, 0)
    const iterations = yield* integerAtLeast("iterations", options.iterations ?? defaults.iterations, 1, 10_000_000)
    const asked = options.depths ?? defaults.depths
    if (asked.length === 0) return yield* new BenchSetupError({ step: "reading the options", detail: "depths must name at least one depth" })
    for (const depth of asked) yield* integerAtLeast("a depth", depth, 0, defaults.maximumDepth)
    return { concurrency, warmup, iterations, depths: [...new Set(asked)].sort((a, b) => a - b) }
  })

/** A path is read and decoded; a value is decoded too (it may come from JSON.parse, without the schema's defaults). */
const loadSnapshot = (snapshot: BenchOptions["snapshot"]) =>
  Effect.tryPromise({
    try: () => typeof snapshot === "string" ? JitHarnessSnapshot.load(snapshot) : Promise.resolve(JitHarnessSnapshot.fromJson(JSON.stringify(snapshot))),
    catch: (error) => new BenchSetupError({ step: "reading the snapshot", detail: describe(error) })
  })

/** The snapshot, which must hold the tool benchmarked. */
const loadWithTool = (options: BenchOptions) =>
  Effect.gen(function*() {
    const snapshot = yield* loadSnapshot(options.snapshot)
    if (!snapshot.tools.some((record) => record.name === options.tool)) {
      return yield* new BenchSetupError({
        step: "reading the snapshot",
        detail: `it has no code tool '${options.tool}' (its code tools: ${snapshot.tools.map((record) => record.name).join(", ") || "none"})`
      })
    }
    return snapshot
  })

/** Fails when the run would measure waiting rather than calls: for a concurrency slot, for a warm child, or past the invocation budget. */
const checkRoom = (target: Target.Target, s: Settings, deepest: number) =>
  Effect.gen(function*() {
    const budgets = target.budgets
    if (budgets !== undefined && s.concurrency > budgets.concurrentInvocations) {
      return yield* new BenchSetupError({
        step: "checking the session's budgets",
        detail: `${s.concurrency} calls in flight, and the policy allows ${budgets.concurrentInvocations} at once: the others would wait for a slot, and the figures would measure that wait`
      })
    }
    const held = Target.childrenHeld({ concurrency: s.concurrency, deepest })
    if (target.kind === "embedded" && held > Target.maximumWarmChildren) {
      return yield* new BenchSetupError({
        step: "checking the embedded worker's warm children",
        detail: `${s.concurrency} calls in flight at depth ${deepest} hold ${held} sandboxed children at once (one per code tool of each chain), and an embedded worker keeps at most ${Target.maximumWarmChildren} warm: the others would be started and evicted on every call, and the figures would measure that; lower the concurrency or the depth, or run against a session whose workers have room`
      })
    }
    if (budgets !== undefined && (s.warmup + s.iterations) * (deepest + 1) > budgets.invocations) {
      return yield* new BenchSetupError({
        step: "checking the session's budgets",
        detail: `${s.warmup + s.iterations} calls at depth ${deepest} make ${(s.warmup + s.iterations) * (deepest + 1)} invocations (more if the tool composes), and the policy allows ${budgets.invocations} per session`
      })
    }
  })

type Measure = (what: string, phase: BenchToolFailed["phase"], depth: number, call: (i: number) => Promise<unknown>) => Effect.Effect<
  { readonly stats: BenchResult.Stats; readonly histogram: BenchResult.Histogram },
  BenchToolFailed
>

/** Measures one phase (warm-up, then the timed calls), telling `progress` as it goes. */
const measurer = (tool: string, s: Settings, progress: (progress: Progress) => void): Measure => (what, phase, depth, call) =>
  Effect.tryPromise({
    try: () => {
      progress({ stage: "measuring", what, done: 0, total: s.iterations })
      const every = Math.max(1, Math.floor(s.iterations / 20))
      return sample(call, {
        ...s,
        onCall: (done) => {
          if (done % every === 0 && done < s.iterations) progress({ stage: "measuring", what, done, total: s.iterations })
        }
      }).then((sampled) => {
        progress({ stage: "measuring", what, done: s.iterations, total: s.iterations })
        return {
          stats: BenchResult.statsOf(sampled.latencies_us, sampled.seconds),
          histogram: BenchResult.histogramOf(sampled.latencies_us)
        }
      })
    },
    catch: (error) => new BenchToolFailed({ tool, phase, depth, detail: describe(error) })
  })

/** The direct floor's phase; its runner lives only for the phase. */
const directFloorOf = (target: Target.Target, snapshot: JitHarnessSnapshot.JitHarnessSnapshot, tool: string, args: unknown, measure: Measure) =>
  Effect.scoped(Effect.gen(function*() {
    const runner = yield* target.directRunner
    const direct = yield* Effect.acquireRelease(
      Effect.sync(() => DirectCall.make(snapshot, runner)),
      (direct) => Effect.promise(() => direct.release())
    )
    return yield* measure("direct floor", "direct floor", 0, () => direct.call(tool, args))
  }))

/** The raw floor's phase (none for a plain harness); its child or connection lives only for the phase. */
const rawFloorOf = (target: Target.Target, argsJson: string, measure: Measure, progress: (progress: Progress) => void) =>
  target.kind === "harness" ? Effect.succeed(undefined) : Effect.scoped(Effect.gen(function*() {
    progress({ stage: "setup", what: "the raw floor", done: 0, total: 0 })
    const raw = target.kind === "embedded" ? yield* RawFloor.pipe : yield* RawFloor.nats(target.nats!)
    const measured = yield* measure("raw floor", "raw floor", 0, () => raw.call(argsJson))
    return { description: raw.description, ...measured }
  }))

type Floor = Effect.Effect.Success<ReturnType<typeof directFloorOf>>

/** One depth's phase, in a session opened for it, set beside the floors. */
const depthRunOf = (
  target: Target.Target,
  depth: number,
  tool: string,
  args: unknown,
  floors: { readonly direct: Floor; readonly raw: Floor | undefined },
  measure: Measure,
  progress: (progress: Progress) => void
) =>
  Effect.scoped(Effect.gen(function*() {
    progress({ stage: "setup", what: `depth ${depth}`, done: 0, total: 0 })
    const session = yield* target.open(depth)
    const called = depth === 0 ? tool : Target.composingName(depth)
    return yield* measure(`depth ${depth}`, "target", depth, () => session.callTool(called, args)).pipe(Effect.map((m) => ({ ...m, called })))
  })).pipe(Effect.map((run): BenchResult.DepthRun => ({
    depth,
    called: run.called,
    stats: run.stats,
    histogram: run.histogram,
    median_over_direct: BenchResult.ratio(run.stats.median_us, floors.direct.stats.median_us) ?? 0,
    median_over_raw: BenchResult.ratio(run.stats.median_us, floors.raw?.stats.median_us),
    throughput_over_direct: BenchResult.ratio(run.stats.calls_per_s, floors.direct.stats.calls_per_s) ?? 0,
    throughput_over_raw: BenchResult.ratio(run.stats.calls_per_s, floors.raw?.stats.calls_per_s)
  })))

/**
 * Runs the benchmark; everything it started is stopped when it ends, however it ends.
 *
 * @since 0.1.0
 * @category running
 */
export const benchmark = (options: BenchOptions): Effect.Effect<BenchResult.BenchResult, BenchError> =>
  Effect.scoped(Effect.gen(function*() {
    const progress = options.onProgress ?? (() => undefined)
    const s = yield* settings(options)
    const snapshot = yield* loadWithTool(options)
    const args = options.args ?? {}
    const argsJson = JSON.stringify(args)
    const targetOptions = options.target ?? { kind: "embedded" }
    progress({ stage: "setup", what: `the ${targetOptions.kind} target`, done: 0, total: 0 })
    const deepest = s.depths[s.depths.length - 1]!
    const target = yield* Target.make(targetOptions, snapshot, options.tool, { concurrency: s.concurrency, deepest })
    yield* checkRoom(target, s, deepest)
    const measure = measurer(options.tool, s, progress)
    // each floor's runner or child lives only for its phase: fewer sandboxed processes at once
    progress({ stage: "setup", what: "the direct floor", done: 0, total: 0 })
    const directFloor = yield* directFloorOf(target, snapshot, options.tool, args, measure)
    const rawFloor = yield* rawFloorOf(target, argsJson, measure, progress)
    const runs: Array<BenchResult.DepthRun> = []
    for (const depth of s.depths) {
      runs.push(yield* depthRunOf(target, depth, options.tool, args, { direct: directFloor, raw: rawFloor }, measure, progress))
    }
    progress({ stage: "done", what: "", done: s.iterations, total: s.iterations })
    return {
      format_version: 1 as const,
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      target: { kind: target.kind, description: target.description, session: target.session },
      tool: options.tool,
      args,
      concurrency: s.concurrency,
      warmup: s.warmup,
      iterations: s.iterations,
      floors: {
        direct: {
          description: `the tool's package invoked on ${
            target.kind === "harness" ? "the harness's code runner" : "a sandbox runner"
          } in this process through the CodeRunner seam, no dispatch`,
          ...directFloor
        },
        raw: rawFloor ?? null
      },
      runs
    }
  }))

/**
 * The Promise face of `benchmark`: rejects with the `BenchError`.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (options: BenchOptions): Promise<BenchResult.BenchResult> =>
  Effect.runPromise(Effect.either(benchmark(options))).then((result) => result._tag === "Right" ? result.right : Promise.reject(result.left))

/** The files `write` puts in its directory. @since 0.1.0 @category constants */
export const files = { result: "result.json", histogram: "latency-histogram.svg", depths: "latency-vs-depth.svg" } as const

/**
 * Writes `result.json`, `latency-histogram.svg` and `latency-vs-depth.svg` into `directory`
 * (made if missing); answers their paths.
 *
 * @since 0.1.0
 * @category writing
 */
export const write = (result: BenchResult.BenchResult, directory: string): Effect.Effect<Record<keyof typeof files, string>, BenchSetupError> =>
  Effect.tryPromise({
    try: async () => {
      await fs.mkdir(directory, { recursive: true })
      const paths = {
        result: path.join(directory, files.result),
        histogram: path.join(directory, files.histogram),
        depths: path.join(directory, files.depths)
      }
      await fs.writeFile(paths.result, BenchResult.toJson(result))
      await fs.writeFile(paths.histogram, Chart.histogram(result))
      await fs.writeFile(paths.depths, Chart.depthChart(result))
      return paths
    },
    catch: (error) => new BenchSetupError({ step: `writing the results into ${directory}`, detail: describe(error) })
  })

/** The Promise face of `write`. @since 0.1.0 @category writing */
export const writeFiles = (result: BenchResult.BenchResult, directory: string): Promise<Record<keyof typeof files, string>> =>
  Effect.runPromise(Effect.either(write(result, directory))).then((written) => written._tag === "Right" ? written.right : Promise.reject(written.left))
