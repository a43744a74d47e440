/**
 * `jitbox dev` as a process (its own nats-server from the PATH, a coordinator, two workers and a
 * session host as its children): once it prints `ready dev …`, a RemoteSession here creates a
 * TypeScript tool and a Python tool in the session `demo` and calls them (on its workers), the
 * printed `jitbox mcp --session demo …` serves that session to an MCP client, and the printed
 * `jitbox status …` shows the coordinator's profile, both workers and the hosted session. SIGINT
 * stops it: exit 0, every process it started gone, its temporary directory removed. A `--port`
 * already taken fails `NatsServerError` with exit 1.
 */
import { NatsConnection, NatsTransport } from "@jitbox/nats"
import { Ids, RemoteSession, Subject } from "@jitbox/runtime"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as net from "node:net"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { alive, type CliProcess, descendants, spawnCli, waitUntil } from "./cliProcess.js"

const namespace = `dev_${Math.random().toString(36).slice(2, 8)}`
const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url))

const squareSource = `export const square = tool({
  description: "Square an integer.",
  guidelines: "Use to square an integer.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }: { value: number }) => value * value)
`
const addSource = `from jitbox import tool\n\n@tool(description="Add two numbers.", guidelines="Use to add.")\ndef add(a: int, b: int) -> int:\n    return a + b\n`

let dev: CliProcess | undefined
/** Every other `jitbox dev` a test starts, killed after the file even when a test times out. */
const others: Array<CliProcess> = []
let scope: Scope.CloseableScope | undefined
let url: string
let directory: string

/** The arguments of the printed command that starts with `jitbox <name>`. */
const printed = (name: string): Array<string> => {
  const line = dev!.stdout().split("\n").find((candidate) => candidate.trim().startsWith(`jitbox ${name} `))
  if (line === undefined) throw new Error(`no 'jitbox ${name}' line in:\n${dev!.stdout()}`)
  return line.trim().split(/\s+/).slice(1)
}

beforeAll(async () => {
  dev = spawnCli(["dev", "--namespace", namespace, "--workers", "2"])
  const ready = await dev.line(/^ready dev /, 150_000)
  url = /^ready dev (nats:\/\/\S+) namespace /.exec(ready)![1]!
  directory = /JetStream in (\S+)/.exec(dev.stdout())![1]!
  scope = Effect.runSync(Scope.make())
}, 180_000)

