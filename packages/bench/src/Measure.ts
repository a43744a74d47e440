/**
 * Timing: per-call wall time with the timer's own cost subtracted, summarised as median and p99
 * (`measure`, one call at a time, the project's dispatch benchmark), calls timed `concurrency` at a
 * time with their throughput (`sample`), and the quantiles the benchmarks summarise with. Timing
 * belongs here, never in a test.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 @category models */
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

/**
 * Runs `call` `warmup + iterations` times, one at a time, timing each awaited call.
 *
 * @since 0.1.0
 * @category measuring
 */
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

/** The `q` quantile of samples, interpolated between the two nearest; NaN for none. @since 0.1.0 @category statistics */
export const quantile = (samples: ReadonlyArray<number>, q: number): number => {
  const sorted = [...samples].sort((a, b) => a - b)
  if (sorted.length === 0) return NaN
  const at = (sorted.length - 1) * q
  const lo = Math.floor(at)
  const hi = Math.ceil(at)
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo)
}

/** @since 0.1.0 @category statistics */
export const median = (samples: ReadonlyArray<number>): number => quantile(samples, 0.5)

/** @since 0.1.0 @category statistics */
export const round = (x: number, digits = 1): number => Math.round(x * 10 ** digits) / 10 ** digits

/** Calls timed by `sample`: each call's latency in µs (in completion order) and the timed phase's wall time. @since 0.1.0 @category models */
export interface Sampled {
  readonly latencies_us: ReadonlyArray<number>
  readonly seconds: number
}

/**
 * `warmup` untimed calls, then `iterations` timed ones, at most `concurrency` in flight (each of
 * `concurrency` loops calls back to back until the count is reached). The first rejection stops
 * the loops and rejects with it. `onCall` hears each timed call as it completes.
 *
 * @since 0.1.0
 * @category measuring
 */
export const sample = async (
  call: (i: number) => unknown,
  options: { readonly iterations: number; readonly warmup: number; readonly concurrency: number; readonly onCall?: ((done: number) => void) | undefined }
): Promise<Sampled> => {
  const overhead = timerCost()
  const phase = async (count: number, timed: Array<number> | undefined) => {
    let next = 0
    let failed = false
    const loop = async () => {
      while (!failed && next < count) {
        const i = next++
        const start = now()
        try {
          await call(i)
        } catch (error) {
          failed = true
          throw error
        }
        if (timed !== undefined) {
          timed.push(Math.max(0, Number(now() - start) - overhead) / 1000)
          options.onCall?.(timed.length)
        }
      }
    }
    await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency, count)) }, loop))
  }
  await phase(options.warmup, undefined)
  const latencies: Array<number> = []
  const start = now()
  await phase(options.iterations, latencies)
  return { latencies_us: latencies, seconds: Number(now() - start) / 1e9 }
}
