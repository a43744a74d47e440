/**
 * The built `jitbox mcp` (dist/bin.js: `pnpm build` first, as CI does) as a child process, driven
 * with the official MCP client: over stdio from a snapshot (its code sandboxed), where stdout
 * carries nothing but MCP and the command stops with exit code 0 when stdin ends; and over
 * Streamable HTTP serving a remote session hosted in this process on a real nats-server, stopped
 * by SIGTERM with 0, where a request without the bearer token is answered 401 (the session
 * started with `--create`; a session id nobody stored is refused without it, exit 1, and a stored
 * one is served without it); and over stdio serving a remote session that another client changes
 * through `manage`. In this process (`Cli.run`, the same parser and handlers): the help names the
 * options, a snapshot that does not load fails with `SnapshotError` naming the file (the
 * binary exits 1 on any failure), and `--http` without a token, or `--no-auth` on an address other
 * machines reach, fails `ConfigError` before it listens.
 */
import { JitHarness, JitHarnessSnapshot } from "@jitbox/core"
import { Ids, RemoteSession, Sessions, SnapshotStore, StreamPublisher, Subject, Transport } from "@jitbox/runtime"
import { NatsConnection, NatsTransport } from "@jitbox/nats"
import { NatsServer } from "@jitbox/testing"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { type CallToolResult, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as Cause from "effect/Cause"
import * as Option from "effect/Option"
import { type ChildProcess, spawn } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { create as js, doubleSource, quadrupleSource, slowSource, textOf, waitUntil } from "../../mcp/test/fixtures.js"
import { HttpServer } from "@jitbox/mcp"
import { McpCommand } from "../src/index.js"
import { plain } from "./cliProcess.js"
import { inProcess } from "./inProcess.js"

const bin = fileURLToPath(new URL("../dist/bin.js", import.meta.url))
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url))

/** This environment without the JITBOX_* variables, so a test sets the ones it means. */
const ownEnvironment = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !name.startsWith("JITBOX_")) env[name] = value
  return env
}

