/**
 * Remote sessions served over Streamable HTTP: the sessions are hosted in this process on a real
 * nats-server (as `jitbox sessions` hosts them, code running in the host), the MCP server reaches
 * each through its own NATS connection as a `RemoteSession` (tools/list from the `definitions`
 * message, events from the session's published events), and the official MCP client drives it.
 */
import { Ids, RemoteSession, Sessions, SnapshotStore, StreamPublisher, Subject, Transport } from "@jitbox/runtime"
import { NatsConnection, NatsTransport } from "@jitbox/nats"
import { NatsServer } from "@jitbox/testing"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { HttpServer, SessionServer } from "../src/index.js"
import { connect, create, doubleSource, quadrupleSource, slowSource, type TestClient, textOf, waitUntil } from "./fixtures.js"

const prefix = Subject.prefix(Ids.namespace("mcp_remote"))
let nats: NatsServer.Handle | undefined
let scope: Scope.CloseableScope | undefined
let server: HttpServer.HttpServer | undefined
const remotes: Array<RemoteSession.RemoteSession> = []
const clients: Array<TestClient> = []

beforeAll(async () => {
  nats = await NatsServer.start()
  scope = Effect.runSync(Scope.make())
  const mcpSide = await Effect.runPromise(
    Effect.gen(function*() {
      const hostSide = yield* Layer.build(NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer({ servers: nats!.url, reconnectTimeWaitMs: 100 }))))
      const publisher = yield* Layer.build(StreamPublisher.layer({ prefix })).pipe(Effect.provide(hostSide))
      const context = Context.add(Context.merge(hostSide, publisher), SnapshotStore.SnapshotStore, SnapshotStore.makeMemory())
      yield* Sessions.make({ prefix, idleTimeout: "10 minutes" }).pipe(Effect.provide(context))
      const client = yield* Layer.build(NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer({ servers: nats!.url, reconnectTimeWaitMs: 100 }))))
      return Context.get(client, Transport.Transport)
    }).pipe(Scope.extend(scope))
  )
  server = await HttpServer.listen({
    heartbeatMs: 50,
    open: async () => {
      const remote = new RemoteSession.RemoteSession(mcpSide, `mcp${remotes.length + 1}`, { prefix })
      remotes.push(remote)
      return { session: remote, events: (listener) => remote.listen(listener), close: () => remote.forget() }
    }
  })
})

afterAll(async () => {
  await Promise.all(clients.map((client) => client.client.close().catch(() => undefined)))
  await server?.close()
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  await nats?.close()
})

const connected = async (): Promise<TestClient> => {
  const client = await connect(new StreamableHTTPClientTransport(new URL(server!.url)))
  clients.push(client)
  return client
}

describe("remote sessions over NATS, served over Streamable HTTP", () => {
  it("lists, creates with list_changed, calls, composes, fails as isError, cancels and reports progress", async () => {
    const client = await connected()
    const remote = remotes.at(-1)!
    const definitions = await remote.definitions(SessionServer.protocol)
    expect(client.client.getInstructions()).toBe(definitions.instructions)
    expect(await client.toolNames()).toEqual(definitions.tools.map((tool) => tool.name))

    for (const [entrypoint, source] of [["double", doubleSource], ["quadruple", quadrupleSource], ["slow", slowSource]] as const) {
      const before = client.listChanged()
      const created = await client.call("create_tool", create(entrypoint, source))
      expect(created.structuredContent).toEqual({ name: entrypoint, status: "loaded" })
      await waitUntil(`list_changed after creating ${entrypoint}`, () => client.listChanged() > before)
    }
    expect(await client.toolNames()).toEqual(expect.arrayContaining(["double", "quadruple", "slow"]))
    expect((await client.call("quadruple", { value: 2 })).structuredContent).toEqual({ quadrupled: 8 })
    const failed = await client.call("double", { value: -2 })
    expect(failed.isError).toBe(true)
    expect(textOf(failed)).toBe("RangeError: negative values are not allowed")

    const progress: Array<number> = []
    const waited = await client.client.callTool({ name: "slow", arguments: { ms: 400 } }, undefined, {
      onprogress: (notification) => progress.push(notification.progress)
    })
    expect(textOf(waited as never)).toBe("slow")
    expect(progress.length).toBeGreaterThan(0)

    const controller = new AbortController()
    const pending = client.client.callTool({ name: "slow", arguments: { ms: 20_000 } }, undefined, {
      signal: controller.signal,
      onprogress: () => controller.abort()
    })
    await expect(pending).rejects.toThrow()
    await waitUntil("the remote record says cancelled", async () =>
      (await remote.profile("slow")).calls.some((call) => call.status === "cancelled"))
  })

  it("keeps two MCP sessions' remote sessions apart", async () => {
    const first = await connected()
    const second = await connected()
    await first.call("create_tool", { kind: "text", name: "only_first", description: "Only in the first session.", source: "# First" })
    expect(await first.toolNames()).toContain("only_first")
    expect(await second.toolNames()).not.toContain("only_first")
  })
})
