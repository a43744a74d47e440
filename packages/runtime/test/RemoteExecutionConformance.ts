/**
 * Code tools of a session run on workers (`RemoteCodeRunner` in the session's host, `Worker`s on
 * the same transport), one suite for every transport layer: a remote JavaScript call, a
 * TypeScript tool on a worker composing a base tool of the session, a deadline, cancel across,
 * module state per session, a worker closed mid-invocation, and no child left behind.
 */
import { tool } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as Ids from "../src/Ids.js"
import * as RemoteCodeRunner from "../src/RemoteCodeRunner.js"
import * as RemoteSession from "../src/RemoteSession.js"
import * as Sessions from "../src/Sessions.js"
import * as SnapshotStore from "../src/SnapshotStore.js"
import * as Subject from "../src/Subject.js"
import type * as Transport from "../src/Transport.js"
import * as Worker from "../src/Worker.js"
import { add } from "../../core/test/fixtures.js"

let namespaces = 0
const freshPrefix = () => Subject.prefix(Ids.namespace(`work${++namespaces}_${Math.random().toString(36).slice(2, 8)}`))

const sandbox = {
  shortTimeoutSeconds: 30,
  activationTimeoutSeconds: 30,
  limits: { memoryMiB: 256, cpuSeconds: 30, openFiles: 64, processes: 256, fileSizeMiB: 8, tmpfsMiB: 16 }
} as const

/** Pids reported by the tool `hang` before it hangs, by the session's base tool `note`. */
const noted: Array<unknown> = []
const note = tool(
  { name: "note", description: "Notes a value.", guidelines: "Use in tests.", parameters: { type: "object", properties: {} } },
  (args: unknown) => {
    noted.push(args)
    return null
  }
)

const doubleJs = `export const double = tool({
  description: "Doubles a number.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }) => value * 2)`

const twiceTs = `export const twice = tool({
  description: "Add the same integer twice.",
  guidelines: "Use to add an integer to itself.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }: { value: number }) => await harness.callTool("add", { left: value, right: value }))`

const counterJs = `let count = 0
export const counter = tool({ description: "Counts its calls.", guidelines: "Use in tests." }, async () => ++count)`

const hangJs = `export const hang = tool({ description: "Never answers.", guidelines: "Use in tests." }, async () => {
  await harness.callTool("note", {})
  await new Promise(() => setInterval(() => {}, 1000))
})`

const slowJs = `export const slow = tool({
  description: "Answers after a while.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { ms: { type: "number" } }, required: ["ms"] }
}, async ({ ms }) => { await harness.callTool("note", {}); await new Promise((resolve) => setTimeout(resolve, ms)); return "slow" })`

export const waitUntil = (what: string, check: () => boolean, ms = 20_000): Effect.Effect<void> =>
  Effect.promise(async () => {
    const deadline = Date.now() + ms
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  })

const rejection = (promise: Promise<unknown>): Effect.Effect<unknown> =>
  Effect.promise(() =>
    promise.then(
      (value) => {
        throw new Error(`expected a rejection, got ${JSON.stringify(value)}`)
      },
      (error: unknown) => error
    )
  )

/** Whether a process still exists and is not a zombie (a container's init may be slow to reap). */
const alive = (pid: number): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"
  } catch {
    return false
  }
}

/** Every pid a worker ever reported, to check at the end that none is left. */
const seen = new Set<number>()
export const track = (worker: Worker.Worker) => {
  for (const pid of worker.processes()) seen.add(pid)
}

/** A worker in its own scope, so a test can close it while the session keeps going. */
export const startWorker = (context: Context.Context<Transport.Transport>, prefix: Subject.Prefix, options: Partial<Worker.WorkerOptions> = {}) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const worker = yield* Worker.make({ prefix, sandbox, ...options }).pipe(Effect.provide(context), Scope.extend(scope))
    return { worker, close: Scope.close(scope, Exit.void) }
  })

