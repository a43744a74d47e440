/**
 * Charts of a `BenchResult` as standalone SVG documents a person can open in any viewer:
 *
 * - `histogram`: one panel per nesting depth (and one per floor), bars of the latency histogram,
 *   with the median and p99 marked;
 * - `depthChart`: median and p99 latency against nesting depth (points joined by lines), the two
 *   floors' medians as dashed horizontal lines.
 *
 * Plain strings: axes, ticks, labels and a legend, no script, no external resources. Every text is
 * XML-escaped.
 *
 * @since 0.1.0
 */
import type { BenchResult, Histogram, Stats } from "./BenchResult.js"

const escape = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&apos;")

const fmt = (x: number): string => {
  if (x === 0) return "0"
  const a = Math.abs(x)
  if (a >= 100_000) return `${Math.round(x / 1000)}k`
  if (a >= 10_000) return `${(x / 1000).toFixed(1)}k`
  if (a >= 100) return String(Math.round(x))
  if (a >= 10) return x.toFixed(1)
  return x.toFixed(2)
}

/** About `count` round tick values covering [lo, hi]. */
const linearTicks = (lo: number, hi: number, count = 5): Array<number> => {
  if (!(hi > lo)) return [lo]
  const raw = (hi - lo) / count
  const magnitude = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? 10 * magnitude
  const out: Array<number> = []
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(Math.round(t * 1e9) / 1e9)
  return out
}

/** 1, 2 and 5 times the powers of ten within [lo, hi] (only the powers when they are enough). */
const logTicks = (lo: number, hi: number): Array<number> => {
  const out: Array<number> = []
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) {
      const t = m * 10 ** e
      if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) out.push(t)
    }
  }
  const powers = out.filter((t) => Number.isInteger(Math.log10(t)))
  return powers.length >= 3 ? powers : out
}

/** One axis: its range, whether it is logarithmic, its label and (optionally) its ticks. */
interface Axis {
  readonly lo: number
  readonly hi: number
  readonly log?: boolean | undefined
  readonly label: string
  readonly ticks?: ReadonlyArray<number> | undefined
  readonly tickLabel?: ((value: number) => string) | undefined
}

/** Where `v` falls on `axis`, from 0 to 1. */
const fraction = (axis: Axis, v: number): number => {
  if (axis.hi === axis.lo) return 0.5
  return axis.log === true ? Math.log(Math.max(v, axis.lo) / axis.lo) / Math.log(axis.hi / axis.lo) : (v - axis.lo) / (axis.hi - axis.lo)
}

const ticksOf = (axis: Axis, count: number) => axis.ticks ?? (axis.log === true ? logTicks(axis.lo, axis.hi) : linearTicks(axis.lo, axis.hi, count))

const n = (x: number) => (Math.round(x * 100) / 100).toString()

const document = (width: number, height: number, title: string, body: ReadonlyArray<string>): string =>
  [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<title>${escape(title)}</title>`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${escape(title)}</text>`,
    ...body,
    `</svg>`,
    ""
  ].join("\n")

interface Frame {
  readonly x: number
  readonly y: number
  readonly width: number
  readonly height: number
}

/** Axes with ticks and labels; answers the data → pixel scales. */
const axes = (frame: Frame, x: Axis, y: Axis) => {
  const sx = (v: number) => frame.x + fraction(x, v) * frame.width
  const sy = (v: number) => frame.y + frame.height - (y.hi === y.lo ? 0 : fraction(y, v) * frame.height)
  const bottom = frame.y + frame.height
  const xTicks = ticksOf(x, 5)
  const yTicks = ticksOf(y, 4)
  const xLabel = x.tickLabel ?? fmt
  const yLabel = y.tickLabel ?? fmt
  const parts = [
    `<g class="axes" stroke="#333333" stroke-width="1">`,
    `<line x1="${n(frame.x)}" y1="${n(bottom)}" x2="${n(frame.x + frame.width)}" y2="${n(bottom)}"/>`,
    `<line x1="${n(frame.x)}" y1="${n(frame.y)}" x2="${n(frame.x)}" y2="${n(bottom)}"/>`,
    ...xTicks.map((t) => `<line class="tick" x1="${n(sx(t))}" y1="${n(bottom)}" x2="${n(sx(t))}" y2="${n(bottom + 4)}"/>`),
    ...yTicks.map((t) => `<line class="tick" x1="${n(frame.x - 4)}" y1="${n(sy(t))}" x2="${n(frame.x)}" y2="${n(sy(t))}"/>`),
    `</g>`,
    ...xTicks.map((t) => `<text x="${n(sx(t))}" y="${n(bottom + 15)}" text-anchor="middle">${escape(xLabel(t))}</text>`),
    ...yTicks.map((t) => `<text x="${n(frame.x - 6)}" y="${n(sy(t) + 4)}" text-anchor="end">${escape(yLabel(t))}</text>`),
    `<text x="${n(frame.x + frame.width / 2)}" y="${n(bottom + 30)}" text-anchor="middle">${escape(x.label)}</text>`,
    `<text x="${n(frame.x - 40)}" y="${n(frame.y + frame.height / 2)}" text-anchor="middle" transform="rotate(-90 ${n(frame.x - 40)} ${n(frame.y + frame.height / 2)})">${
      escape(y.label)
    }</text>`
  ]
  return { sx, sy, svg: parts }
}

