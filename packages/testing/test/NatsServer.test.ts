/**
 * The nats-server fixture: ready when handed out, same URL and store across restarts, stop and
 * kill really stop it, and nothing is left when its scope closes.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import * as NatsServer from "../src/NatsServer.js"

/** What the first bytes of a connection to the port are: the server's INFO line, or why there are none. */
const greeting = (port: number): Promise<string> =>
  new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port })
    let seen = ""
    socket.setTimeout(2_000, () => {
      socket.destroy()
      resolve("timeout")
    })
    socket.on("data", (chunk) => {
      seen += chunk.toString("latin1")
      if (seen.includes("\r\n")) {
        socket.destroy()
        resolve(seen.slice(0, 5))
      }
    })
    socket.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"))
  })

describe("NatsServer", () => {
  it.live("the Effect resource: ready, restartable on the same port and store, gone with its directory when the scope closes", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const server = yield* Scope.extend(NatsServer.make(), scope)
      assert.strictEqual(server.url, `nats://127.0.0.1:${server.port}`)
      assert.strictEqual(yield* Effect.promise(() => greeting(server.port)), "INFO ")
      assert.isTrue(fs.existsSync(server.storeDir))
      const marker = path.join(server.storeDir, "marker")
      fs.writeFileSync(marker, "kept")

      yield* server.stop
      assert.strictEqual(yield* Effect.promise(() => greeting(server.port)), "ECONNREFUSED")
      yield* server.restart
      assert.strictEqual(yield* Effect.promise(() => greeting(server.port)), "INFO ")
      assert.strictEqual(fs.readFileSync(marker, "utf8"), "kept")

      yield* server.kill
      assert.strictEqual(yield* Effect.promise(() => greeting(server.port)), "ECONNREFUSED")
      yield* server.restart
      assert.strictEqual(yield* Effect.promise(() => greeting(server.port)), "INFO ")
      assert.include(server.log(), "Server is ready")

      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(yield* Effect.promise(() => greeting(server.port)), "ECONNREFUSED")
      assert.isFalse(fs.existsSync(path.dirname(server.storeDir)))
    }))

  it("the Promise helper: start, close twice", async () => {
    const server = await NatsServer.start()
    assert.strictEqual(await greeting(server.port), "INFO ")
    await server.restart()
    assert.strictEqual(await greeting(server.port), "INFO ")
    await Promise.all([server.close(), server.close()])
    assert.strictEqual(await greeting(server.port), "ECONNREFUSED")
    assert.isFalse(fs.existsSync(server.storeDir))
  })

  it.live("a missing binary fails with NatsServerError BinaryMissing, pointing at NATS_SERVER_BIN", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.scoped(NatsServer.make({ binary: "/nonexistent/nats-server" })))
      assert.strictEqual(error.reason, "BinaryMissing")
      assert.include(error.detail, "NATS_SERVER_BIN")
    }))
})
