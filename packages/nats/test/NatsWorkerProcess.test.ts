/**
 * A worker in a separate process over a real nats-server: a TypeScript tool runs there and
 * composes a base tool of the session in this process; on SIGTERM the worker drains, the
 * invocation it cannot finish in its grace period fails with a typed error, the session keeps
 * working on another worker, and none of the worker's processes is left behind.
 */
import { tool } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import { Ids, RemoteCodeRunner, Sessions, SnapshotStore, Subject } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as NatsTransport from "../src/NatsTransport.js"
import { add, twiceSource } from "../../core/test/fixtures.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

const fixture = path.join(import.meta.dirname, "fixtures", "workerProcess.ts")

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

/** Pids of `root` and every process below it, from /proc. */
const descendants = (root: number): Array<number> => {
  const parents = new Map<number, number>()
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]))
    } catch {
      // gone meanwhile
    }
  }
  const found = [root]
  for (let i = 0; i < found.length; i++) for (const [pid, parent] of parents) if (parent === found[i]) found.push(pid)
  return found
}

const alive = (pid: number): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"
  } catch {
    return false
  }
}

const waitUntil = (what: string, check: () => boolean, ms = 20_000): Effect.Effect<void> =>
  Effect.promise(async () => {
    const deadline = Date.now() + ms
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  })

/** A worker process, killed when the scope closes if it is still running. */
const workerProcess = (namespace: string, graceMs: number) =>
  Effect.acquireRelease(
    Effect.async<ChildProcess>((resume) => {
      const child = spawn(process.execPath, ["--conditions=@jitbox/source", "--import", "tsx", fixture], {
        env: { ...process.env, JITBOX_SERVER: server!.url, JITBOX_NAMESPACE: namespace, JITBOX_GRACE_MS: String(graceMs) },
        stdio: ["ignore", "pipe", "inherit"]
      })
      let out = ""
      child.stdout!.on("data", (chunk: Buffer) => {
        out += chunk.toString()
        if (out.includes("ready ")) resume(Effect.succeed(child))
      })
      child.once("exit", (code) => resume(Effect.die(new Error(`the worker process exited (${code}) before it was ready`))))
    }),
    (child) => Effect.sync(() => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL"))
  )

const exited = (child: ChildProcess) =>
  Effect.async<number | null>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.succeed(child.exitCode))
    child.once("exit", (code) => resume(Effect.succeed(code)))
  })

describe("a worker in another process", () => {
  it.live("runs a TypeScript tool composing a base tool here; on SIGTERM it drains and leaves no process behind", () =>
    Effect.gen(function*() {
      const namespace = `proc_${Math.random().toString(36).slice(2, 8)}`
      const prefix = Subject.prefix(Ids.namespace(namespace))
      const first = yield* workerProcess(namespace, 300)
      const context = yield* Layer.build(Layer.merge(NatsTransport.layer({ servers: server!.url }), SnapshotStore.layerMemory()))
      const runner = yield* Layer.build(RemoteCodeRunner.layer({ prefix })).pipe(Effect.provide(context))
      const sessions = yield* Sessions.make({ prefix, harness: { tools: [add, note], codeExecution: "sandboxed" }, idleTimeout: "10 minutes" })
        .pipe(Effect.provide(Context.merge(context, runner)))
      const session = sessions.get("s1")
      yield* Effect.promise(() => session.createTool({ entrypoint: "twice", source: twiceSource }))
      assert.strictEqual(yield* Effect.promise(() => session.callTool("twice", { value: 21 })), 42)

      yield* Effect.promise(() => session.createTool({ entrypoint: "slow", language: "javascript", source: slowJs }))
      const pending = session.callTool("slow", { ms: 60_000 })
      pending.catch(() => {})
      yield* waitUntil("the slow tool runs", () => started.length === 1)
      const tree = descendants(first.pid!)
      assert.isAbove(tree.length, 1, "the worker runs its tool in a child process")
      const second = yield* workerProcess(namespace, 300)
      first.kill("SIGTERM")
      const error = yield* Effect.promise(() => pending.then(() => undefined, (error: unknown) => error))
      assert.strictEqual((error as { _tag?: string })._tag, "TransportError", String(error))
      assert.strictEqual((error as { reason?: string }).reason, "Closed")
      assert.strictEqual(yield* exited(first), 0)
      yield* waitUntil("every process of the drained worker is gone", () => tree.every((pid) => !alive(pid)), 5_000)
      assert.strictEqual(yield* Effect.promise(() => session.callTool("slow", { ms: 1 })), "slow")
      second.kill("SIGTERM")
      assert.strictEqual(yield* exited(second), 0)
    }).pipe(Effect.scoped), 90_000)

  it.live("a worker killed outright (SIGKILL) mid-invocation: the call fails WorkerLost, the next runs on another worker", () =>
    Effect.gen(function*() {
      const namespace = `kill_${Math.random().toString(36).slice(2, 8)}`
      const prefix = Subject.prefix(Ids.namespace(namespace))
      const first = yield* workerProcess(namespace, 300)
      const context = yield* Layer.build(Layer.merge(NatsTransport.layer({ servers: server!.url }), SnapshotStore.layerMemory()))
      const runner = yield* Layer.build(RemoteCodeRunner.layer({ prefix })).pipe(Effect.provide(context))
      const sessions = yield* Sessions.make({ prefix, harness: { tools: [add, note], codeExecution: "sandboxed" }, idleTimeout: "10 minutes" })
        .pipe(Effect.provide(Context.merge(context, runner)))
      const session = sessions.get("s1")
      yield* Effect.promise(() => session.createTool({ entrypoint: "slow", language: "javascript", source: slowJs }))
      const before = started.length
      const pending = session.callTool("slow", { ms: 60_000 })
      pending.catch(() => {})
      yield* waitUntil("the slow tool runs", () => started.length > before)
      const tree = descendants(first.pid!)
      const second = yield* workerProcess(namespace, 300)
      first.kill("SIGKILL")
      const error = yield* Effect.promise(() => pending.then(() => undefined, (error: unknown) => error))
      assert.strictEqual((error as { _tag?: string })._tag, "TransportError", String(error))
      assert.strictEqual((error as { reason?: string }).reason, "WorkerLost", String(error))
      const profile = yield* Effect.promise(() => session.profile("slow"))
      assert.strictEqual(profile.calls.at(-1)?.status, "failed")
      assert.strictEqual(yield* Effect.promise(() => session.callTool("slow", { ms: 1 })), "slow")
      yield* waitUntil("every process of the killed worker is gone", () => tree.every((pid) => !alive(pid)), 10_000)
      second.kill("SIGTERM")
      assert.strictEqual(yield* exited(second), 0)
    }).pipe(Effect.scoped), 90_000)
})
