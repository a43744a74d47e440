/**
 * Loading a catalog tool: from the `load_from_catalog` call to the tool being ready (the entry and
 * package fetched, the package checked against its version id, the examples run in the loading
 * session's sandbox). p50 and p99 with 1 session loading and with 16 loading at once, each load into
 * a fresh session; on the embedded default, and over NATS (catalog in JetStream KV) unless
 * `--embedded-only`. Writes benchmarks/results/catalog.json.
 *
 * Run: pnpm bench:catalog [-- --rounds N] [-- --embedded-only]
 */
import * as fs from "node:fs"
import { performance } from "node:perf_hooks"
import type { Sessions } from "@jitbox/runtime"
import { type AgentsNamespace, embeddedNamespace } from "../examples/agentsNamespace.js"
import { natsNamespace } from "../examples/agentsOverNats.js"
import { resultFile } from "./output.js"

const source = `export const slugify = tool({
  description: "Turn a title into a URL slug.",
  guidelines: "Use for URLs.",
  parameters: { type: "object", properties: { title: { type: "string" } }, required: ["title"] }
}, async ({ title }: { title: string }) => title.trim().toLowerCase().split(/\\s+/).join("-"))
`

const argument = (name: string, fallback: number): number => {
  const index = process.argv.indexOf(`--${name}`)
  return index < 0 ? fallback : Number(process.argv[index + 1])
}

const percentile = (values: ReadonlyArray<number>, p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

const publish = async ({ approve, sessions }: AgentsNamespace): Promise<string> => {
  const writer = sessions.get("bench-writer")
  await writer.callTool("create_tool", { entrypoint: "slugify", source, examples: [{ input: { title: "A B" }, expected_output: "a-b" }] })
  const entry = await writer.callTool("publish_tool", { name: "slugify" }) as { version_id: string }
  await approve("slugify", entry.version_id)
  return entry.version_id
}

let sessionCounter = 0

/** The milliseconds of each load when `concurrent` fresh sessions load at once, `rounds` times. */
const loads = async (sessions: Sessions.SessionsShape, version: string, concurrent: number, rounds: number): Promise<Array<number>> => {
  const times: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    const batch = Array.from({ length: concurrent }, () => sessions.get(`bench-loader-${sessionCounter++}`))
    // each session activated (admitted) first: the load is what is timed
    await Promise.all(batch.map((session) => session.callTool("list_tools", {})))
    times.push(...await Promise.all(batch.map(async (session) => {
      const started = performance.now()
      await session.callTool("load_from_catalog", { name: "slugify", version_id: version })
      return performance.now() - started
    })))
    await Promise.all(batch.map((session) => sessions.forget(session.sessionId)))
  }
  return times
}

const measure = async (namespace: AgentsNamespace, rounds: number) => {
  const version = await publish(namespace)
  await loads(namespace.sessions, version, 1, 2)
  const one = await loads(namespace.sessions, version, 1, rounds)
  const sixteen = await loads(namespace.sessions, version, 16, Math.max(1, Math.ceil(rounds / 4)))
  return {
    load_p50_ms_1: percentile(one, 50),
    load_p99_ms_1: percentile(one, 99),
    load_p50_ms_16: percentile(sixteen, 50),
    load_p99_ms_16: percentile(sixteen, 99),
    loads_1: one.length,
    loads_16: sixteen.length
  }
}

const main = async () => {
  const rounds = argument("rounds", 12)
  const results: Record<string, unknown> = { rounds }
  const transports: Array<[string, () => Promise<AgentsNamespace>]> = [["embedded", embeddedNamespace]]
  if (!process.argv.includes("--embedded-only")) transports.push(["nats", natsNamespace])
  for (const [name, start] of transports) {
    const namespace = await start()
    try {
      results[name] = await measure(namespace, rounds)
    } finally {
      await namespace.close()
    }
    console.log(`${name}: ${JSON.stringify(results[name])}`)
  }
  fs.writeFileSync(resultFile("catalog.json"), `${JSON.stringify(results, null, 2)}\n`)
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
