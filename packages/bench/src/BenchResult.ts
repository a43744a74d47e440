/**
 * What a benchmark run answers and writes as `result.json`: the settings, the two floors and one
 * entry per nesting depth, each with its statistics, a latency histogram and its ratios over the
 * floors. An effect Schema, so a result file read back is decoded, not trusted.
 *
 * Ratios: `median_over_*` is the run's median latency over the floor's, `throughput_over_*` the
 * run's calls per second over the floor's (both from samples taken in the same run, at the same
 * concurrency); `null` where a floor was not measured (a plain harness has no transport).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { quantile, round } from "./Measure.js"

/** Latency statistics of one timed phase (µs) and its throughput. @since 0.1.0 @category schemas */
export const Stats = Schema.Struct({
  iterations: Schema.Int,
  median_us: Schema.Number,
  p99_us: Schema.Number,
  mean_us: Schema.Number,
  min_us: Schema.Number,
  max_us: Schema.Number,
  calls_per_s: Schema.Number
})

/** @since 0.1.0 @category models */
export interface Stats extends Schema.Schema.Type<typeof Stats> {}

/**
 * Bins from the fastest to the slowest call: `counts[i]` calls took `edges_us[i]`–`edges_us[i + 1]`
 * (the last bin includes its upper edge). `log` bins grow by the same factor (latencies have long
 * tails: the body and the tail both stay readable), `linear` ones by the same width (used when the
 * fastest call took no measurable time).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Histogram = Schema.Struct({
  scale: Schema.Literal("log", "linear"),
  edges_us: Schema.Array(Schema.Number),
  counts: Schema.Array(Schema.Int)
})

/** @since 0.1.0 @category models */
export interface Histogram extends Schema.Schema.Type<typeof Histogram> {}

/** A floor: what it measured and how. @since 0.1.0 @category schemas */
export const Floor = Schema.Struct({
  description: Schema.String,
  stats: Stats,
  histogram: Histogram
})

/** @since 0.1.0 @category schemas */
export const DepthRun = Schema.Struct({
  /** Composing tools put in front of the tool: 0 calls it directly. */
  depth: Schema.Int,
  /** The tool called from outside: the tool itself at depth 0, else the outermost composing tool. */
  called: Schema.String,
  stats: Stats,
  histogram: Histogram,
  median_over_direct: Schema.Number,
  median_over_raw: Schema.NullOr(Schema.Number),
  throughput_over_direct: Schema.Number,
  throughput_over_raw: Schema.NullOr(Schema.Number)
})

/** @since 0.1.0 @category models */
export interface DepthRun extends Schema.Schema.Type<typeof DepthRun> {}

/** Where the tool ran. @since 0.1.0 @category schemas */
export const TargetKind = Schema.Literal("harness", "embedded", "remote")

/** @since 0.1.0 @category schemas */
export const BenchResult = Schema.Struct({
  format_version: Schema.Literal(1),
  date: Schema.String,
  node: Schema.String,
  cpus: Schema.Int,
  target: Schema.Struct({
    kind: TargetKind,
    description: Schema.String,
    /** The remote session's id (remote), else the id of the benchmark's own session. */
    session: Schema.String
  }),
  tool: Schema.String,
  args: Schema.Unknown,
  concurrency: Schema.Int,
  warmup: Schema.Int,
  iterations: Schema.Int,
  floors: Schema.Struct({
    direct: Floor,
    raw: Schema.NullOr(Floor)
  }),
  runs: Schema.Array(DepthRun)
})

/** @since 0.1.0 @category models */
export interface BenchResult extends Schema.Schema.Type<typeof BenchResult> {}

/** Decodes a result read back (a `result.json`). @since 0.1.0 @category decoding */
export const decode = Schema.decodeUnknown(BenchResult)

/** The JSON text of a result, as written to `result.json`. @since 0.1.0 @category encoding */
export const toJson = (result: BenchResult): string => JSON.stringify(Schema.encodeSync(BenchResult)(result), null, 2) + "\n"

/** Statistics of latencies (µs) sampled over `seconds`. @since 0.1.0 @category constructors */
export const statsOf = (latencies: ReadonlyArray<number>, seconds: number): Stats => {
  const n = latencies.length
  const sum = latencies.reduce((a, b) => a + b, 0)
  return {
    iterations: n,
    median_us: round(quantile(latencies, 0.5), 2),
    p99_us: round(quantile(latencies, 0.99), 2),
    mean_us: n === 0 ? 0 : round(sum / n, 2),
    min_us: n === 0 ? 0 : round(Math.min(...latencies), 2),
    max_us: n === 0 ? 0 : round(Math.max(...latencies), 2),
    calls_per_s: seconds > 0 ? round(n / seconds, 1) : 0
  }
}

/** Default number of histogram bins. @since 0.1.0 @category constants */
export const defaultBins = 30

/** A histogram of latencies (µs) in `bins` bins from the smallest to the largest (one bin when they are all equal). @since 0.1.0 @category constructors */
export const histogramOf = (latencies: ReadonlyArray<number>, bins = defaultBins): Histogram => {
  if (latencies.length === 0) return { scale: "linear", edges_us: [], counts: [] }
  let lo = Infinity
  let hi = -Infinity
  for (const x of latencies) {
    if (x < lo) lo = x
    if (x > hi) hi = x
  }
  if (hi === lo) return { scale: "linear", edges_us: [lo, hi], counts: [latencies.length] }
  const scale = lo > 0 ? "log" : "linear"
  const position = scale === "log" ? (x: number) => Math.log(x / lo) / Math.log(hi / lo) : (x: number) => (x - lo) / (hi - lo)
  const edge = scale === "log" ? (i: number) => lo * (hi / lo) ** (i / bins) : (i: number) => lo + (hi - lo) * (i / bins)
  const counts = Array.from({ length: bins }, () => 0)
  for (const x of latencies) counts[Math.min(bins - 1, Math.floor(position(x) * bins))]!++
  return { scale, edges_us: Array.from({ length: bins + 1 }, (_, i) => round(i === bins ? hi : edge(i), 3)), counts }
}

/** `a / b` to three decimals; `null` when `b` is missing or not positive. @since 0.1.0 @category utils */
export const ratio = (a: number, b: number | undefined): number | null =>
  b === undefined || !(b > 0) ? null : round(a / b, 3)
