/**
 * Fault: one of two worker processes is SIGKILLed while it runs invocations.
 *
 * Proves, against a real nats-server and real worker processes: the load spreads over both
 * workers (each names itself in what its tools return: its sandbox gives every child its id as
 * `JITBOX_WORKER_ID`); the invocations the killed worker was running fail explicitly (a typed
 * `RemoteExecutionError` `WorkerLost`, recorded `failed` in the session's profile) while those on the
 * other worker are untouched and complete; the session keeps working, every later invocation
 * running on the surviving worker; and no process of the killed worker is left behind.
 */
import { tool } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import { Ids, Subject } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import * as Effect from "effect/Effect"
import { afterAll, beforeAll } from "vitest"
import { alive, descendants, waitUntil, workerProcess } from "../fixtures/processes.js"
import { rejection, sessionsHere, type Tracked, track } from "../fixtures/sessionsHere.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

/** Which worker ran each held call (by `n`), as the call told the gate. */
const holders = new Map<number, string>()
let open!: () => void
const opened = new Promise<void>((resolve) => open = resolve)
const gate = tool(
  {
    name: "gate",
    description: "Notes which worker runs call n, then answers n once the test opens the gate.",
    guidelines: "Use in tests.",
    parameters: { type: "object", properties: { n: { type: "integer" }, worker: { type: "string" } }, required: ["n", "worker"] }
  },
  async ({ n, worker }: { n: number; worker: string }) => {
    holders.set(n, worker)
    await opened
    return n
  }
)

const whoamiJs = `export const whoami = tool({ description: "Answers the id of the worker running it.", guidelines: "Use in tests." },
  async () => { await new Promise((resolve) => setTimeout(resolve, 50)); return process.env.JITBOX_WORKER_ID })`

const holdJs = `export const hold = tool({
  description: "Holds call n open on its worker until the session's gate opens.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }
}, async ({ n }) => await harness.callTool("gate", { n, worker: process.env.JITBOX_WORKER_ID }))`

const count = (ids: ReadonlyArray<unknown>) => {
  const counts = new Map<unknown, number>()
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1)
  return counts
}

describe("fault: a worker process killed under load", () => {
  it.live("its invocations fail WorkerLost, the other worker's complete, later ones run there, and none of its processes is left", () =>
    Effect.gen(function*() {
      const namespace = `wkill_${Math.random().toString(36).slice(2, 8)}`
      const prefix = Subject.prefix(Ids.namespace(namespace))
      const workers = yield* Effect.all(
        [0, 1].map(() => workerProcess(server!.url, namespace, { concurrency: 4, environments: 4 })),
        { concurrency: 2 }
      )
      const { sessions } = yield* sessionsHere({ server: server!.url, prefix, harness: { tools: [gate], codeExecution: "sandboxed" } })
      const session = sessions.get("s1")
      yield* Effect.promise(() => session.createTool({ entrypoint: "whoami", language: "javascript", source: whoamiJs }))
      yield* Effect.promise(() => session.createTool({ entrypoint: "hold", language: "javascript", source: holdJs }))

      // The load spreads: both workers run some of 16 concurrent calls.
      const spread = count(yield* Effect.promise(() => Promise.all(Array.from({ length: 16 }, () => session.callTool("whoami")))))
      assert.deepStrictEqual([...spread.keys()].sort(), workers.map((worker) => worker.id).sort(), `calls per worker: ${JSON.stringify([...spread])}`)

      // Calls held open until both workers hold at least one (a worker past its concurrency answers Busy: the next goes to the other).
      const held = new Map<number, Tracked<unknown>>()
      for (let n = 1; n <= 9 && new Set(holders.values()).size < 2; n++) {
        held.set(n, track(session.callTool("hold", { n })))
        yield* waitUntil(`call ${n} reaches its gate`, () => holders.has(n))
      }
      const victim = workers.find((worker) => worker.id === holders.get(1))!
      const survivor = workers.find((worker) => worker !== victim)!
      const onVictim = [...held.keys()].filter((n) => holders.get(n) === victim.id)
      const onSurvivor = [...held.keys()].filter((n) => holders.get(n) === survivor.id)
      assert.isAbove(onSurvivor.length, 0)
      const tree = descendants(victim.pid)
      assert.isAbove(tree.length, 1, "the victim runs its tools in child processes")

      victim.child.kill("SIGKILL")
      for (const n of onVictim) {
        const error = (yield* rejection(held.get(n)!.promise)) as { _tag?: string; reason?: string }
        assert.strictEqual(error._tag, "RemoteExecutionError", String(error))
        assert.strictEqual(error.reason, "WorkerLost", String(error))
      }
      assert.isFalse(onSurvivor.some((n) => held.get(n)!.settled()), "the survivor's calls are untouched by the other's death")
      const failed = (yield* Effect.promise(() => session.profile("hold"))).calls
      assert.deepStrictEqual(failed.map((record) => record.status), onVictim.map(() => "failed"))

      open()
      for (const n of onSurvivor) assert.strictEqual(yield* Effect.promise(() => held.get(n)!.promise), n)
      const later = count(yield* Effect.promise(() => Promise.all(Array.from({ length: 8 }, () => session.callTool("whoami")))))
      assert.deepStrictEqual([...later], [[survivor.id, 8]])
      const statuses = count((yield* Effect.promise(() => session.profile("hold"))).calls.map((record) => record.status))
      assert.deepStrictEqual(Object.fromEntries(statuses), { failed: onVictim.length, completed: onSurvivor.length })
      yield* waitUntil("every process of the killed worker is gone", () => tree.every((pid) => !alive(pid)), 10_000)
    }).pipe(Effect.scoped), 120_000)
})
