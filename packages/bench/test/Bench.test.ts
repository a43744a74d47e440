/**
 * The benchmark API on a snapshot's tools, in this process: a plain harness and an embedded
 * runtime (a coordinator, a worker with sandboxed children), a JavaScript tool and a composed one,
 * 1 and 4 calls in flight, depths 0 to 2. What is asserted is the result's structure (counts,
 * order of quantiles, ratios computed from the floors measured in the same run), the typed failure
 * of a tool that throws, and the charts as XML; never a duration.
 */
import { Bench, BenchError, BenchResult, Chart } from "@jitbox/bench"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { elements, parseXml, toolbox } from "./toolbox.js"

const small = { warmup: 2, iterations: 12 } as const
const args = { left: 2, right: 3 }

/** The structure every result must have for `depths`, `iterations`, and whether a raw floor was measured. */
const expectSane = (result: BenchResult.BenchResult, depths: ReadonlyArray<number>, raw: boolean) => {
  expect(BenchResult.decode(JSON.parse(BenchResult.toJson(result))).pipe(Effect.runSync)).toEqual(result)
  const phases = [result.floors.direct, ...(result.floors.raw === null ? [] : [result.floors.raw]), ...result.runs]
  expect(result.floors.raw !== null).toBe(raw)
  expect(result.runs.map((run) => run.depth)).toEqual(depths)
  for (const phase of phases) {
    expect(phase.stats.iterations).toBe(small.iterations)
    expect(phase.histogram.counts.reduce((a, b) => a + b, 0)).toBe(small.iterations)
    expect(phase.histogram.edges_us).toHaveLength(phase.histogram.counts.length + 1)
    expect(phase.stats.p99_us).toBeGreaterThanOrEqual(phase.stats.median_us)
    expect(phase.stats.max_us).toBeGreaterThanOrEqual(phase.stats.p99_us)
    expect(phase.stats.median_us).toBeGreaterThanOrEqual(phase.stats.min_us)
    expect(phase.stats.calls_per_s).toBeGreaterThan(0)
  }
  const direct = result.floors.direct.stats
  for (const run of result.runs) {
    expect(run.called).toBe(run.depth === 0 ? result.tool : `bench_depth_${run.depth}`)
    expect(run.median_over_direct).toBeCloseTo(run.stats.median_us / direct.median_us, 2)
    expect(run.throughput_over_direct).toBeCloseTo(run.stats.calls_per_s / direct.calls_per_s, 2)
    if (result.floors.raw === null) {
      expect(run.median_over_raw).toBeNull()
      expect(run.throughput_over_raw).toBeNull()
    } else {
      expect(run.median_over_raw).toBeCloseTo(run.stats.median_us / result.floors.raw.stats.median_us, 2)
      expect(run.throughput_over_raw).toBeCloseTo(run.stats.calls_per_s / result.floors.raw.stats.calls_per_s, 2)
    }
  }
}

const out = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-bench-test-"))
afterAll(() => fs.rmSync(out, { recursive: true, force: true }))

describe("a plain harness", () => {
  it.each([
    ["add", 1],
    ["add", 4],
    ["twice", 1],
    ["twice", 4]
  ] as const)("%s with %i in flight at depths 0, 1, 2", async (tool, concurrency) => {
    const seen: Array<Bench.Progress> = []
    const result = await Bench.run({
      snapshot: toolbox,
      tool,
      args,
      target: { kind: "harness" },
      concurrency,
      depths: [2, 0, 1],
      ...small,
      onProgress: (progress) => seen.push(progress)
    })
    expectSane(result, [0, 1, 2], false)
    expect(result.concurrency).toBe(concurrency)
    expect(result.target.kind).toBe("harness")
    const measured = new Set(seen.filter((p) => p.stage === "measuring" && p.done === p.total).map((p) => p.what))
    expect([...measured]).toEqual(["direct floor", "depth 0", "depth 1", "depth 2"])
    expect(seen.at(-1)!.stage).toBe("done")
  }, 60_000)

  it("a tool that throws fails the run with BenchToolFailed, on both faces", async () => {
    const options = { snapshot: toolbox, tool: "fails", target: { kind: "harness" }, ...small } as const
    const rejected = await Bench.run(options).then(() => undefined, (error: unknown) => error)
    expect(rejected).toBeInstanceOf(BenchError.BenchToolFailed)
    expect((rejected as BenchError.BenchToolFailed).detail).toContain("out of range on purpose")
    const failed = await Effect.runPromise(Effect.flip(Bench.benchmark(options)))
    expect(failed._tag).toBe("BenchToolFailed")
  })

  it("a tool missing from the snapshot and bad numbers fail BenchSetupError before anything runs", async () => {
    const missing = await Effect.runPromise(Effect.flip(Bench.benchmark({ snapshot: toolbox, tool: "nope", target: { kind: "harness" } })))
    expect(missing._tag).toBe("BenchSetupError")
    expect(missing.message).toContain("no code tool 'nope'")
    const bad = await Effect.runPromise(Effect.flip(Bench.benchmark({ snapshot: toolbox, tool: "add", concurrency: 0, target: { kind: "harness" } })))
    expect(bad.message).toContain("concurrency must be an integer from 1")
  })
})

