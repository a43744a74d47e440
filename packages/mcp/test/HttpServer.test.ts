/**
 * Sessions built from a snapshot, served over Streamable HTTP and driven with the official MCP
 * client: every MCP session gets its own harness from the snapshot. The tools and instructions
 * the client sees are the session's; a toolbox change, whoever makes it, announces
 * `list_changed`; calls go through the session (profiled), compose, page source, fail as
 * `isError` results with the model's error text, cancel and report progress. The boundary is
 * bounded: body size, session count, idle sessions, DELETE; with a bearer token, a request without
 * it is answered 401.
 */
import { JitHarness, type JitHarnessSnapshot, ThrownValue } from "@jitbox/core"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import * as http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { HttpServer, ServedSession, SessionServer } from "../src/index.js"
import { connect, create, doubleSource, makerSource, quadrupleSource, slowSource, type TestClient, textOf, waitUntil } from "./fixtures.js"

let snapshot: JitHarnessSnapshot.JitHarnessSnapshot
let server: HttpServer.HttpServer
const harnesses: Array<JitHarness> = []
const clients: Array<TestClient> = []

const open = async (): Promise<ServedSession.OpenedSession> => {
  const harness = new JitHarness(snapshot, { sessionId: `mcp-${harnesses.length}` })
  harnesses.push(harness)
  return { session: harness, events: ServedSession.eventsOf(harness), close: () => harness.release() }
}

const connected = async (url = server.url): Promise<TestClient> => {
  const client = await connect(new StreamableHTTPClientTransport(new URL(url)))
  clients.push(client)
  return client
}

const released = (harness: JitHarness): Promise<boolean> =>
  harness.callTool("double", { value: 1 }).then(() => false, (error: { _tag?: string }) => error._tag === "HarnessReleased")

beforeAll(async () => {
  const template = new JitHarness()
  await template.createTool(create("double", doubleSource))
  await template.createTool(create("slow", slowSource))
  snapshot = template.snapshot()
  await template.release()
  server = await HttpServer.listen({ open, heartbeatMs: 50 })
})

afterAll(async () => {
  await Promise.all(clients.map((client) => client.client.close().catch(() => undefined)))
  await server?.close()
})

