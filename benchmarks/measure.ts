/**
 * Timing helpers for the benchmarks: per-call wall time with the timer's own cost subtracted,
 * summarised as median and p99. Timing belongs here, never in a test.
 */

export interface Summary {
  readonly median_us: number
  readonly p99_us: number
  readonly iterations: number
}

const now = () => process.hrtime.bigint()

const percentile = (sorted: Float64Array, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!

let timerCostNs: number | undefined

const timerCost = (): number => {
  if (timerCostNs !== undefined) return timerCostNs
  const samples = new Float64Array(200_000)
  for (let i = 0; i < samples.length; i++) {
    const start = now()
    samples[i] = Number(now() - start)
  }
  samples.sort()
  timerCostNs = percentile(samples, 0.5)
  return timerCostNs
}

/** Runs `call` `warmup + iterations` times, one at a time, timing each awaited call. */
export const measure = async (
  call: (i: number) => unknown,
  options: { readonly iterations: number; readonly warmup: number }
): Promise<Summary> => {
  const overhead = timerCost()
  for (let i = 0; i < options.warmup; i++) await call(i)
  const samples = new Float64Array(options.iterations)
  for (let i = 0; i < options.iterations; i++) {
    const start = now()
    await call(i)
    samples[i] = Number(now() - start) - overhead
  }
  samples.sort()
  const round = (ns: number) => Math.round(Math.max(0, ns) / 10) / 100
  return { median_us: round(percentile(samples, 0.5)), p99_us: round(percentile(samples, 0.99)), iterations: options.iterations }
}

/** The `q` quantile of samples, interpolated between the two nearest; NaN for none. */
export const quantile = (samples: ReadonlyArray<number>, q: number): number => {
  const sorted = [...samples].sort((a, b) => a - b)
  if (sorted.length === 0) return NaN
  const at = (sorted.length - 1) * q
  const lo = Math.floor(at)
  const hi = Math.ceil(at)
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo)
}

export const median = (samples: ReadonlyArray<number>): number => quantile(samples, 0.5)

export const round = (x: number, digits = 1): number => Math.round(x * 10 ** digits) / 10 ** digits