describe("an embedded runtime", () => {
  // one call in flight at depths 0..2, and 4 in flight (4 calls of `twice` at depth 2 run 16
  // invocations at once on the policy's 8 slots and the worker's 8: nested calls run on their
  // caller's slot)
  it.each([
    ["add", 1, [0, 1, 2]],
    ["twice", 1, [0, 1, 2]],
    ["add", 4, [0]],
    ["twice", 4, [0, 2]]
  ] as const)("%s with %i in flight at depths %j", async (tool, concurrency, depths) => {
    const result = await Bench.run({ snapshot: toolbox, tool, args, target: { kind: "embedded" }, concurrency, depths, ...small })
    expectSane(result, depths, true)
    expect(result.target.kind).toBe("embedded")
    const written = await Bench.writeFiles(result, path.join(out, `${tool}-${concurrency}`))
    expect(BenchResult.decode(JSON.parse(fs.readFileSync(written.result, "utf8"))).pipe(Effect.runSync)).toEqual(result)
    const histogram = parseXml(fs.readFileSync(written.histogram, "utf8"))
    // one panel per floor and per depth, each with its bars
    expect(elements(histogram, "g", "panel")).toHaveLength(2 + depths.length)
    const bars = elements(histogram, "rect", "bar")
    expect(bars.length).toBe([result.floors.direct, result.floors.raw!, ...result.runs].reduce((n, phase) => n + phase.histogram.counts.length, 0))
    const chart = parseXml(fs.readFileSync(written.depths, "utf8"))
    expect(elements(chart, "circle", "point")).toHaveLength(2 * depths.length)
    expect(elements(chart, "line", "floor")).toHaveLength(2)
  }, 120_000)

  it("refuses up front more calls in flight than the policy runs at once", async () => {
    const failed = await Effect.runPromise(Effect.flip(Bench.benchmark({ snapshot: toolbox, tool: "add", concurrency: 9, depths: [2], ...small })))
    expect(failed._tag).toBe("BenchSetupError")
    expect(failed.message).toContain("policy allows 8")
  }, 60_000)

  it("refuses up front more sandboxed children at once than the embedded worker keeps warm", async () => {
    // 4 chains of 5 code tools hold 20 children: past the 16 kept warm, every call would start some
    const failed = await Effect.runPromise(Effect.flip(Bench.benchmark({ snapshot: toolbox, tool: "add", concurrency: 4, depths: [0, 4], ...small })))
    expect(failed._tag).toBe("BenchSetupError")
    expect(failed.message).toContain("hold 20 sandboxed children at once")
    expect(failed.message).toContain("keeps at most 16 warm")
  }, 60_000)

  it("a tool that throws in the sandbox fails the run with BenchToolFailed", async () => {
    const failed = await Effect.runPromise(Effect.flip(Bench.benchmark({ snapshot: toolbox, tool: "fails", ...small })))
    expect(failed._tag).toBe("BenchToolFailed")
    expect((failed as BenchError.BenchToolFailed).detail).toContain("out of range on purpose")
  }, 60_000)
})

describe("the charts", () => {
  const stats = (median: number) => ({ iterations: 3, median_us: median, p99_us: median * 2, mean_us: median, min_us: median / 2, max_us: median * 2, calls_per_s: 10 })
  const result: BenchResult.BenchResult = {
    format_version: 1,
    date: "2026-12-01T00:00:00.000Z",
    node: "v20",
    cpus: 2,
    target: { kind: "harness", description: "a <harness> & \"quotes\"", session: "s" },
    tool: "a<b>&c",
    args: {},
    concurrency: 1,
    warmup: 0,
    iterations: 3,
    floors: { direct: { description: "d", stats: stats(1), histogram: BenchResult.histogramOf([0.5, 1, 2]) }, raw: null },
    runs: [0, 3].map((depth) => ({
      depth,
      called: "x",
      stats: stats(10 + depth),
      // all samples equal: one bin
      histogram: BenchResult.histogramOf([5, 5, 5]),
      median_over_direct: 10,
      median_over_raw: null,
      throughput_over_direct: 1,
      throughput_over_raw: null
    }))
  }

  it("escape names and draw one bar per bin and two points per depth, with axes and labels", () => {
    const histogram = parseXml(Chart.histogram(result))
    expect(elements(histogram, "rect", "bar")).toHaveLength(BenchResult.defaultBins + 1 + 1)
    expect(histogram.getElementsByTagName("title")[0]!.textContent).toContain("a<b>&c")
    const chart = parseXml(Chart.depthChart(result))
    expect(elements(chart, "circle", "point")).toHaveLength(4)
    expect(elements(chart, "line", "floor")).toHaveLength(1)
    expect(elements(chart, "line", "tick").length).toBeGreaterThan(2)
    expect(Array.from(chart.getElementsByTagName("text")).some((text) => text.textContent === "latency µs (log scale)")).toBe(true)
  })

  it("the parser used here rejects a document that is not well-formed", () => {
    expect(() => parseXml("<svg><rect></svg>")).toThrow()
  })
})
