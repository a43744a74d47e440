/**
 * `connect`, the Promise face, against a real nats-server and a real `Sessions` host (started in
 * this process on its own connection): a session driven with async/await only, and every
 * rejection the tagged error itself (`ConfigError`, `TransportError`, `ToolNotFound`), never an
 * Effect `FiberFailure`.
 */
import { HarnessError } from "@jitbox/core"
import { TransportError } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import { describe, expect, it } from "vitest"
import { add, twiceSource } from "../../core/test/fixtures.js"
import { useBaseToolHost } from "./fixtures/baseToolHost.js"
import { connect } from "../src/index.js"

const namespace = "clienttest"

const serverUrl = useBaseToolHost(namespace, [add])

const rejectionOf = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then((value) => Promise.reject(new Error(`expected a rejection, got ${JSON.stringify(value)}`)), (error: unknown) => error)

describe("connect", () => {
  it("a session driven through the client: create_tool, callTool, listTools; a missing tool rejects ToolNotFound itself", async () => {
    const jitbox = await connect({ servers: serverUrl(), namespace, timeoutMs: 10_000 })
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
    const jitbox = await connect({ servers: serverUrl(), namespace })
    const session = jitbox.session("s1")
    await jitbox.close()
    const closed = await rejectionOf(session.callTool("add", { left: 1, right: 1 }))
    expect(closed).toBeInstanceOf(TransportError.TransportError)
    expect(closed).toMatchObject({ _tag: "TransportError", reason: "Closed" })
  })

  it("a bad namespace or option rejects with ConfigError itself", async () => {
    const cases = [
      [{ servers: serverUrl(), namespace: "not.a.namespace" }, "namespace"],
      [{ servers: serverUrl(), namespace: "" }, "namespace"],
      [{ servers: [], namespace }, "servers"],
      [{ servers: serverUrl(), namespace, timeoutMs: 0 }, "timeoutMs"],
      [{ servers: serverUrl(), namespace, connectTimeoutMs: Number.NaN }, "connectTimeoutMs"],
      [{ servers: serverUrl(), namespace, maxReconnectAttempts: -2 }, "maxReconnectAttempts"]
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
    const error = await rejectionOf(connect({ servers: serverUrl(), namespace, tls: {}, connectTimeoutMs: 2_000 }))
    expect(error).toMatchObject({ _tag: "TransportError", reason: "Connect" })
  })
})