afterAll(async () => {
  // SIGINT first, so that a jitbox dev still running (its own test skipped or failed) stops the
  // processes it started; SIGKILL would leave them behind
  const running = [dev, ...others].filter((child): child is CliProcess => child !== undefined && child.child.exitCode === null && child.child.signalCode === null)
  for (const child of running) child.child.kill("SIGINT")
  await Promise.race([Promise.all(running.map((child) => child.exited())), new Promise((resolve) => setTimeout(resolve, 30_000))])
  for (const child of [dev, ...others]) child?.kill()
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)

describe("jitbox dev", () => {
  it("prints where the namespace is and the commands to try, then its ready line", () => {
    expect(dev!.stdout()).toContain(`jitbox dev: namespace ${namespace} on ${url}`)
    expect(printed("mcp")).toEqual(["mcp", "--session", "demo", "--create", "--server", url, "--namespace", namespace])
    expect(printed("status")).toEqual(["status", "--server", url, "--namespace", namespace])
    expect(fs.existsSync(directory)).toBe(true)
  })

  it("a session of the namespace runs a TypeScript tool and a Python tool on its workers", async () => {
    const transport = await Effect.runPromise(Effect.map(NatsConnection.make({ servers: url }), NatsTransport.fromConnection).pipe(Scope.extend(scope!)))
    const session = new RemoteSession.RemoteSession(transport, "demo", { prefix: Subject.prefix(Ids.namespace(namespace)), timeoutMs: 60_000 })
    await session.createTool({ entrypoint: "square", language: "typescript", source: squareSource })
    await session.createTool({ entrypoint: "add", language: "python", source: addSource })
    expect(await session.callTool("square", { value: 12 })).toBe(144)
    expect(await session.callTool("add", { a: 2, b: 40 })).toBe(42)
    await dev!.line(/^\[worker dev-\d\] invocation worker=dev-\d session=demo tool=add call=\S+ outcome=ok$/, 10_000)
  }, 120_000)

  it("a session publishes a tool to the namespace's catalog, jitbox catalog approve approves it, another session loads it pinned and runs it", async () => {
    const transport = await Effect.runPromise(Effect.map(NatsConnection.make({ servers: url }), NatsTransport.fromConnection).pipe(Scope.extend(scope!)))
    const prefix = Subject.prefix(Ids.namespace(namespace))
    const writer = new RemoteSession.RemoteSession(transport, "catalog-writer", { prefix, timeoutMs: 60_000 })
    await writer.callTool("create_tool", { entrypoint: "square", language: "typescript", source: squareSource, examples: [{ input: { value: 3 }, expected_output: 9 }] })
    const entry = await writer.callTool("publish_tool", { name: "square" }) as { version_id: string; status: string }
    expect(entry.status).toBe("proposed")
    const approve = spawnCli(["catalog", "approve", "square", entry.version_id, "--server", url, "--namespace", namespace])
    expect(await approve.exited()).toBe(0)
    expect(approve.stdout()).toContain(`square ${entry.version_id}: approved`)
    const reader = new RemoteSession.RemoteSession(transport, "catalog-reader", { prefix, timeoutMs: 60_000 })
    expect(await reader.callTool("search_catalog", { query: "square" })).toMatchObject({ total: 1, tools: [{ name: "square", version_id: entry.version_id, published_by: "default" }] })
    expect(await reader.callTool("load_from_catalog", { name: "square" })).toEqual({ name: "square", status: "loaded", version_id: entry.version_id })
    expect(await reader.callTool("square", { value: 7 })).toBe(49)
  }, 120_000)

  it("the printed `jitbox mcp --session demo …` serves that session to an MCP client", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["--conditions=@jitbox/source", "--import", "tsx", bin, ...printed("mcp")],
      cwd: repoRoot,
      stderr: "pipe"
    })
    const client = new Client({ name: "dev-test", version: "0.0.0" })
    await client.connect(transport)
    try {
      const tools = (await client.listTools()).tools.map((tool) => tool.name)
      expect(tools).toEqual(expect.arrayContaining(["square", "add", "start_invocation", "await_invocations", "cancel_invocation"]))
      const result = await client.callTool({ name: "square", arguments: { value: 9 } }) as CallToolResult
      expect(result.isError ?? false).toBe(false)
      expect(JSON.stringify(result.content)).toContain("81")
    } finally {
      await client.close()
    }
  }, 120_000)

  it("the printed `jitbox status …` shows the profile, both workers and the hosted session", async () => {
    const status = spawnCli(printed("status"))
    expect(await status.exited(), status.stderr()).toBe(0)
    const text = status.stdout()
    expect(text).toMatch(/^\s+dev\s+-\s+JavaScript,Python,Bash\s+6400\s/m)
    expect(text).toContain("workers: 2")
    expect(text).toMatch(/^\s+dev-1\s+default\s/m)
    expect(text).toMatch(/^\s+dev-2\s+default\s/m)
    expect(text).toMatch(/^\s+demo\s/m)
  }, 120_000)

  it("SIGINT: every process it started is gone, its directory removed, and it exits 0", async () => {
    const tree = descendants(dev!.child.pid!)
    expect(tree.length, "nats-server, a coordinator, two workers and a session host").toBeGreaterThanOrEqual(6)
    dev!.child.kill("SIGINT")
    expect(await dev!.exited()).toBe(0)
    expect(dev!.stdout().trimEnd().split("\n").at(-1)).toBe(`stopped dev ${url} namespace ${namespace}`)
    await waitUntil("every process of jitbox dev is gone", () => tree.every((pid) => !alive(pid)), 20_000)
    expect(fs.existsSync(directory)).toBe(false)
  }, 60_000)

  it("a part that exits on its own stops the others and jitbox dev: exit 1 naming it, nothing left behind", async () => {
    const short = spawnCli(["dev", "--workers", "1"])
    others.push(short)
    try {
      await short.line(/^ready dev /, 150_000)
      const shortDirectory = /JetStream in (\S+)/.exec(short.stdout())![1]!
      const tree = descendants(short.child.pid!)
      const worker = tree.find((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes("worker"))
      expect(worker, "the worker's process").toBeDefined()
      process.kill(worker!, "SIGKILL")
      expect(await short.exited()).toBe(1)
      expect(short.stderr()).toContain("jitbox: ChildCommandError: worker dev-1: exited (SIGKILL) while serving")
      await waitUntil("every process of jitbox dev is gone", () => tree.every((pid) => !alive(pid)), 20_000)
      expect(fs.existsSync(shortDirectory)).toBe(false)
    } finally {
      short.kill()
    }
  }, 200_000)

  it("a --port already taken fails NatsServerError, exit 1", async () => {
    const taken = net.createServer()
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve))
    try {
      const port = (taken.address() as net.AddressInfo).port
      const failed = spawnCli(["dev", "--port", String(port)])
      others.push(failed)
      expect(await failed.exited()).toBe(1)
      expect(failed.stderr()).toMatch(/jitbox: NatsServerError: .*address already in use/s)
    } finally {
      taken.close()
    }
  }, 60_000)
})