const panelWidth = 640
const panelHeight = 150
const panelGap = 70

const histogramPanel = (frame: Frame, label: string, histogram: Histogram, stats: Stats): Array<string> => {
  const edges = histogram.edges_us
  const lo = edges[0] ?? 0
  const hi = edges[edges.length - 1] ?? 1
  const top = Math.max(1, ...histogram.counts)
  const spread = hi > lo ? { lo, hi } : { lo: lo * 0.9, hi: lo * 1.1 + 1 }
  const log = histogram.scale === "log" && hi > lo
  const { sx, sy, svg } = axes(frame, { ...spread, log, label: `latency µs${log ? " (log scale)" : ""}` }, {
    lo: 0,
    hi: top,
    label: "calls",
    ticks: linearTicks(0, top, 4).filter(Number.isInteger),
    tickLabel: String
  })
  const bars = histogram.counts.map((count, i) => {
    const x0 = hi > lo ? sx(edges[i]!) : sx(spread.lo + (spread.hi - spread.lo) * 0.45)
    const x1 = hi > lo ? sx(edges[i + 1]!) : sx(spread.lo + (spread.hi - spread.lo) * 0.55)
    return `<rect class="bar" x="${n(x0)}" y="${n(sy(count))}" width="${n(Math.max(0.5, x1 - x0 - 0.5))}" height="${n(sy(0) - sy(count))}" fill="#4c78a8"><title>${
      escape(`${fmt(edges[i]!)}–${fmt(edges[i + 1] ?? edges[i]!)} µs: ${count} calls`)
    }</title></rect>`
  })
  const marker = (value: number, name: string, colour: string) =>
    value >= spread.lo && value <= spread.hi
      ? [
        `<line class="marker" x1="${n(sx(value))}" y1="${n(frame.y)}" x2="${n(sx(value))}" y2="${n(frame.y + frame.height)}" stroke="${colour}" stroke-dasharray="4 3"/>`,
        sx(value) > frame.x + frame.width - 70
          ? `<text x="${n(sx(value) - 3)}" y="${n(frame.y + (name === "p99" ? 22 : 10))}" text-anchor="end" fill="${colour}">${escape(`${name} ${fmt(value)}`)}</text>`
          : `<text x="${n(sx(value) + 3)}" y="${n(frame.y + (name === "p99" ? 22 : 10))}" fill="${colour}">${escape(`${name} ${fmt(value)}`)}</text>`
      ]
      : []
  return [
    `<g class="panel">`,
    `<text x="${n(frame.x)}" y="${n(frame.y - 8)}" font-weight="bold">${escape(`${label}: ${stats.iterations} calls, median ${fmt(stats.median_us)} µs, p99 ${fmt(stats.p99_us)} µs, ${fmt(stats.calls_per_s)} calls/s`)}</text>`,
    ...svg,
    ...bars,
    ...marker(stats.median_us, "median", "#e45756"),
    ...marker(stats.p99_us, "p99", "#b279a2"),
    `</g>`
  ]
}

/**
 * The latency histograms: the floors first, then each depth.
 *
 * @since 0.1.0
 * @category rendering
 */
