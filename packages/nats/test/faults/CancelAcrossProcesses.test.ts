/**
 * Fault: the model cancels a long-running invocation that runs on a worker in another process.
 *
 * Proves, against a real nats-server and a real worker process: `cancel_invocation`, called by
 * the model's side (a `RemoteSession` on its own connection, as an agent loop elsewhere would),
 * ends the remote sandbox child running that invocation (every process of it, found in /proc by
 * the marker the child reads as `JITBOX_SANDBOX_CHILD`) within a second of the request; the
 * invocation finishes `cancelled` and its profile record says `cancelled`; and the invocations
 * running beside it on the same worker keep their processes and complete.
 */
import { tool } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import { Ids, RemoteSession, Subject } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import * as Effect from "effect/Effect"
import { afterAll, beforeAll } from "vitest"
import * as NatsConnection from "../../src/NatsConnection.js"
import * as NatsTransport from "../../src/NatsTransport.js"
import { alive, sandboxChild, waitUntil, workerProcess } from "../fixtures/processes.js"
import { sessionsHere } from "../fixtures/sessionsHere.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

/** The sandbox marker of each running call, by `n`. */
const markers = new Map<number, string>()
const note = tool(
  {
    name: "note",
    description: "Notes the sandbox child that runs call n.",
    guidelines: "Use in tests.",
    parameters: { type: "object", properties: { n: { type: "integer" }, marker: { type: "string" } }, required: ["n", "marker"] }
  },
  ({ marker, n }: { n: number; marker: string }) => {
    markers.set(n, marker)
    return null
  }
)
let open!: () => void
const opened = new Promise<void>((resolve) => open = resolve)
const gate = tool(
  {
    name: "gate",
    description: "Answers n once the test opens the gate.",
    guidelines: "Use in tests.",
    parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }
  },
  async ({ n }: { n: number }) => {
    await opened
    return n
  }
)

const holdJs = `export const hold = tool({
  description: "Call n: sleeps two minutes, or waits for the session's gate.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { n: { type: "integer" }, sleep: { type: "boolean" } }, required: ["n", "sleep"] }
}, async ({ n, sleep }) => {
  await harness.callTool("note", { n, marker: process.env.JITBOX_SANDBOX_CHILD })
  if (sleep) { await new Promise((resolve) => setTimeout(resolve, 120000)); return "slept" }
  return await harness.callTool("gate", { n })
})`

interface Finished {
  readonly finished: ReadonlyArray<{ readonly invocation_id: string; readonly status: string; readonly result?: unknown }>
  readonly running: ReadonlyArray<string>
}

describe("fault: cancel across processes", () => {
  it.live("cancel_invocation ends the remote child within a second, records cancelled, and leaves the others running", () =>
    Effect.gen(function*() {
      const namespace = `cancel_${Math.random().toString(36).slice(2, 8)}`
      const prefix = Subject.prefix(Ids.namespace(namespace))
      yield* workerProcess(server!.url, namespace, { concurrency: 4, environments: 4 })
      yield* sessionsHere({
        server: server!.url,
        prefix,
        harness: {
          tools: [note, gate],
          codeExecution: "sandboxed",
          policy: { allowedLanguages: ["JavaScript"], requireRootCoordinator: false, allowAsyncOperations: true, maximumConcurrentInvocations: 4, maximumInvocations: 20 }
        }
      })
      const model = new RemoteSession.RemoteSession(yield* Effect.map(NatsConnection.make({ servers: server!.url }), NatsTransport.fromConnection), "s1", { prefix })
      const call = <A>(name: string, args: unknown) => Effect.promise(() => model.callTool(name, args) as Promise<A>)
      yield* Effect.promise(() => model.createTool({ entrypoint: "hold", language: "javascript", source: holdJs }))

      const ids: Array<string> = []
      for (const n of [1, 2, 3]) {
        const started = yield* call<{ invocation_id: string; status: string }>("start_invocation", { name: "hold", arguments: { n, sleep: n === 1 } })
        assert.strictEqual(started.status, "running")
        ids.push(started.invocation_id)
      }
      yield* waitUntil("the three calls run", () => markers.size === 3, 60_000)
      const [victim, ...others] = [1, 2, 3].map((n) => sandboxChild(markers.get(n)!))
      assert.isAbove(victim!.length, 0, "the cancelled call runs in processes of its own")
      for (const pids of others) {
        assert.isAbove(pids.length, 0)
        assert.isFalse(pids.some((pid) => victim!.includes(pid)))
      }

      // The one timing rule here is itself a bound: the remote processes are gone within a second.
      const sent = performance.now()
      assert.deepStrictEqual(yield* call("cancel_invocation", { invocation_id: ids[0] }), { invocation_id: ids[0], status: "cancelled" })
      yield* waitUntil("the cancelled call's processes end", () => victim!.every((pid) => !alive(pid)), 10_000)
      const tookMs = performance.now() - sent
      assert.isAtMost(tookMs, 1_000, `the cancelled call's processes ended ${Math.round(tookMs)} ms after cancel_invocation`)
      assert.isTrue(others.every((pids) => pids.every(alive)), "the other calls' processes are untouched")

      const cancelled = yield* call<Finished>("await_invocations", { invocation_ids: [ids[0]], timeout_seconds: 30 })
      assert.deepStrictEqual(cancelled.finished.map((item) => item.status), ["cancelled"])
      const afterCancel = yield* Effect.promise(() => model.profile("hold"))
      assert.deepStrictEqual(afterCancel.calls.map((record) => record.status), ["cancelled"])

      open()
      const rest = yield* call<Finished>("await_invocations", { invocation_ids: ids.slice(1), timeout_seconds: 60 })
      assert.deepStrictEqual(rest.finished.map((item) => [item.status, item.result]), [["completed", 2], ["completed", 3]])
      const statuses = (yield* Effect.promise(() => model.profile("hold"))).calls.map((record) => record.status)
      assert.deepStrictEqual([...statuses].sort(), ["cancelled", "completed", "completed"])
    }).pipe(Effect.scoped), 120_000)
})
