/**
 * `pnpm bench:dispatch`: what one tool call costs through the harness, against a direct call, a
 * minimal hand-written dispatch and the MCP TypeScript SDK's in-memory `callTool`, in one process
 * and one run. Writes benchmarks/results/dispatch.json and dispatch.md.
 *
 * Order matters and is deliberate: the composing tool runs last, because composition enables
 * AsyncLocalStorage, whose promise hooks slow every later await in the process (measured again
 * after it as `harness_base_after_composition`).
 */
import { writeFileSync } from "node:fs"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { JitHarness, tool } from "@jitbox/core"
import { DispatchTracing } from "@jitbox/otel"
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base"
import { Ajv } from "ajv"
import { z } from "zod"
import { measure, type Summary } from "./measure.js"

const addSchema = {
  type: "object",
  properties: { left: { type: "integer" }, right: { type: "integer" } },
  required: ["left", "right"]
} as const

const add = async ({ left, right }: { left: number; right: number }) => left + right

const addTool = tool({
  name: "add",
  description: "Add two integers.",
  guidelines: "Use for integer addition.",
  parameters: addSchema
}, add)

const fast = { iterations: 200_000, warmup: 50_000 }
const slow = { iterations: 20_000, warmup: 5_000 }
const results: Record<string, Summary> = {}
const run = async (label: string, call: (i: number) => unknown, options = fast) => {
  results[label] = await measure(call, options)
  console.log(label.padEnd(34), `median ${results[label]!.median_us.toFixed(2)} µs`, `p99 ${results[label]!.p99_us.toFixed(2)} µs`)
}

// 1. A direct call.
await run("direct_call", (i) => add({ left: i, right: 1 }))

// 2. A minimal hand-written dispatch: lookup, compiled validation, await.
const validate = new Ajv().compile(addSchema)
const table = new Map([["add", add]])
const minimalDispatch = async (name: string, args: { left: number; right: number }) => {
  const handler = table.get(name)
  if (handler === undefined) throw new Error(`unknown ${name}`)
  if (!validate(args)) throw new Error("invalid")
  return await handler(args)
}
await run("minimal_dispatch", (i) => minimalDispatch("add", { left: i, right: 1 }))

// 3. The harness: lookup, reject checks, validation, profiling record, error cache, events.
const harness = new JitHarness({ tools: [addTool], sessionId: "bench" })
await run("harness_base", (i) => harness.callTool("add", { left: i, right: 1 }))

await harness.createTool({
  entrypoint: "add_code",
  source: `export const add_code = tool({ description: "Add two integers.", guidelines: "Use for integer addition.",
    parameters: ${JSON.stringify(addSchema)} }, async ({ left, right }) => left + right)`
})
await run("harness_code_no_subscriber", (i) => harness.callTool("add_code", { left: i, right: 1 }))
let seen = 0
const stopListening = harness.events.listen(() => {
  seen++
})
await run("harness_code_one_listener", (i) => harness.callTool("add_code", { left: i, right: 1 }))
stopListening()
if (seen === 0) throw new Error("the listener saw no events")
const subscription = harness.subscribe({ bufferSize: 1 << 20 })
const drain = (async () => {
  for await (const _ of subscription) void _
})()
await run("harness_code_one_async_subscriber", (i) => harness.callTool("add_code", { left: i, right: 1 }))
subscription.close()
await drain

// 3b. The same code call with @jitbox/otel installed as the harness's sinks (a span and the metrics
// per call), its spans batched to an exporter that drops them, against a twin harness without.
const addCodeSource = `export const add_code = tool({ description: "Add two integers.", guidelines: "Use for integer addition.",
    parameters: ${JSON.stringify(addSchema)} }, async ({ left, right }) => left + right)`
