/**
 * `pnpm bench:soak`: a million calls through one harness with profiling, the error cache and an
 * event listener attached. Heap growth is measured after the call window has filled, so it shows
 * whether bookkeeping grows without bound. Writes benchmarks/results/soak.json (not committed).
 */
import { writeFileSync } from "node:fs"
import { JitHarness, tool } from "@jitbox/core"
import { resultFile } from "./output.js"

const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error("run with --expose-gc")

const add = tool({
  name: "add",
  description: "Add two integers.",
  guidelines: "Use for integer addition.",
  parameters: { type: "object", properties: { left: { type: "integer" }, right: { type: "integer" } }, required: ["left", "right"] }
}, ({ left, right }: { left: number; right: number }) => left + right)

const harness = new JitHarness({ sessionId: "soak", tools: [add] })
await harness.createTool({
  entrypoint: "twice",
  source: `export const twice = tool({ description: "Add the same integer twice.", guidelines: "Use to add an integer to itself.",
    parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] } },
    async ({ value }, context) => {
      if (value % 1000 === 0) throw new Error("failure number " + (value % 7))
      return await context.callTool("add", { left: value, right: value })
    })`
})
let events = 0
harness.events.listen(() => {
  events++
})

const callOnce = (i: number) => harness.callTool("twice", { value: i }).catch(() => undefined)
const heap = () => {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

for (let i = 1; i <= 20_000; i++) await callOnce(i)
const before = heap()
const total = 1_000_000
const started = performance.now()
for (let i = 1; i <= total; i++) await callOnce(i)
const seconds = (performance.now() - started) / 1000
const after = heap()

const stats = harness.profileStats("twice")
const result = {
  node: process.version,
  calls: total,
  call_capacity: harness.profiler.capacity,
  window_records: harness.profile(undefined, { limit: 1 }).total_calls,
  retained_errors: harness.toolErrors().retained_errors,
  twice_call_count: stats.call_count,
  events_seen: events,
  heap_before_mib: Math.round(before / 2 ** 20 * 100) / 100,
  heap_after_mib: Math.round(after / 2 ** 20 * 100) / 100,
  heap_growth_mib: Math.round((after - before) / 2 ** 20 * 100) / 100,
  calls_per_second: Math.round(total / seconds)
}
writeFileSync(resultFile("soak.json"), JSON.stringify(result, null, 2) + "\n")
console.log(JSON.stringify(result, null, 2))
