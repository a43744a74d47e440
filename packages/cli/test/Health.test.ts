/**
 * `--health-port` of every serving command, as processes over a real nats-server (one for this
 * file): a coordinator, a worker, a session host and `mcp --http --session`, each with a health
 * server. `/readyz` answers 200 once each serves; the nats-server killed, every `/readyz` answers
 * 503 (the connection reconnecting) while `/healthz` stays 200; the server restarted on the same
 * port, every `/readyz` is 200 again. Each phase is bounded to a few seconds. `mcp --http` with a
 * local session has no NATS connection: ready once it serves; a `--health-port` already taken
 * exits 1 with `HealthServerError`.
 */
import { NatsServer } from "@jitbox/testing"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Health from "../src/Health.js"
import { type CliProcess, spawnCli, waitUntil } from "./cliProcess.js"

const namespace = `health_${Math.random().toString(36).slice(2, 8)}`
const decode = Schema.decodeUnknownSync(Schema.parseJson(Health.HealthReport))

let server: NatsServer.Handle | undefined
let directory: string
const processes: Record<string, { readonly cli: CliProcess; readonly port: number }> = {}

/** `GET url`: its status and its report. */
const get = async (url: string): Promise<{ readonly status: number; readonly report: Health.HealthReport }> => {
  const response = await fetch(url, { signal: AbortSignal.timeout(2_000) })
  return { status: response.status, report: decode(await response.text()) }
}

/** Resolves once `GET /<path>` of every process answers `status`; rejects after `ms`. */
const everyAnswers = async (probe: "healthz" | "readyz", status: number, ms: number) => {
  const deadline = Date.now() + ms
  for (;;) {
    const answers = await Promise.all(Object.entries(processes).map(async ([name, { port }]) => [name, await get(`http://127.0.0.1:${port}/${probe}`)] as const))
    if (answers.every(([, answer]) => answer.status === status)) return Object.fromEntries(answers)
    if (Date.now() > deadline) {
      throw new Error(`not every /${probe} answered ${status} within ${ms} ms: ${JSON.stringify(answers.map(([name, answer]) => [name, answer.status, answer.report.connection]))}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

beforeAll(async () => {
  server = await NatsServer.start()
  directory = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-cli-health-"))
  const profiles = path.join(directory, "profiles.json")
  fs.writeFileSync(profiles, JSON.stringify({ profiles: [{ name: "standard", policy: { allowedLanguages: ["JavaScript"] } }] }))
  const common = ["--server", server.url, "--namespace", namespace]
  const commands: Record<string, ReadonlyArray<string>> = {
    coordinator: ["coordinator", ...common, "--profiles", profiles],
    worker: ["worker", ...common, "--id", "hw1", "--languages", "javascript"],
    sessions: ["sessions", ...common, "--profile", "standard", "--deployment-consent"],
    mcp: ["mcp", ...common, "--http", "0", "--no-auth", "--session", "h1", "--create"]
  }
  for (const [name, args] of Object.entries(commands)) {
    const port = await NatsServer.freePort()
    processes[name] = { cli: spawnCli(name === "worker" ? [...args, "--health-port", String(port)] : args, name === "worker" ? {} : { JITBOX_HEALTH_PORT: String(port) }), port }
  }
  await Promise.all(Object.values(processes).map(({ cli }) => cli.line(/^ready /, 90_000)))
}, 120_000)

afterAll(async () => {
  for (const { cli } of Object.values(processes)) cli.kill()
  await server?.close()
  if (directory !== undefined) fs.rmSync(directory, { recursive: true, force: true })
}, 60_000)

describe("--health-port: /healthz and /readyz of each serving command", () => {
  it("once each serves, /readyz is 200 and says what it serves; anything else is 404", async () => {
    const ready = await everyAnswers("readyz", 200, 5_000)
    for (const answer of Object.values(ready)) expect(answer.report).toMatchObject({ state: "serving", connection: "connected", ready: true })
    expect(ready["coordinator"]!.report).toMatchObject({ command: "coordinator", namespace, principal: "default", serves: { profiles: ["standard"] } })
    expect(ready["worker"]!.report).toMatchObject({ command: "worker", namespace, serves: { workerId: "hw1", pool: "default", languages: ["javascript"], running: 0, childrenStarted: 0 } })
    // one session active: h1, which the mcp command created
    expect(ready["sessions"]!.report).toMatchObject({ command: "sessions", namespace, serves: { pool: "default", sessions: 1 } })
    expect(ready["mcp"]!.report).toMatchObject({ command: "mcp", namespace, serves: { session: `session h1 of ${namespace}` } })
    expect(processes["worker"]!.cli.stderr()).toContain(`health http://127.0.0.1:${processes["worker"]!.port}`)
    const other = await fetch(`http://127.0.0.1:${processes["worker"]!.port}/metrics`)
    expect(other.status).toBe(404)
  }, 30_000)

  it("the nats-server killed: every /readyz is 503 (reconnecting) while /healthz stays 200; restarted on its port: 200 again", async () => {
    await server!.kill()
    const down = await everyAnswers("readyz", 503, 5_000)
    for (const answer of Object.values(down)) expect(answer.report).toMatchObject({ state: "serving", connection: "reconnecting", ready: false })
    const alive = await everyAnswers("healthz", 200, 1_000)
    for (const answer of Object.values(alive)) expect(answer.report.ready).toBe(false)

    await server!.restart()
    const back = await everyAnswers("readyz", 200, 8_000)
    for (const answer of Object.values(back)) expect(answer.report).toMatchObject({ connection: "connected", ready: true })
  }, 60_000)

  it("SIGTERM: each process stops and its health server with it", async () => {
    for (const { cli } of Object.values(processes)) cli.child.kill("SIGTERM")
    for (const { cli } of Object.values(processes)) expect(await cli.exited()).toBe(0)
    for (const { port } of Object.values(processes)) {
      await expect(fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) })).rejects.toThrow()
    }
  }, 60_000)
})

describe("--health-port without NATS", () => {
  it("mcp --http with a local session is ready with connection none; a taken --health-port exits 1 HealthServerError", async () => {
    const local = spawnCli(["mcp", "--http", "0", "--no-auth", "--health-port", "0"])
    try {
      await local.line(/^ready mcp /, 60_000)
      await waitUntil("the health address on stderr", () => /health http:\/\/\S+/.test(local.stderr()), 5_000)
      const url = /health (http:\/\/\S+)/.exec(local.stderr())![1]!
      const answer = await get(`${url}/readyz`)
      expect(answer.status).toBe(200)
      expect(answer.report).toMatchObject({ command: "mcp", state: "serving", connection: "none", ready: true, serves: { session: "fresh session", mcpSessions: 0 } })
      const port = new URL(url).port
      const taken = spawnCli(["mcp", "--http", "0", "--no-auth", "--health-port", port])
      expect(await taken.exited()).toBe(1)
      expect(taken.stderr()).toContain(`jitbox: HealthServerError: --health-port: cannot listen on 127.0.0.1:${port}`)
    } finally {
      local.kill()
    }
  }, 120_000)
})
