/**
 * A worker in a separate process over a real nats-server: a TypeScript tool runs there and
 * composes a base tool of the session in this process; on SIGTERM the worker drains, the
 * invocation it cannot finish in its grace period fails with a typed error, the session keeps
 * working on another worker, and none of the worker's processes is left behind.
 */
import { tool } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import { Ids, Subject } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import * as Effect from "effect/Effect"
import { afterAll, beforeAll } from "vitest"
import { sessionsHere } from "./fixtures/sessionsHere.js"
import { add, twiceSource } from "../../core/test/fixtures.js"
import { alive, descendants, exited, waitUntil, workerProcess } from "./fixtures/processes.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

const started: Array<unknown> = []
const note = tool({ name: "note", description: "Notes a call.", guidelines: "Use in tests." }, (args: unknown) => {
  started.push(args)
  return null
})


const slowJs = `export const slow = tool({
  description: "Answers after a while.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { ms: { type: "number" } }, required: ["ms"] }
}, async ({ ms }) => { await harness.callTool("note", {}); await new Promise((resolve) => setTimeout(resolve, ms)); return "slow" })`

const worker = (namespace: string) => workerProcess(server!.url, namespace, { graceMs: 300 })

describe("a worker in another process", () => {
  it.live("runs a TypeScript tool composing a base tool here; on SIGTERM it drains and leaves no process behind", () =>
    Effect.gen(function*() {
      const namespace = `proc_${Math.random().toString(36).slice(2, 8)}`
      const prefix = Subject.prefix(Ids.namespace(namespace))
      const first = yield* worker(namespace)
      const { sessions } = yield* sessionsHere({ server: server!.url, prefix, harness: { tools: [add, note], codeExecution: "sandboxed" } })
      const session = sessions.get("s1")
      yield* Effect.promise(() => session.createTool({ entrypoint: "twice", source: twiceSource }))
      assert.strictEqual(yield* Effect.promise(() => session.callTool("twice", { value: 21 })), 42)

      yield* Effect.promise(() => session.createTool({ entrypoint: "slow", language: "javascript", source: slowJs }))
      const pending = session.callTool("slow", { ms: 60_000 })
      pending.catch(() => {})
      yield* waitUntil("the slow tool runs", () => started.length === 1)
      const tree = descendants(first.pid)
      assert.isAbove(tree.length, 1, "the worker runs its tool in a child process")
      const second = yield* worker(namespace)
      first.child.kill("SIGTERM")
      const error = yield* Effect.promise(() => pending.then(() => undefined, (error: unknown) => error))
      assert.strictEqual((error as { _tag?: string })._tag, "TransportError", String(error))
      assert.strictEqual((error as { reason?: string }).reason, "Closed")
      assert.strictEqual(yield* exited(first.child), 0)
      yield* waitUntil("every process of the drained worker is gone", () => tree.every((pid) => !alive(pid)), 5_000)
      assert.strictEqual(yield* Effect.promise(() => session.callTool("slow", { ms: 1 })), "slow")
      second.child.kill("SIGTERM")
      assert.strictEqual(yield* exited(second.child), 0)
    }).pipe(Effect.scoped), 90_000)

  it.live("a worker killed outright (SIGKILL) mid-invocation: the call fails WorkerLost, the next runs on another worker", () =>
    Effect.gen(function*() {
      const namespace = `kill_${Math.random().toString(36).slice(2, 8)}`
      const prefix = Subject.prefix(Ids.namespace(namespace))
      const first = yield* worker(namespace)
      const { sessions } = yield* sessionsHere({ server: server!.url, prefix, harness: { tools: [add, note], codeExecution: "sandboxed" } })
      const session = sessions.get("s1")
      yield* Effect.promise(() => session.createTool({ entrypoint: "slow", language: "javascript", source: slowJs }))
      const before = started.length
      const pending = session.callTool("slow", { ms: 60_000 })
      pending.catch(() => {})
      yield* waitUntil("the slow tool runs", () => started.length > before)
      const tree = descendants(first.pid)
      const second = yield* worker(namespace)
      first.child.kill("SIGKILL")
      const error = yield* Effect.promise(() => pending.then(() => undefined, (error: unknown) => error))
      assert.strictEqual((error as { _tag?: string })._tag, "RemoteExecutionError", String(error))
      assert.strictEqual((error as { reason?: string }).reason, "WorkerLost", String(error))
      const profile = yield* Effect.promise(() => session.profile("slow"))
      assert.strictEqual(profile.calls.at(-1)?.status, "failed")
      assert.strictEqual(yield* Effect.promise(() => session.callTool("slow", { ms: 1 })), "slow")
      yield* waitUntil("every process of the killed worker is gone", () => tree.every((pid) => !alive(pid)), 10_000)
      second.child.kill("SIGTERM")
      assert.strictEqual(yield* exited(second.child), 0)
    }).pipe(Effect.scoped), 90_000)
})