/** The built command as a child: its output, its exit code, and the first stdout line matching a pattern. */
const spawnBuilt = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: run pnpm build first`)
  const child: ChildProcess = spawn(process.execPath, [bin, ...args], {
    cwd: repoRoot,
    env: { ...ownEnvironment(), ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  let err = ""
  child.stdout!.on("data", (chunk: Buffer) => out += chunk.toString())
  child.stderr!.on("data", (chunk: Buffer) => err += chunk.toString())
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)))
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited: () => exited,
    line: async (pattern: RegExp): Promise<string> => {
      await waitUntil(`a line ${pattern} (stderr: ${err})`, () => out.split("\n").some((line) => pattern.test(line)) || child.exitCode !== null, 60_000)
      const found = out.split("\n").find((line) => pattern.test(line))
      if (found === undefined) throw new Error(`exited ${child.exitCode} before ${pattern}: ${out}\n${err}`)
      return found
    },
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
    }
  }
}


/** An official client that counts list_changed and records every error its transport reports. */
const client = () => {
  const made = new Client({ name: "jitbox-cli-test", version: "0.1.0" })
  const state = { listChanged: 0, errors: [] as Array<string> }
  made.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    state.listChanged++
  })
  made.onerror = (error) => state.errors.push(String(error))
  const call = async (name: string, args: Record<string, unknown> = {}) => (await made.callTool({ name, arguments: args })) as CallToolResult
  const names = async () => (await made.listTools()).tools.map((tool) => tool.name)
  return { client: made, state, call, names }
}

let dir: string
let snapshotFile: string

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-mcp-"))
  snapshotFile = path.join(dir, "toolbox.json")
  const template = new JitHarness()
  await template.createTool(js("double", doubleSource))
  await template.createTool(js("slow", slowSource))
  await JitHarnessSnapshot.save(template.snapshot(), snapshotFile)
  await template.release()
})

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

describe("jitbox mcp over stdio", () => {
  it("serves a snapshot: tools, list_changed, calls, composition, source pages, isError, cancellation, progress; stdout is MCP only", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [bin, "mcp", "--snapshot", snapshotFile],
      cwd: repoRoot,
      env: ownEnvironment(),
      stderr: "pipe"
    })
    let stderr = ""
    transport.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    const mcp = client()
    await mcp.client.connect(transport)
    try {
      expect(mcp.client.getInstructions()).toMatch(/tool/)
      expect(await mcp.names()).toEqual(expect.arrayContaining(["double", "slow", "create_tool", "read_tool_source"]))

      const before = mcp.state.listChanged
      expect((await mcp.call("create_tool", js("quadruple", quadrupleSource))).structuredContent).toEqual({ name: "quadruple", status: "loaded" })
      await waitUntil("list_changed after create_tool", () => mcp.state.listChanged > before)
      expect(await mcp.names()).toContain("quadruple")
      expect(textOf(await mcp.call("double", { value: 21 }))).toBe("42")
      expect((await mcp.call("quadruple", { value: 3 })).structuredContent).toEqual({ quadrupled: 12 })

      const page = (await mcp.call("read_tool_source", { name: "quadruple", max_chars: 50 })).structuredContent as { content: string; next_offset: number }
      expect(quadrupleSource.startsWith(page.content)).toBe(true)
      expect(page.next_offset).toBe(50)

      const failed = await mcp.call("double", { value: -1 })
      expect(failed.isError).toBe(true)
      expect(textOf(failed)).toBe("RangeError: negative values are not allowed")

      const progress: Array<number> = []
      const waited = await mcp.client.callTool({ name: "slow", arguments: { ms: 1_500 } }, undefined, {
        onprogress: (notification) => progress.push(notification.progress)
      })
      expect(textOf(waited as CallToolResult)).toBe("slow")
      expect(progress.length).toBeGreaterThan(0)

      const controller = new AbortController()
      const pending = mcp.client.callTool({ name: "slow", arguments: { ms: 30_000 } }, undefined, {
        signal: controller.signal,
        onprogress: () => controller.abort()
      })
      await expect(pending).rejects.toThrow()
      await waitUntil("the session's record of the call says cancelled", async () => {
        const calls = (await mcp.call("inspect_tool_calls", { name: "slow" })).structuredContent as { calls: Array<{ status: string }> }
        return calls.calls.some((call) => call.status === "cancelled")
      })

      expect(mcp.state.errors).toEqual([])
      expect(stderr).toMatch(/ready mcp stdio snapshot /)
    } finally {
      await mcp.client.close()
    }
  })

  it("stops with exit code 0 when stdin ends, logging on stderr only", async () => {
    const child = spawnBuilt(["mcp"])
    expect(await child.exited()).toBe(0)
    expect(child.stdout()).toBe("")
    expect(plain(child.stderr())).toMatch(/ready mcp stdio fresh session/)
  })

  it("fails with SnapshotError naming the file when the snapshot does not load", async () => {
    const bad = path.join(dir, "bad.json")
    fs.writeFileSync(bad, "{ not a snapshot")
    const { exit } = await inProcess(["mcp", "--snapshot", bad])
    expect(Exit.isFailure(exit)).toBe(true)
    const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
    expect(failure).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect(String((failure as Error).message)).toMatch(/bad\.json/)
  })

  it("the defaults of --host and --max-sessions are HttpServer's (kept in the command so that --help loads no MCP server)", () => {
    expect(McpCommand.defaults).toEqual({ host: HttpServer.defaults.host, maxSessions: HttpServer.defaults.maxSessions })
  })

  it("--help names the transports, the session sources and the bounds", async () => {
    const { exit, stdout } = await inProcess(["mcp", "--help"])
    expect(Exit.isSuccess(exit)).toBe(true)
    for (const option of ["--http", "--http-token", "JITBOX_MCP_TOKEN", "--no-auth", "--host", "--snapshot", "--session", "--create", "--server", "--creds", "--namespace", "--max-sessions", "--idle-timeout", "--policy"]) {
      expect(stdout).toContain(option)
    }
  })
})

describe("jitbox mcp --http: a bearer token or nothing", () => {
  it.each([
    [["--http", "0"], "--http-token", "needs a bearer token"],
    [["--http", "0", "--http-token", " "], "--http-token", "is empty"],
    [["--http", "0", "--no-auth", "--host", "0.0.0.0"], "--no-auth", "only on a loopback --host"],
    [["--http", "0", "--no-auth", "--http-token", "t0ken"], "--no-auth", "contradict"]
  ])("jitbox mcp %j fails ConfigError naming %s", async (args, option, detail) => {
    const { exit } = await inProcess(["mcp", ...args])
    const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
    expect(failure).toMatchObject({ _tag: "ConfigError", option, detail: expect.stringContaining(detail) })
  })

  it("the binary reports a missing token on stderr and exits 1", async () => {
    const child = spawnBuilt(["mcp", "--http", "0"])
    expect(await child.exited()).toBe(1)
    expect(plain(child.stderr())).toContain("jitbox: ConfigError: --http-token: serving MCP over HTTP needs a bearer token")
  })
})

describe("jitbox mcp --http serving a remote session", () => {
  let nats: NatsServer.Handle | undefined
  let scope: Scope.CloseableScope | undefined
  let hostSessions: Sessions.SessionsShape | undefined
  let hostTransport: Transport.TransportShape | undefined
  const namespace = "mcp_cli"
  /** `jitbox mcp <args>` over stdio, on the suite's server and namespace. */
  const remoteStdio = (...args: Array<string>) =>
    new StdioClientTransport({
      command: process.execPath,
      args: [bin, "mcp", ...args],
      cwd: repoRoot,
      env: { ...ownEnvironment(), JITBOX_SERVER: nats!.url, JITBOX_NAMESPACE: namespace },
      stderr: "pipe"
    })

  beforeAll(async () => {
    nats = await NatsServer.start()
    scope = Effect.runSync(Scope.make())
    const prefix = Subject.prefix(Ids.namespace(namespace))
    await Effect.runPromise(
      Effect.gen(function*() {
        const transport = yield* Layer.build(NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer({ servers: nats!.url, reconnectTimeWaitMs: 100 }))))
        const publisher = yield* Layer.build(StreamPublisher.layer({ prefix })).pipe(Effect.provide(transport))
        const context = Context.add(Context.merge(transport, publisher), SnapshotStore.SnapshotStore, SnapshotStore.makeMemory())
        hostSessions = yield* Sessions.make({ prefix, idleTimeout: "10 minutes" }).pipe(Effect.provide(context))
        hostTransport = Context.get(transport, Transport.Transport)
      }).pipe(Scope.extend(scope))
    )
  })

  afterAll(async () => {
    if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
    await nats?.close()
  })

  it("--session of a session nobody has stored and nobody serves is refused: exit 1, ConfigError asking for --create; the host starts nothing", async () => {
    const child = spawnBuilt(["mcp", "--session", "s1-typo"], { JITBOX_SERVER: nats!.url, JITBOX_NAMESPACE: namespace })
    expect(await child.exited()).toBe(1)
    expect(plain(child.stderr())).toContain(
      "jitbox: ConfigError: --session: no session s1-typo is stored or active in namespace mcp_cli; check the id, or give --create to start a new session"
    )
    expect(hostSessions!.active()).not.toContain("s1-typo")
    const alone = await inProcess(["mcp", "--create"])
    const failure = Exit.isFailure(alone.exit) ? Option.getOrUndefined(Cause.failureOption(alone.exit.cause)) : undefined
    expect(failure).toMatchObject({ _tag: "ConfigError", option: "--create" })
  })

  it("answers 401 without the bearer token; with it, creates a tool in the remote session (--create), announces list_changed and calls it; SIGTERM stops it with 0", async () => {
    const token = "mcp-test-token-0123456789"
    const child = spawnBuilt(["mcp", "--http", "0", "--session", "s1", "--create"], { JITBOX_SERVER: nats!.url, JITBOX_NAMESPACE: namespace, JITBOX_MCP_TOKEN: token })
    try {
      const ready = await child.line(/^ready mcp http:/)
      const url = /ready mcp (\S+)/.exec(ready)![1]!
      expect(ready).toMatch(/session s1 of mcp_cli/)
      const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "t", version: "0" } } }
      for (const authorization of [undefined, "Bearer wrong-token", `Basic ${token}`, `Bearer ${token}x`]) {
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(authorization === undefined ? {} : { authorization }) },
          body: JSON.stringify(initialize)
        })
        expect(response.status, String(authorization)).toBe(401)
        expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/)
        expect(await response.json()).toMatchObject({ error: { message: expect.stringContaining("Authorization: Bearer") } })
      }
      const mcp = client()
      await mcp.client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }))
      const before = mcp.state.listChanged
      await mcp.call("create_tool", js("double", doubleSource))
      await waitUntil("list_changed after create_tool", () => mcp.state.listChanged > before)
      expect(await mcp.names()).toContain("double")
      expect((await mcp.call("double", { value: 4 })).structuredContent).toEqual({ result: 8 })
      await mcp.client.close()
      child.child.kill("SIGTERM")
      expect(await child.exited()).toBe(0)
      expect(child.stdout()).toMatch(/stopped mcp/)
    } finally {
      child.kill()
    }
  })

  it("--session of a stored session needs no --create: over stdio it serves the tools made before", async () => {
    const transport = remoteStdio("--session", "s1")
    const mcp = client()
    await mcp.client.connect(transport)
    try {
      expect(await mcp.names()).toContain("double")
    } finally {
      await mcp.client.close()
    }
  })

  it("a change another client makes through manage (RemoteSession) reaches the MCP client over stdio: list_changed, then the new tool list", async () => {
    const transport = remoteStdio("--session", "s2", "--create")
    const mcp = client()
    await mcp.client.connect(transport)
    try {
      expect(await mcp.names()).not.toContain("double")
      const other = new RemoteSession.RemoteSession(hostTransport!, "s2", { prefix: Subject.prefix(Ids.namespace(namespace)) })
      const beforeCreate = mcp.state.listChanged
      expect(await other.createTool(js("double", doubleSource))).toEqual({ name: "double", status: "loaded" })
      await waitUntil("list_changed after manage create_tool", () => mcp.state.listChanged > beforeCreate)
      expect(await mcp.names()).toContain("double")
      const beforeUnload = mcp.state.listChanged
      await other.unloadTool("double")
      await waitUntil("list_changed after manage unload_tool", () => mcp.state.listChanged > beforeUnload)
      expect(await mcp.names()).not.toContain("double")
      expect(mcp.state.errors).toEqual([])
    } finally {
      await mcp.client.close()
    }
  })
})