describe("a snapshot's sessions over Streamable HTTP", () => {
  it("lists the session's tools with their guidelines, and its instruction block as the server's instructions", async () => {
    const client = await connected()
    const harness = harnesses.at(-1)!
    const definitions = harness.definitions(SessionServer.protocol)
    expect(client.client.getInstructions()).toBe(definitions.instructions)
    const listed = (await client.client.listTools()).tools
    expect(listed.map((tool) => tool.name)).toEqual(definitions.tools.map((tool) => tool.name))
    expect(listed.map((tool) => tool.name)).toEqual(expect.arrayContaining(["double", "slow", "create_tool", "read_tool_source"]))
    const double = listed.find((tool) => tool.name === "double")!
    expect(double.description).toBe("Doubles a number.\n\nGuidelines: Use to double numbers.")
    expect(double.inputSchema).toMatchObject({ type: "object", required: ["value"] })
  })

  it("creates a tool, announces list_changed, calls it and composes it; a code tool's own change is announced too", async () => {
    const client = await connected()
    const harness = harnesses.at(-1)!
    const before = client.listChanged()
    const created = await client.call("create_tool", create("quadruple", quadrupleSource))
    expect(created.isError).toBeUndefined()
    expect(created.structuredContent).toEqual({ name: "quadruple", status: "loaded" })
    await waitUntil("list_changed after create_tool", () => client.listChanged() > before)
    expect(await client.toolNames()).toContain("quadruple")

    const doubled = await client.call("double", { value: 3 })
    expect(textOf(doubled)).toBe("6")
    expect(doubled.structuredContent).toEqual({ result: 6 })
    const composed = await client.call("quadruple", { value: 5 })
    expect(composed.structuredContent).toEqual({ quadrupled: 20 })
    expect(harness.profile("double").calls.filter((call) => call.caller_tool_name === "quadruple")).toHaveLength(2)

    await client.call("create_tool", create("maker", makerSource))
    const beforeMaker = client.listChanged()
    const made = await client.call("maker", { name: "note" })
    expect(made.isError).toBeUndefined()
    await waitUntil("list_changed after a code tool's create_tool", () => client.listChanged() > beforeMaker)
    expect(await client.toolNames()).toContain("note")

    const beforeUnload = client.listChanged()
    await client.call("unload_tool", { name: "note" })
    await waitUntil("list_changed after unload_tool", () => client.listChanged() > beforeUnload)
    expect(await client.toolNames()).not.toContain("note")
  })

  it("pages a tool's source with read_tool_source", async () => {
    const client = await connected()
    const first = await client.call("read_tool_source", { name: "double", max_chars: 40 })
    const page = first.structuredContent as { content: string; next_offset: number | null }
    expect(doubleSource.startsWith(page.content)).toBe(true)
    expect(page.next_offset).toBe(40)
    const second = await client.call("read_tool_source", { name: "double", offset: 40, max_chars: 40 })
    expect((second.structuredContent as { content: string }).content).toBe(doubleSource.slice(40, 80))
  })

  it("answers a tool's failure as an isError result with the text the model gets, never a protocol error", async () => {
    const client = await connected()
    const failed = await client.call("double", { value: -1 })
    expect(failed.isError).toBe(true)
    expect(textOf(failed)).toBe(ThrownValue.forModel(new RangeError("negative values are not allowed")).text)
    expect(textOf(failed)).toBe("RangeError: negative values are not allowed")
    const invalid = await client.call("double", { value: "three" })
    expect(invalid.isError).toBe(true)
    expect(textOf(invalid)).toMatch(/^ValidationError: .*value/)
    const missing = await client.call("no_such_tool")
    expect(missing.isError).toBe(true)
    expect(textOf(missing)).toMatch(/^ToolNotFound: /)
  })

  it("cancels a call on notifications/cancelled: the session's record says cancelled", async () => {
    const client = await connected()
    const harness = harnesses.at(-1)!
    let started = false
    harness.events.listen((event) => {
      if (event.name === "jit_tool_started" && event.payload.tool_name === "slow") started = true
    })
    const controller = new AbortController()
    const pending = client.client.callTool({ name: "slow", arguments: { ms: 20_000 } }, undefined, { signal: controller.signal })
    await waitUntil("the slow call runs", () => started)
    controller.abort()
    await expect(pending).rejects.toThrow()
    await waitUntil("the record says cancelled", () => harness.profile("slow").calls.some((call) => call.status === "cancelled"))
  })

  it("sends progress notifications while a call runs when the client gave a progress token", async () => {
    const client = await connected()
    const progress: Array<number> = []
    const result = await client.client.callTool({ name: "slow", arguments: { ms: 600 } }, undefined, {
      onprogress: (notification) => progress.push(notification.progress)
    })
    expect(textOf(result as never)).toBe("slow")
    expect(progress.length).toBeGreaterThan(0)
    expect(progress).toEqual([...progress].sort((a, b) => a - b))
  })

  it("keeps two MCP sessions' toolboxes apart", async () => {
    const first = await connected()
    const second = await connected()
    await first.call("create_tool", { kind: "text", name: "only_first", description: "Only in the first session.", source: "# First" })
    expect(await first.toolNames()).toContain("only_first")
    expect(await second.toolNames()).not.toContain("only_first")
    expect(textOf(await second.call("only_first"))).toMatch(/^ToolNotFound: /)
  })

  it("closes the session and releases its harness on DELETE", async () => {
    const client = await connected()
    const harness = harnesses.at(-1)!
    const open = server.sessions()
    await (client.client.transport as StreamableHTTPClientTransport).terminateSession()
    await waitUntil("the harness is released", () => released(harness))
    expect(server.sessions()).toBe(open - 1)
  })
})