let dropped = 0
const dropping: SpanExporter = {
  export: (spans, done) => {
    dropped += spans.length
    done({ code: 0 })
  },
  shutdown: () => Promise.resolve()
}
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping, { maxQueueSize: 1 << 16, maxExportBatchSize: 4096, scheduledDelayMillis: 100 })] })
const tracing = DispatchTracing.make({ tracer: tracerProvider.getTracer("bench") })
const untraced = new JitHarness({ tools: [addTool], sessionId: "bench-untraced" })
const traced = new JitHarness({ tools: [addTool], sessionId: "bench-traced", eventSink: tracing.eventSink, profileSink: tracing.profileSink })
await untraced.createTool({ entrypoint: "add_code", source: addCodeSource })
await traced.createTool({ entrypoint: "add_code", source: addCodeSource })
await run("harness_code_without_otel", (i) => untraced.callTool("add_code", { left: i, right: 1 }))
await run("harness_code_with_otel_dropping", (i) => traced.callTool("add_code", { left: i, right: 1 }))
await tracerProvider.forceFlush()
if (dropped === 0) throw new Error("the tracing sink exported no span")
await tracerProvider.shutdown()
await untraced.release()
await traced.release()

// 4. The peer users would pick: the MCP SDK over its in-memory transport.
const server = new McpServer({ name: "bench", version: "1.0.0" })
server.registerTool("add", {
  description: "Add two integers.",
  inputSchema: { left: z.number().int(), right: z.number().int() }
}, async ({ left, right }) => ({ content: [{ type: "text", text: String(left + right) }] }))
const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
await server.connect(serverTransport)
const client = new Client({ name: "bench-client", version: "1.0.0" })
await client.connect(clientTransport)
await run("mcp_sdk_call_tool", (i) => client.callTool({ name: "add", arguments: { left: i, right: 1 } }), slow)
await client.close()

// 5. One level of composition: a code tool calling the base tool through harness.callTool.
await harness.createTool({
  entrypoint: "twice",
  source: `export const twice = tool({ description: "Add the same integer twice.", guidelines: "Use to add an integer to itself.",
    parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] } },
    async ({ value }) => await harness.callTool("add", { left: value, right: value }))`
})
await run("harness_twice_composing_add", (i) => harness.callTool("twice", { value: i }))
await run("harness_base_after_composition", (i) => harness.callTool("add", { left: i, right: 1 }))

const median = (label: string) => results[label]!.median_us
const ratios = {
  mcp_over_harness: median("mcp_sdk_call_tool") / median("harness_base"),
  harness_over_minimal_dispatch: median("harness_base") / median("minimal_dispatch"),
  bookkeeping_overhead_vs_minimal: median("harness_base") / median("minimal_dispatch") - 1,
  listener_overhead: median("harness_code_one_listener") / median("harness_code_no_subscriber") - 1,
  otel_sink_over_without: median("harness_code_with_otel_dropping") / median("harness_code_without_otel"),
  async_subscriber_overhead: median("harness_code_one_async_subscriber") / median("harness_code_no_subscriber") - 1,
  composition_over_plain_dispatch: median("harness_twice_composing_add") / median("harness_base_after_composition"),
  nested_level_over_plain_dispatch:
    (median("harness_twice_composing_add") - median("harness_base_after_composition")) / median("harness_base_after_composition")
}
const round = (n: number) => Math.round(n * 1000) / 1000
const output = {
  node: process.version,
  medians_us: Object.fromEntries(Object.entries(results).map(([k, v]) => [k, v.median_us])),
  p99_us: Object.fromEntries(Object.entries(results).map(([k, v]) => [k, v.p99_us])),
  ...Object.fromEntries(Object.entries(ratios).map(([k, v]) => [k, round(v)]))
}
writeFileSync(new URL("./results/dispatch.json", import.meta.url), JSON.stringify(output, null, 2) + "\n")
const rows = Object.entries(results).map(([k, v]) => `| ${k} | ${v.median_us.toFixed(2)} | ${v.p99_us.toFixed(2)} |`)
writeFileSync(
  new URL("./results/dispatch.md", import.meta.url),
  [
    `# Dispatch (${process.version}, one process, one run)`,
    "",
    "| case | median µs | p99 µs |",
    "|---|---:|---:|",
    ...rows,
    "",
    ...Object.entries(ratios).map(([k, v]) => `- ${k}: ${round(v)}`),
    ""
  ].join("\n")
)
console.log(JSON.stringify(output, null, 2))