export const histogram = (result: BenchResult): string => {
  const panels: Array<{ label: string; histogram: Histogram; stats: Stats }> = [
    { label: "direct-call floor", ...result.floors.direct },
    ...(result.floors.raw === null ? [] : [{ label: "raw-transport floor", ...result.floors.raw }]),
    ...result.runs.map((run) => ({ label: `${result.target.kind}, depth ${run.depth}`, histogram: run.histogram, stats: run.stats }))
  ]
  const left = 70
  const top = 60
  const width = left + panelWidth + 30
  const height = top + panels.length * (panelHeight + panelGap)
  const body = panels.flatMap((panel, i) =>
    histogramPanel({ x: left, y: top + i * (panelHeight + panelGap), width: panelWidth, height: panelHeight }, panel.label, panel.histogram, panel.stats)
  )
  return document(width, height, `${result.tool}: latency (${result.target.kind}, ${result.concurrency} in flight)`, body)
}

/**
 * Median and p99 latency against nesting depth, with the floors' medians.
 *
 * @since 0.1.0
 * @category rendering
 */
export const depthChart = (result: BenchResult): string => {
  const frame = { x: 80, y: 50, width: 560, height: 300 }
  const depths = result.runs.map((run) => run.depth)
  const floors = [
    { name: "direct-call floor (median)", value: result.floors.direct.stats.median_us, colour: "#54a24b" },
    ...(result.floors.raw === null ? [] : [{ name: "raw-transport floor (median)", value: result.floors.raw.stats.median_us, colour: "#f58518" }])
  ]
  const values = [...result.runs.flatMap((run) => [run.stats.median_us, run.stats.p99_us]), ...floors.map((floor) => floor.value)].filter((v) => v > 0)
  // latency on a log scale: the floors and the slowest depth's p99 can be orders of magnitude apart
  const yLo = values.length === 0 ? 1 : 10 ** Math.floor(Math.log10(Math.min(...values)))
  const yHi = values.length === 0 ? 10 : Math.max(yLo * 10, 10 ** Math.ceil(Math.log10(Math.max(...values))))
  const xLo = Math.min(0, ...depths)
  const xHi = Math.max(1, ...depths)
  const { sx, sy, svg } = axes(frame, {
    lo: xLo,
    hi: xHi,
    label: "nesting depth (composing tools in front of the tool)",
    ticks: depths.length > 0 ? depths : [0],
    tickLabel: (depth) => String(depth)
  }, { lo: yLo, hi: yHi, log: true, label: "latency µs (log scale)" })
  const series = [
    { name: "median", colour: "#4c78a8", value: (run: BenchResult["runs"][number]) => run.stats.median_us },
    { name: "p99", colour: "#e45756", value: (run: BenchResult["runs"][number]) => run.stats.p99_us }
  ]
  const lines = series.flatMap((s) => [
    `<polyline class="series" fill="none" stroke="${s.colour}" stroke-width="2" points="${result.runs.map((run) => `${n(sx(run.depth))},${n(sy(s.value(run)))}`).join(" ")}"/>`,
    ...result.runs.map((run) =>
      `<circle class="point" cx="${n(sx(run.depth))}" cy="${n(sy(s.value(run)))}" r="4" fill="${s.colour}"><title>${
        escape(`depth ${run.depth} ${s.name}: ${fmt(s.value(run))} µs`)
      }</title></circle>`
    )
  ])
  const floorLines = floors.map((floor) =>
    `<line class="floor" x1="${n(frame.x)}" y1="${n(sy(floor.value))}" x2="${n(frame.x + frame.width)}" y2="${n(sy(floor.value))}" stroke="${floor.colour}" stroke-dasharray="6 4"/>`
  )
  const legend = [...series.map((s) => ({ name: s.name, colour: s.colour })), ...floors.map((f) => ({ name: `${f.name} ${fmt(f.value)} µs`, colour: f.colour }))]
    .flatMap((entry, i) => [
      `<rect x="${frame.x + frame.width + 20}" y="${frame.y + i * 18}" width="12" height="12" fill="${entry.colour}"/>`,
      `<text x="${frame.x + frame.width + 38}" y="${frame.y + i * 18 + 10}">${escape(entry.name)}</text>`
    ])
  return document(frame.x + frame.width + 260, frame.y + frame.height + 60, `${result.tool}: latency vs nesting depth (${result.target.kind}, ${result.concurrency} in flight)`, [
    ...svg,
    ...floorLines,
    ...lines,
    `<g class="legend">`,
    ...legend,
    `</g>`
  ])
}