/** A transport, a host of sessions whose code runs remotely, and one worker. */
export const setup = (
  makeLayer: () => Layer.Layer<Transport.Transport, unknown>,
  policy?: Record<string, unknown>,
  workerOptions: Partial<Worker.WorkerOptions> = {}
) =>
  Effect.gen(function*() {
    const prefix = freshPrefix()
    const context = yield* Layer.build(Layer.merge(makeLayer(), SnapshotStore.layerMemory()))
    const worker = yield* startWorker(context, prefix, workerOptions)
    yield* Effect.addFinalizer(() => worker.close)
    const runner = yield* Layer.build(RemoteCodeRunner.layer({ prefix })).pipe(Effect.provide(context))
    const sessions = yield* Sessions.make({
      prefix,
      harness: { tools: [add, note], codeExecution: "sandboxed", ...(policy === undefined ? {} : { policy }) },
      idleTimeout: "10 minutes"
    }).pipe(Effect.provide(Context.merge(context, runner)))
    return { prefix, context, worker: worker.worker, sessions }
  })

export const remoteExecutionConformance = (name: string, makeLayer: () => Layer.Layer<Transport.Transport, unknown>) =>
  describe(`code tools on workers over ${name}`, () => {
    it.live("a JavaScript tool runs on a worker; its package is fetched once", () =>
      Effect.gen(function*() {
        const { worker, sessions } = yield* setup(makeLayer)
        const session = sessions.get("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "double", language: "javascript", source: doubleJs }))
        assert.strictEqual(yield* Effect.promise(() => session.callTool("double", { value: 21 })), 42)
        assert.strictEqual(yield* Effect.promise(() => session.callTool("double", { value: 2 })), 4)
        assert.strictEqual(worker.fetches(), 1)
        assert.isAtLeast(worker.cached(), 1)
        track(worker)
      }).pipe(Effect.scoped), 60_000)

    it.live("a TypeScript tool on a worker composes a base tool of the session (a nested call back)", () =>
      Effect.gen(function*() {
        const { prefix, sessions, context, worker } = yield* setup(makeLayer)
        yield* Effect.promise(() => sessions.get("s1").createTool({ entrypoint: "twice", source: twiceTs }))
        const remote = yield* RemoteSession.make("s1", { prefix }).pipe(Effect.provide(context))
        assert.strictEqual(yield* RemoteSession.callTool(remote, "twice", { value: 21 }), 42)
        const profile = yield* Effect.promise(() => sessions.get("s1").profile("add"))
        assert.strictEqual(profile.calls.at(-1)?.caller_tool_name, "twice")
        track(worker)
      }).pipe(Effect.scoped), 60_000)

    it.live("a call past its deadline fails with a typed error and its child is killed", () =>
      Effect.gen(function*() {
        const { sessions, worker } = yield* setup(makeLayer, {
          allowedLanguages: ["JavaScript"],
          requireRootCoordinator: false,
          shortInvocationTimeoutSeconds: 1
        })
        const session = sessions.get("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "hang", language: "javascript", source: hangJs }))
        const before = noted.length
        const pending = session.callTool("hang", {})
        pending.catch(() => {})
        yield* waitUntil("the tool runs", () => noted.length > before && worker.running() === 1)
        const during = worker.processes()
        track(worker)
        const error = yield* rejection(pending)
        assert.strictEqual((error as { _tag?: string })._tag, "ToolTimeout", String(error))
        yield* waitUntil("the worker forgets the invocation", () => worker.running() === 0)
        yield* waitUntil("the invocation's child is gone", () => during.some((pid) => !alive(pid)))
      }).pipe(Effect.scoped), 60_000)

    it.live("cancel crosses to the worker: the record says cancelled, the child's process group is gone", () =>
      Effect.gen(function*() {
        const { prefix, sessions, context, worker } = yield* setup(makeLayer)
        yield* Effect.promise(() => sessions.get("s1").createTool({ entrypoint: "hang", language: "javascript", source: hangJs }))
        const before = noted.length
        const remote = yield* RemoteSession.make("s1", { prefix }).pipe(Effect.provide(context))
        const controller = new AbortController()
        const pending = remote.callTool("hang", {}, { signal: controller.signal })
        pending.catch(() => {})
        yield* waitUntil("the tool runs", () => noted.length > before && worker.running() === 1)
        const during = worker.processes()
        track(worker)
        controller.abort()
        const error = yield* rejection(pending)
        assert.strictEqual((error as { _tag?: string })._tag, "ToolCancelled")
        yield* waitUntil("the worker forgets the invocation", () => worker.running() === 0)
        yield* waitUntil("the invocation's child is gone", () => during.some((pid) => !alive(pid)))
        yield* Effect.promise(async () => {
          const deadline = Date.now() + 5_000
          for (;;) {
            const profile = await sessions.get("s1").profile("hang")
            if (profile.calls.at(-1)?.status === "cancelled") return
            if (Date.now() > deadline) throw new Error(`no cancelled record: ${JSON.stringify(profile.calls)}`)
            await new Promise((resolve) => setTimeout(resolve, 10))
          }
        })
      }).pipe(Effect.scoped), 60_000)

    it.live("two sessions with the same tool and version do not share module state", () =>
      Effect.gen(function*() {
        const { sessions, worker } = yield* setup(makeLayer)
        const a = sessions.get("a")
        const b = sessions.get("b")
        yield* Effect.promise(() => a.createTool({ entrypoint: "counter", language: "javascript", source: counterJs }))
        yield* Effect.promise(() => b.createTool({ entrypoint: "counter", language: "javascript", source: counterJs }))
        assert.strictEqual(yield* Effect.promise(() => a.callTool("counter", {})), 1)
        assert.strictEqual(yield* Effect.promise(() => a.callTool("counter", {})), 2)
        assert.strictEqual(yield* Effect.promise(() => b.callTool("counter", {})), 1)
        assert.strictEqual(yield* Effect.promise(() => a.callTool("counter", {})), 3)
        track(worker)
      }).pipe(Effect.scoped), 60_000)

    it.live("a worker closed mid-invocation fails it explicitly; the next call runs on another worker", () =>
      Effect.gen(function*() {
        const prefix = freshPrefix()
        const context = yield* Layer.build(Layer.merge(makeLayer(), SnapshotStore.layerMemory()))
        const first = yield* startWorker(context, prefix, { graceMs: 200 })
        const runner = yield* Layer.build(RemoteCodeRunner.layer({ prefix })).pipe(Effect.provide(context))
        const sessions = yield* Sessions.make({ prefix, harness: { tools: [add, note], codeExecution: "sandboxed" }, idleTimeout: "10 minutes" })
          .pipe(Effect.provide(Context.merge(context, runner)))
        const session = sessions.get("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "slow", language: "javascript", source: slowJs }))
        const before = noted.length
        const pending = session.callTool("slow", { ms: 60_000 })
        pending.catch(() => {})
        yield* waitUntil("the tool runs on the first worker", () => noted.length > before && first.worker.running() === 1)
        const second = yield* startWorker(context, prefix)
        yield* Effect.addFinalizer(() => second.close)
        const during = first.worker.processes()
        track(first.worker)
        yield* first.close
        const error = yield* rejection(pending)
        assert.strictEqual((error as { _tag?: string })._tag, "TransportError", String(error))
        assert.strictEqual((error as { reason?: string }).reason, "Closed")
        yield* waitUntil("the closed worker's children are gone", () => during.every((pid) => !alive(pid)), 5_000)
        assert.strictEqual(yield* Effect.promise(() => session.callTool("slow", { ms: 1 })), "slow")
        assert.strictEqual(second.worker.fetches(), 1)
        track(second.worker)
      }).pipe(Effect.scoped), 60_000)

    it.live("no child process is left behind once the workers are closed", () =>
      Effect.gen(function*() {
        assert.isAbove(seen.size, 0)
        yield* waitUntil("every child is gone", () => [...seen].every((pid) => !alive(pid)), 10_000)
      }), 30_000)
  })
