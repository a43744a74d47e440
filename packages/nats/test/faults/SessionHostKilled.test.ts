/**
 * Fault: the process hosting a session is SIGKILLed.
 *
 * Proves, against a real nats-server and real session host processes sharing a file snapshot
 * store: every toolbox change made through a `RemoteSession` was stored before it was
 * acknowledged, so after the host dies without a chance to save anything, the client's next call
 * finds nobody serving the session, asks the hosts to activate it, and a new host process
 * re-activates it from the store with every tool there and callable: a TypeScript tool composing
 * a base tool, a JavaScript tool at the version it was updated to, a Python tool and a text tool.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, RemoteSession, Subject, Transport, Worker } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as NatsConnection from "../../src/NatsConnection.js"
import * as NatsTransport from "../../src/NatsTransport.js"
import { twiceSource } from "../../../core/test/fixtures.js"
import { exited, sessionHostProcess } from "../fixtures/processes.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

const scale = (factor: number) => `export const scale = tool({
  description: "Multiplies by a factor.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }) => value * ${factor})`

const triplePy = `@tool(guidelines="Use in tests.")
def triple(value: int) -> int:
    """Triples an integer."""
    return value * 3
`

/** Calls every tool of the toolbox once, with what each answered. */
const callEvery = (session: RemoteSession.RemoteSession) =>
  Effect.promise(async () => ({
    twice: await session.callTool("twice", { value: 21 }),
    scale: await session.callTool("scale", { value: 4 }),
    triple: await session.callTool("triple", { value: 5 }),
    howto: ((await session.callTool("howto")) as { content: string }).content
  }))

const expected = { twice: 42, scale: 40, triple: 15, howto: "# Steps\nAsk twice." }

describe("fault: a session host process killed", () => {
  it.live("the next call re-activates the session from the store in another host, with every tool there and callable", () =>
    Effect.gen(function*() {
      const namespace = `shkill_${Math.random().toString(36).slice(2, 8)}`
      const prefix = Subject.prefix(Ids.namespace(namespace))
      const store = yield* Effect.acquireRelease(
        Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-store-"))),
        (directory) => Effect.promise(() => fs.promises.rm(directory, { recursive: true, force: true }))
      )
      const workerTransport = yield* Effect.map(NatsConnection.make({ servers: server!.url, reconnectTimeWaitMs: 100 }), NatsTransport.fromConnection)
      // the session hosts run without a coordinator
      yield* Worker.make({ prefix, requireAdmission: false, sandbox: { shortTimeoutSeconds: 30, activationTimeoutSeconds: 30 } })
        .pipe(Effect.provideService(Transport.Transport, workerTransport))
      const first = yield* sessionHostProcess(server!.url, namespace, store)
      const session = new RemoteSession.RemoteSession(yield* Effect.map(NatsConnection.make({ servers: server!.url }), NatsTransport.fromConnection), "s1", { prefix, timeoutMs: 60_000 })

      yield* Effect.promise(async () => {
        await session.createTool({ entrypoint: "twice", source: twiceSource })
        await session.createTool({ entrypoint: "scale", language: "javascript", source: scale(2) })
        await session.updateTool({ name: "scale", source: scale(10) })
        await session.createTool({ entrypoint: "triple", language: "python", source: triplePy })
        await session.createTool({ kind: "text", name: "howto", description: "How to ask.", source: "# Steps\nAsk twice." })
      })
      assert.deepStrictEqual(yield* callEvery(session), expected)

      first.child.kill("SIGKILL")
      yield* exited(first.child)
      const second = yield* sessionHostProcess(server!.url, namespace, store)
      assert.notStrictEqual(second.id, first.id)
      const names = (yield* Effect.promise(() => session.listTools())).map((entry) => entry.name)
      for (const name of ["twice", "scale", "triple", "howto"]) assert.include(names, name)
      assert.deepStrictEqual(yield* callEvery(session), expected)
    }).pipe(Effect.scoped), 120_000)
})