describe("the HTTP boundary", () => {
  it("answers a body over the bound 413, non-JSON 400, an unknown session 404, without opening a session", async () => {
    const small = await HttpServer.listen({ open, maxBodyBytes: 1024 })
    try {
      const opened = harnesses.length
      const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" }
      const large = await fetch(small.url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { pad: "x".repeat(4096) } }) })
      expect(large.status).toBe(413)
      const garbage = await fetch(small.url, { method: "POST", headers, body: "{not json" })
      expect(garbage.status).toBe(400)
      const unknown = await fetch(small.url, { method: "POST", headers: { ...headers, "mcp-session-id": "nope" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) })
      expect(unknown.status).toBe(404)
      const uninitialized = await fetch(small.url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) })
      expect(uninitialized.status).toBe(400)
      expect(harnesses.length).toBe(opened)
    } finally {
      await small.close()
    }
  })

  it("answers 403 to a Host it does not serve (DNS rebinding), before reading the body or opening a session", async () => {
    const initialize = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } })
    const post = (url: string, host: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = http.request(url, { method: "POST", headers: { host, "content-type": "application/json", accept: "application/json, text/event-stream" } }, (response) => {
          let body = ""
          response.on("data", (chunk: Buffer) => body += chunk.toString())
          response.on("end", () => resolve({ status: response.statusCode ?? 0, body }))
        })
        request.on("error", reject)
        request.end(initialize)
      })
    const opened = harnesses.length
    const port = server.port
    const rebound = await post(server.url, `attacker.example:${port}`)
    expect(rebound.status).toBe(403)
    expect(rebound.body).toContain("Invalid Host: attacker.example")
    expect(harnesses.length).toBe(opened)
    const viaLocalhost = await connected(`http://localhost:${port}/mcp`)
    expect(await viaLocalhost.toolNames()).toContain("double")

    const named = await HttpServer.listen({ open, allowedHosts: ["jitbox.internal"] })
    try {
      expect((await post(named.url, `localhost:${named.port}`)).status).toBe(403)
      expect((await post(named.url, `jitbox.internal:${named.port}`)).status).toBe(200)
    } finally {
      await named.close()
    }
  })

  it("with a bearer token: 401 with a JSON error to a request without it (or with another), before opening a session; the official client with it is served", async () => {
    const guarded = await HttpServer.listen({ open, bearerToken: "tok-0123456789" })
    try {
      const opened = harnesses.length
      const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } })
      for (const authorization of [undefined, "Bearer tok-012345678", "Bearer tok-0123456789x", "tok-0123456789", "Basic tok-0123456789"]) {
        const response = await fetch(guarded.url, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(authorization === undefined ? {} : { authorization }) },
          body
        })
        expect(response.status, String(authorization)).toBe(401)
        expect(response.headers.get("content-type")).toBe("application/json")
        expect(response.headers.get("www-authenticate")).toBe(`Bearer realm="jitbox-mcp"`)
        expect(await response.json()).toEqual({ jsonrpc: "2.0", error: { code: -32001, message: expect.stringContaining("Authorization: Bearer") }, id: null })
      }
      expect((await fetch(guarded.url, { method: "GET" })).status).toBe(401)
      expect(harnesses.length).toBe(opened)
      const client = await connect(new StreamableHTTPClientTransport(new URL(guarded.url), { requestInit: { headers: { authorization: "Bearer tok-0123456789" } } }))
      clients.push(client)
      expect(await client.toolNames()).toContain("double")
    } finally {
      await guarded.close()
    }
  })

  it("answers 500 when the session cannot be opened, and counts no session for it", async () => {
    let attempts = 0
    const failing = await HttpServer.listen({
      open: () => {
        attempts++
        return Promise.reject(new Error("the store is down"))
      },
      maxSessions: 1
    })
    try {
      for (let i = 0; i < 2; i++) {
        await expect(connect(new StreamableHTTPClientTransport(new URL(failing.url)))).rejects.toThrow(/the store is down/)
      }
      expect(attempts).toBe(2)
      expect(failing.sessions()).toBe(0)
    } finally {
      await failing.close()
    }
  })

  it("refuses a session past maxSessions with 503, and closes idle sessions", async () => {
    const bounded = await HttpServer.listen({ open, maxSessions: 1, idleTimeoutMs: 300 })
    try {
      const first = await connect(new StreamableHTTPClientTransport(new URL(bounded.url)))
      const harness = harnesses.at(-1)!
      const opened = harnesses.length
      await expect(connect(new StreamableHTTPClientTransport(new URL(bounded.url)))).rejects.toThrow(/503|Too many sessions/)
      expect(harnesses.length).toBe(opened)
      await waitUntil("the idle session is closed", () => released(harness))
      expect(bounded.sessions()).toBe(0)
      await first.client.close()
      const again = await connect(new StreamableHTTPClientTransport(new URL(bounded.url)))
      expect(await again.toolNames()).toContain("double")
      await again.client.close()
    } finally {
      await bounded.close()
    }
  })
})
