/**
 * `connect`, the Promise face, against a real nats-server and a real `Sessions` host (started in
 * this process on its own connection): a session driven with async/await only, and every
 * rejection the tagged error itself (`ConfigError`, `TransportError`, `ToolNotFound`), never an
 * Effect `FiberFailure`.
 */
import { HarnessError } from "@jitbox/core"
import { TransportError } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { add, twiceSource } from "../../core/test/fixtures.js"
import { type BaseToolHost, startBaseToolHost } from "./fixtures/baseToolHost.js"
import { connect } from "../src/index.js"

const namespace = "clienttest"

let server: NatsServer.Handle | undefined
let host: BaseToolHost | undefined
beforeAll(async () => {
  server = await NatsServer.start()
  host = await startBaseToolHost({ server: server.url, namespace, tools: [add] })
})
afterAll(async () => {
  await host?.close()
  await server?.close()
})

const rejectionOf = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then((value) => Promise.reject(new Error(`expected a rejection, got ${JSON.stringify(value)}`)), (error: unknown) => error)

describe("connect", () => {
  it("a session driven through the client: create_tool, callTool, listTools; a missing tool rejects ToolNotFound itself", async () => {
    const jitbox = await connect({ servers: server!.url, namespace, timeoutMs: 10_000 })
    try {
      const session = jitbox.session("s1")
      expect(await session.callTool("create_tool", { entrypoint: "twice", source: twiceSource })).toMatchObject({ name: "twice", status: "loaded" })
      expect(await session.callTool("add", { left: 1, right: 2 })).toBe(3)
      expect(await session.callTool("twice", { value: 21 })).toBe(42)
      const names = (await session.listTools()).map((entry) => entry.name)
      expect(names).toEqual(expect.arrayContaining(["add", "twice"]))

      const missing = await rejectionOf(session.callTool("missing", {}))
      expect(missing).toBeInstanceOf(HarnessError.ToolNotFound)
      expect(missing).toMatchObject({ _tag: "ToolNotFound", name: "missing" })

      // another session of the namespace, on the same client
      expect(await jitbox.session("s2").callTool("add", { left: 2, right: 2 })).toBe(4)
      expect(() => jitbox.session("not a session id")).toThrow(HarnessError.ConfigError)
    } finally {
      await jitbox.close()
      await jitbox.close()
    }
  })

  it("close drains the connection: a later call rejects TransportError Closed", async () => {
    const jitbox = await connect({ servers: server!.url, namespace })
    const session = jitbox.session("s1")
    await jitbox.close()
    const closed = await rejectionOf(session.callTool("add", { left: 1, right: 1 }))
    expect(closed).toBeInstanceOf(TransportError.TransportError)
    expect(closed).toMatchObject({ _tag: "TransportError", reason: "Closed" })
  })

  it("a bad namespace or option rejects with ConfigError itself", async () => {
    const cases = [
      [{ servers: server!.url, namespace: "not.a.namespace" }, "namespace"],
      [{ servers: server!.url, namespace: "" }, "namespace"],
      [{ servers: [], namespace }, "servers"],
      [{ servers: server!.url, namespace, timeoutMs: 0 }, "timeoutMs"],
      [{ servers: server!.url, namespace, connectTimeoutMs: Number.NaN }, "connectTimeoutMs"],
      [{ servers: server!.url, namespace, maxReconnectAttempts: -2 }, "maxReconnectAttempts"]
    ] as const
    for (const [options, option] of cases) {
      const error = await rejectionOf(connect(options))
      expect(error, option).toBeInstanceOf(HarnessError.ConfigError)
      expect(error, option).toMatchObject({ _tag: "ConfigError", option })
    }
  })

  it("no server at the address rejects with TransportError Connect itself", async () => {
    const port = await NatsServer.freePort()
    const error = await rejectionOf(connect({ servers: `nats://127.0.0.1:${port}`, namespace, connectTimeoutMs: 2_000 }))
    expect(error).toBeInstanceOf(TransportError.TransportError)
    expect(error).toMatchObject({ _tag: "TransportError", reason: "Connect" })
    expect((error as TransportError.TransportError).detail).toContain(String(port))
  })

  it("TLS asked of a server without it rejects with TransportError Connect", async () => {
    const error = await rejectionOf(connect({ servers: server!.url, namespace, tls: {}, connectTimeoutMs: 2_000 }))
    expect(error).toMatchObject({ _tag: "TransportError", reason: "Connect" })
  })
})
