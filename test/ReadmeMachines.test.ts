/**
 * The README's "On several machines: the `jitbox` command" runs as written: its shell block's
 * `jitbox` commands start with the `export`ed variables of their machine, and the coordinator
 * reads the `profiles.json` the README gives. Only what names a machine changes: the test's
 * nats-server (with JetStream, on a free port) stands for `nats://machine-a:4222`, temporary
 * directories for `/etc/jitbox` and `/var/lib/jitbox/sessions`, and `$(hostname)` is this host's
 * name. An application then drives a session through it: a TypeScript and a Python tool, a tool
 * composing both, background invocations, and more than 16 calls. The same for the coordinator,
 * worker and session host commands of packages/cli/README.md, with its profiles.json.
 */
import { connect } from "@jitbox/nats"
import { NatsServer } from "@jitbox/testing"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CliProcess, spawnCli } from "../packages/cli/test/cliProcess.js"

const root = fileURLToPath(new URL("..", import.meta.url))
const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
const heading = "### On several machines: the `jitbox` command"
const section = (() => {
  const start = readme.indexOf(`\n${heading}\n`)
  const rest = readme.slice(start + heading.length + 2)
  return rest.slice(0, rest.search(/\n#{2,3} /))
})()
const block = /```sh\n([\s\S]*?)\n```/.exec(section)![1]!
const profilesJson = /`profiles\.json`: `(\{[^`]*\})`/.exec(section)![1]!

let server: NatsServer.Handle | undefined
let directory: string
const processes: Array<CliProcess> = []

beforeAll(async () => {
  server = await NatsServer.start()
  directory = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-machines-"))
  fs.writeFileSync(path.join(directory, "profiles.json"), profilesJson)
}, 60_000)

afterAll(async () => {
  for (const child of processes) child.child.kill("SIGTERM")
  await Promise.all(processes.map((child) => Promise.race([child.exited(), new Promise((resolve) => setTimeout(resolve, 10_000))])))
  for (const child of processes) child.kill()
  await server?.close()
  fs.rmSync(directory, { recursive: true, force: true })
})

/** Each `jitbox` line of the block, with the variables its machine exported before it. */
const commands = (): Array<{ args: Array<string>; env: Record<string, string> }> => {
  const found: Array<{ args: Array<string>; env: Record<string, string> }> = []
  let env: Record<string, string> = {}
  for (const line of block.split("\n").map((text) => text.trim())) {
    if (line.startsWith("# machine")) env = {}
    if (line.startsWith("export ")) {
      for (const assignment of line.slice("export ".length).split(/\s+/)) {
        const [name, value] = assignment.split("=") as [string, string]
        env[name] = value === "nats://machine-a:4222" ? server!.url : value
      }
    }
    if (line.startsWith("jitbox ")) {
      const args = line.slice("jitbox ".length).replace(/\s*&$/, "").split(/\s+/).map((word) =>
        word === "/etc/jitbox/profiles.json" ? path.join(directory, "profiles.json") :
        word === "/var/lib/jitbox/sessions" ? path.join(directory, "sessions") :
        word === `"$(hostname)"` ? os.hostname() :
        word
      )
      found.push({ args, env: { ...env } })
    }
  }
  return found
}

const tripleTs = `export const triple = tool({
  description: "Triples a number.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }: { value: number }) => value * 3)`

const squarePy = `@tool(guidelines="Use in tests.")
def square(value: int) -> int:
    """Squares an integer."""
    return value * value
`

const bothTs = `export const both = tool({
  description: "Squares, then triples.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }: { value: number }) => harness.callTool("triple", { value: await harness.callTool("square", { value }) }))`

/** The first sh block under `heading` of `text`, its continued lines joined, split into shell words (single quotes kept whole). */
const commandUnder = (text: string, heading: string): Array<string> => {
  const start = text.indexOf(`\n${heading}\n`)
  expect(start, `no section ${heading}`).toBeGreaterThan(0)
  const body = /```sh\n([\s\S]*?)\n```/.exec(text.slice(start))![1]!.replace(/\\\n\s*/g, " ").trim()
  return [...body.matchAll(/'([^']*)'|(\S+)/g)].map((match) => match[1] ?? match[2]!)
}

/** A session drives a TypeScript tool, a Python tool, a composition of both, a background invocation and 20 calls. */
const drive = async (namespace: string, sessionId: string) => {
  const client = await connect({ servers: server!.url, namespace, timeoutMs: 60_000 })
  try {
    const session = client.session(sessionId)
    await session.createTool({ entrypoint: "triple", language: "typescript", source: tripleTs })
    await session.createTool({ entrypoint: "square", language: "python", source: squarePy })
    await session.createTool({ entrypoint: "both", language: "typescript", source: bothTs })
    expect(await session.callTool("both", { value: 4 })).toBe(48)
    const started = await session.callTool("start_invocation", { name: "square", arguments: { value: 9 } }) as { invocation_id: string }
    const awaited = await session.callTool("await_invocations", { invocation_ids: [started.invocation_id], timeout_seconds: 60 }) as {
      finished: Array<{ status: string; result: unknown }>
    }
    expect(awaited.finished).toMatchObject([{ status: "completed", result: 81 }])
    for (let i = 0; i < 20; i++) expect(await session.callTool("triple", { value: i })).toBe(i * 3)
  } finally {
    await client.close()
  }
}

describe("README: on several machines", () => {
  it("the block's commands and profiles.json run TypeScript and Python tools, a composition, background invocations and more than 16 calls", async () => {
    const started = commands()
    expect(started.map(({ args }) => args[0])).toEqual(["coordinator", "worker", "sessions"])
    // machine D exports nothing of its own: it is the same shell as the workers' in the README's reading
    for (const { args, env } of started) {
      const child = spawnCli(args, { JITBOX_SERVER: server!.url, JITBOX_NAMESPACE: "prod", ...env })
      processes.push(child)
      await child.line(/^ready /, 120_000)
    }
    await drive("prod", "recipe")
  }, 300_000)

  it("packages/cli/README.md's coordinator, worker and sessions commands as written, with its profiles.json", async () => {
    const cliReadme = fs.readFileSync(path.join(root, "packages", "cli", "README.md"), "utf8")
    const coordinatorSection = cliReadme.slice(cliReadme.indexOf("\n## jitbox coordinator\n"))
    fs.writeFileSync(path.join(directory, "cli-profiles.json"), /```json\n([\s\S]*?)\n```/.exec(coordinatorSection)![1]!)
    const env = { JITBOX_SERVER: server!.url, JITBOX_NAMESPACE: "clireadme" }
    for (const command of ["coordinator", "worker", "sessions"]) {
      const words = commandUnder(cliReadme, `## jitbox ${command}`)
      expect(words.slice(0, 2)).toEqual(["jitbox", command])
      const args = words.slice(1).map((word) =>
        word === "profiles.json" ? path.join(directory, "cli-profiles.json") :
        word === "/var/lib/jitbox/sessions" ? path.join(directory, "cli-sessions") :
        word
      )
      const child = spawnCli(args, env)
      processes.push(child)
      await child.line(/^ready /, 120_000)
    }
    await drive("clireadme", "cli")
  }, 300_000)
})
