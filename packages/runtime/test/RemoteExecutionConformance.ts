/**
 * Code tools of a session run on workers (`RemoteCodeRunner` in the session's host, `Worker`s on
 * the same transport), one suite for every transport layer: a remote JavaScript call, a
 * TypeScript tool on a worker composing a base tool of the session, a deadline, cancel across,
 * module state per session, a worker closed mid-invocation, and no child left behind.
 */
import { JitHarnessSnapshot, tool } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Coordinator from "../src/Coordinator.js"
import * as ExecutionProfile from "../src/ExecutionProfile.js"
import * as Ids from "../src/Ids.js"
import * as Ledger from "../src/Ledger.js"
import * as RemoteCodeRunner from "../src/RemoteCodeRunner.js"
import * as RemoteSession from "../src/RemoteSession.js"
import * as Sessions from "../src/Sessions.js"
import * as SnapshotStore from "../src/SnapshotStore.js"
import * as Subject from "../src/Subject.js"
import * as Envelope from "../src/Envelope.js"
import type * as Transport from "../src/Transport.js"
import * as TransportTag from "../src/Transport.js"
import * as Worker from "../src/Worker.js"
import { add } from "../../core/test/fixtures.js"

let namespaces = 0
const freshNamespace = () => Ids.namespace(`work${++namespaces}_${Math.random().toString(36).slice(2, 8)}`)

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

/** The host profiles of the suite's coordinators. */
const languages = { allowedLanguages: ["Python", "JavaScript", "Bash", "C#"] } as const
export const profiles = ExecutionProfile.all([
  { name: "standard", policy: languages },
  { name: "gpu", location: "gpu", policy: languages },
  { name: "pinned", sandboxNodeId: "node-a", policy: languages },
  { name: "keyed", credentialName: "SERVICE_TOKEN", policy: languages }
])

/**
 * A transport, the namespace's coordinator, a host of sessions whose code runs remotely (each
 * session admitted under `admission`, by default profile `standard` with consent), and one worker
 * that checks every lease.
 */
export const setup = (
  makeLayer: () => Layer.Layer<Transport.Transport, unknown>,
  policy?: Record<string, unknown>,
  workerOptions: Partial<Worker.WorkerOptions> = {},
  admission: Sessions.SessionAdmission | null = { profile: "standard", deploymentConsent: true }
) =>
  Effect.gen(function*() {
    const namespace = freshNamespace()
    const prefix = Subject.prefix(namespace)
    const context = yield* Layer.build(Layer.mergeAll(makeLayer(), SnapshotStore.layerMemory(), Ledger.layerMemory))
    yield* Coordinator.make({ namespace, profiles }).pipe(Effect.provide(context))
    const worker = yield* startWorker(context, prefix, workerOptions)
    yield* Effect.addFinalizer(() => worker.close)
    const runner = yield* Layer.build(RemoteCodeRunner.layer({ prefix })).pipe(Effect.provide(context))
    const sessions = yield* Sessions.make({
      prefix,
      harness: {
        tools: [add, note],
        codeExecution: "sandboxed",
        // an admitted session asks for the languages the suite uses (JT-POL's default is Python alone)
        ...(policy === undefined ? admission === null ? {} : { policy: languages } : { policy })
      },
      idleTimeout: "10 minutes",
      ...(admission === null ? {} : { admission })
    }).pipe(Effect.provide(Context.merge(context, runner)))
    const leases = sessions.leases
    return { prefix, namespace, context, worker: worker.worker, sessions, leases }
  })

const environmentJs = `export const environment = tool({ description: "Reads two variables.", guidelines: "Use in tests." }, async () =>
  ({ token: process.env.SERVICE_TOKEN ?? null, other: process.env.OTHER_TOKEN ?? null }))`

const environmentPy = `import os
from jitbox import tool

@tool(description="Reads a variable.", guidelines="Use in tests.")
def environment_py() -> str:
    return os.environ.get("SERVICE_TOKEN", "absent")
`

/** Tool `link<i>` answers its name followed by what `link<i+1>` answers; the last answers its name. */
const chain = (length: number) =>
  Array.from({ length }, (_, i) => ({
    entrypoint: `link${i}`,
    language: "javascript" as const,
    source: `export const link${i} = tool({ description: "A link of a chain.", guidelines: "Use in tests." }, async () =>
  "${i}" + (${i + 1 < length ? `await harness.callTool("link${i + 1}", {})` : `""`}))`
  })).reverse()

/** Answers a string of `bytes` characters: its JSON is two bytes longer. */
const bigJs = `export const big = tool({ description: "Answers a long string.", guidelines: "Use in tests." }, async ({ bytes }) => "z".repeat(bytes))`

const pauseJs = `export const pause = tool({ description: "Notes, pauses, notes.", guidelines: "Use in tests." }, async () => {
  await harness.callTool("note", { phase: "in" })
  await new Promise((resolve) => setTimeout(resolve, 50))
  await harness.callTool("note", { phase: "out" })
  return "done"
})`

/** Eight times a value through the Python tool `quad_py`; spins instead while its argument says `forever` (noting first). */
const octoCs = `using System.Collections.Generic;
using Jitbox;
public static class Octo {
  public const string Description = "Eight times the value, through quad_py.";
  public const string Guidelines = "Use in tests.";
  public static string Run(string inputJson) {
    var args = (Dictionary<string, object>)Json.Parse(inputJson);
    if (args.ContainsKey("forever")) { Harness.CallTool("note", "{}"); while (true) { } }
    return Json.Write(2 * (long)Json.Parse(Harness.CallTool("quad_py", Json.Write(args))));
  }
}
`

const quadPy = `from jitbox import tool

@tool(description="Four times the value.", guidelines="Use in tests.")
def quad_py(value: int) -> int:
    twice = harness.call_tool_sync("add", left=value, right=value)
    return harness.call_tool_sync("add", left=twice, right=twice)
`

/** An `activate` sent to a worker as anyone could send it, with the lease it claims; answers the error's tag and reason. */
const rawActivate = (context: Context.Context<Transport.Transport>, subject: Subject.Subject, sessionId: string, leaseId?: string, language = "javascript") =>
  Effect.promise(async () => {
    const transport = Context.get(context, TransportTag.Transport)
    const reply = await transport.request(subject, Envelope.encode("activate", {
      session_id: sessionId,
      version_id: "v_forged",
      tool_name: "double",
      language,
      entrypoint: "double",
      entry_file: "double.ts",
      capability: "AAAAAAAAAAAAAAAAAAAAAA",
      ...(leaseId === undefined ? {} : { lease_id: leaseId })
    }), { timeoutMs: 10_000 })
    const parsed = JSON.parse(new TextDecoder().decode(reply.data)) as { kind: string; error?: { _tag: string; reason: string; detail: string } }
    return parsed.error
  })

/** A request sent as anyone could send it; answers the reply's error (tag, reason, detail), or `undefined` for an `ok`. */
const rawRequest = (context: Context.Context<Transport.Transport>, subject: Subject.Subject, kind: string, fields: Record<string, unknown>) =>
  Effect.promise(async () => {
    const reply = await Context.get(context, TransportTag.Transport).request(subject, Envelope.encode(kind, fields), { timeoutMs: 10_000 })
    const parsed = JSON.parse(new TextDecoder().decode(reply.data)) as { kind: string; error?: { _tag: string; reason: string; detail: string } }
    return parsed.error
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

    it.live("a worker's result over 256 KiB fails the call SandboxError OutputTooLarge, recorded as the tool's failure; a caller across the wire gets the same", () =>
      Effect.gen(function*() {
        const { prefix, sessions, context, worker } = yield* setup(makeLayer)
        const session = sessions.get("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "big", language: "javascript", source: bigJs }))
        assert.strictEqual((yield* Effect.promise(() => session.callTool("big", { bytes: 262_144 - 2 }))) as string, "z".repeat(262_144 - 2))
        const remote = yield* RemoteSession.make("s1", { prefix }).pipe(Effect.provide(context))
        for (const caller of [() => session.callTool("big", { bytes: 262_144 }), () => remote.callTool("big", { bytes: 262_144 })]) {
          const error = (yield* rejection(caller())) as { _tag?: string; reason?: string; detail?: string }
          assert.strictEqual(error._tag, "SandboxError", String(error))
          assert.strictEqual(error.reason, "OutputTooLarge")
          assert.include(error.detail, "262144 bytes")
        }
        const errors = yield* Effect.promise(() => session.toolErrors("big"))
        assert.strictEqual(errors.errors[0]?.error_type, "SandboxError")
        assert.strictEqual(errors.errors[0]?.occurrences, 2)
        track(worker)
      }).pipe(Effect.scoped), 60_000)

    it.live("a call past its deadline fails with a typed error and its child is killed", () =>
      Effect.gen(function*() {
        const { sessions, worker } = yield* setup(makeLayer, {
          allowedLanguages: ["JavaScript"],
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

    it.live("a C# tool on a worker composes a Python tool that composes a base tool of the session; cancel kills its child; the session is stored and restored with it", () =>
      Effect.gen(function*() {
        const { sessions, worker } = yield* setup(makeLayer)
        const session = sessions.get("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "quad_py", language: "python", source: quadPy }))
        yield* Effect.promise(() => session.createTool({ entrypoint: "Octo", name: "octo", language: "csharp", source: octoCs }))
        assert.strictEqual(yield* Effect.promise(() => session.callTool("octo", { value: 5 })), 40)
        const profile = yield* Effect.promise(() => session.profile("quad_py"))
        assert.strictEqual(profile.calls.at(-1)?.caller_tool_name, "octo")
        const before = noted.length
        const controller = new AbortController()
        const pending = session.callTool("octo", { value: 1, forever: true }, { signal: controller.signal })
        pending.catch(() => {})
        yield* waitUntil("the tool runs", () => noted.length > before && worker.running() === 1)
        const during = worker.processes()
        track(worker)
        controller.abort()
        assert.strictEqual(((yield* rejection(pending)) as { _tag?: string })._tag, "ToolCancelled")
        yield* waitUntil("the invocation's child is gone", () => during.some((pid) => !alive(pid)))
        assert.strictEqual(yield* Effect.promise(() => session.callTool("octo", { value: 2 })), 16)
        // stored and released, then restored from its snapshot by the next call: compiled again on the worker
        const stored = yield* Effect.promise(() => session.snapshot())
        assert.include(stored.tools.find((t) => t.name === "octo"), { language: "csharp", entrypoint: "Octo" })
        yield* Effect.promise(() => sessions.forget("s1"))
        assert.strictEqual(yield* Effect.promise(() => sessions.get("s1").callTool("octo", { value: 3 })), 24)
        assert.deepStrictEqual(yield* Effect.promise(() => sessions.get("s1").snapshot()), stored)
        track(worker)
      }).pipe(Effect.scoped), 60_000)

    it.live("a package is fetched only with the capability of its version: a stolen version id gets no source", () =>
      Effect.gen(function*() {
        const { context, prefix, sessions } = yield* setup(makeLayer)
        const session = sessions.get("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "double", language: "javascript", source: doubleJs }))
        const record = (yield* Effect.promise(() => session.snapshot())).tools.find((t) => t.name === "double")!
        const versionId = JitHarnessSnapshot.codeVersionId(record)
        const error = yield* rawRequest(context, Subject.sessionPackage(prefix, Ids.sessionId("s1")), "package", {
          version_id: versionId,
          chunk: 0,
          capability: "AAAAAAAAAAAAAAAAAAAAAA"
        })
        assert.strictEqual(error?._tag, "TransportError", JSON.stringify(error))
        assert.strictEqual(error?.reason, "InvalidArgument")
        assert.strictEqual(yield* Effect.promise(() => session.callTool("double", { value: 3 })), 6, "the session keeps working")
      }).pipe(Effect.scoped), 60_000)

    it.live("a nested call acts only as the invocation it was sent with: a running call's id read from a heartbeat changes nothing, and a cancel without its capability stops nothing", () =>
      Effect.gen(function*() {
        const { context, prefix, sessions, worker } = yield* setup(makeLayer, undefined, { heartbeatMs: 50 })
        const session = sessions.get("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "hang", language: "javascript", source: hangJs }))
        const sid = Ids.sessionId("s1")
        const transport = Context.get(context, TransportTag.Transport)
        const heard: Array<string> = []
        const beats = yield* transport.subscribe(Subject.sessionHeartbeat(prefix, sid))
        yield* Effect.forkScoped(Stream.runForEach(beats, (message) =>
          Effect.sync(() => heard.push(...(JSON.parse(new TextDecoder().decode(message.data)) as { call_ids: Array<string> }).call_ids))))
        const controller = new AbortController()
        const pending = session.callTool("hang", {}, { signal: controller.signal })
        pending.catch(() => {})
        yield* waitUntil("a heartbeat names the running call", () => heard.length > 0 && worker.running() === 1)
        const victim = heard[0]!
        const before = yield* Effect.promise(() => session.snapshot())
        for (const [name, args] of [["update_tool", { name: "hang", source: doubleJs }], ["create_tool", { entrypoint: "double", language: "javascript", source: doubleJs }]] as const) {
          const error = yield* rawRequest(context, Subject.sessionNested(prefix, sid), "nested", {
            parent_call_id: victim,
            capability: "AAAAAAAAAAAAAAAAAAAAAA",
            name,
            args
          })
          assert.strictEqual(error?._tag, "ToolRejected", JSON.stringify(error))
          assert.strictEqual(error?.reason, "NoActiveInvocation")
        }
        assert.deepStrictEqual(yield* Effect.promise(() => session.snapshot()), before, "no change was made")
        transport.publish(Subject.workerCancel(prefix), Envelope.encode("cancel", { session_id: "s1", call_id: victim, capability: "AAAAAAAAAAAAAAAAAAAAAA" }))
        yield* Effect.sleep("300 millis")
        assert.strictEqual(worker.running(), 1, "a cancel without the invocation's capability stops nothing")
        controller.abort()
        assert.strictEqual(((yield* rejection(pending)) as { _tag?: string })._tag, "ToolCancelled")
        yield* waitUntil("the session's own cancel stops it", () => worker.running() === 0)
        track(worker)
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
        // without a coordinator: the workers take sessions nobody admitted
        const prefix = Subject.prefix(freshNamespace())
        const context = yield* Layer.build(Layer.merge(makeLayer(), SnapshotStore.layerMemory()))
        const first = yield* startWorker(context, prefix, { graceMs: 200, requireAdmission: false })
        const runner = yield* Layer.build(RemoteCodeRunner.layer({ prefix })).pipe(Effect.provide(context))
        const sessions = yield* Sessions.make({ prefix, harness: { tools: [add, note], codeExecution: "sandboxed" }, idleTimeout: "10 minutes" })
          .pipe(Effect.provide(Context.merge(context, runner)))
        const session = sessions.get("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "slow", language: "javascript", source: slowJs }))
        const before = noted.length
        const pending = session.callTool("slow", { ms: 60_000 })
        pending.catch(() => {})
        yield* waitUntil("the tool runs on the first worker", () => noted.length > before && first.worker.running() === 1)
        const second = yield* startWorker(context, prefix, { requireAdmission: false })
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

    it.live("a worker runs code only for a lease the coordinator confirms: none, a forged one, another session's or another language's subject is refused", () =>
      Effect.gen(function*() {
        const { context, leases, prefix, sessions, worker } = yield* setup(makeLayer)
        const session = sessions.get("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "double", language: "javascript", source: doubleJs }))
        assert.strictEqual(yield* Effect.promise(() => session.callTool("double", { value: 4 })), 8)
        const leaseId = leases.get("s1")?.leaseId()
        assert.isString(leaseId)
        const subject = Subject.workerInvoke(prefix, Ids.poolName("default"), "javascript")
        for (const [sessionId, lease] of [["s1", undefined], ["s1", "lease_forged"], ["s2", leaseId]] as const) {
          const error = yield* rawActivate(context, subject, sessionId, lease)
          assert.strictEqual(error?._tag, "PolicyViolation", `${sessionId} with ${lease}: ${JSON.stringify(error)}`)
          assert.strictEqual(error?.reason, "NotAdmitted")
        }
        const otherLanguage = yield* rawActivate(context, subject, "s1", leaseId, "python")
        assert.strictEqual(otherLanguage?.reason, "NotAdmitted", JSON.stringify(otherLanguage))
        assert.match(otherLanguage?.detail ?? "", /this subject serves javascript, and the request names python/)
        assert.strictEqual(worker.fetches(), 1, "nothing was fetched for the refused requests")
        track(worker)
      }).pipe(Effect.scoped), 60_000)

    it.live("a session admitted without deploymentConsent runs no code (JT-CFG-05)", () =>
      Effect.gen(function*() {
        const { sessions, worker } = yield* setup(makeLayer, undefined, {}, { profile: "standard" })
        const error = yield* rejection(sessions.get("s1").createTool({ entrypoint: "double", language: "javascript", source: doubleJs }))
        assert.strictEqual((error as { _tag?: string })._tag, "PolicyViolation", String(error))
        assert.strictEqual((error as { reason?: string }).reason, "ConsentRequired")
        assert.strictEqual(worker.fetches(), 0)
      }).pipe(Effect.scoped), 60_000)

    it.live("requireRootCoordinator: a session no coordinator admitted runs no code; with it false, it does", () =>
      Effect.gen(function*() {
        const required = yield* setup(makeLayer, { allowedLanguages: ["JavaScript"] }, {}, null)
        const error = yield* rejection(required.sessions.get("s1").createTool({ entrypoint: "double", language: "javascript", source: doubleJs }))
        assert.strictEqual((error as { _tag?: string })._tag, "PolicyViolation", String(error))
        assert.strictEqual((error as { reason?: string }).reason, "RootCoordinatorRequired")
        const free = yield* setup(makeLayer, { allowedLanguages: ["JavaScript"], requireRootCoordinator: false }, { requireAdmission: false }, null)
        const session = free.sessions.get("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "double", language: "javascript", source: doubleJs }))
        assert.strictEqual(yield* Effect.promise(() => session.callTool("double", { value: 5 })), 10)
        track(free.worker)
      }).pipe(Effect.scoped), 60_000)

    it.live("a profile's location selects the worker pool; a worker of another pool refuses its lease", () =>
      Effect.gen(function*() {
        const { context, leases, prefix, sessions, worker } = yield* setup(makeLayer, undefined, {}, { profile: "gpu", deploymentConsent: true })
        const gpu = yield* startWorker(context, prefix, { pool: "gpu" })
        yield* Effect.addFinalizer(() => gpu.close)
        const session = sessions.get("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "double", language: "javascript", source: doubleJs }))
        assert.strictEqual(yield* Effect.promise(() => session.callTool("double", { value: 6 })), 12)
        assert.strictEqual(gpu.worker.fetches(), 1)
        assert.strictEqual(worker.fetches(), 0)
        const error = yield* rawActivate(context, Subject.workerInvoke(prefix, Ids.poolName("default"), "javascript"), "s1", leases.get("s1")?.leaseId())
        assert.strictEqual(error?.reason, "NotAdmitted", JSON.stringify(error))
        assert.match(error?.detail ?? "", /pool 'gpu'/)
        track(gpu.worker)
      }).pipe(Effect.scoped), 60_000)

    it.live("a profile's credential reaches its sessions' children as a variable of its name, and only those", () =>
      Effect.gen(function*() {
        const credentials = { SERVICE_TOKEN: "tok-1", OTHER_TOKEN: "tok-2" }
        const keyed = yield* setup(makeLayer, undefined, { credentials }, { profile: "keyed", deploymentConsent: true })
        const session = keyed.sessions.get("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "environment", language: "javascript", source: environmentJs }))
        yield* Effect.promise(() => session.createTool({ entrypoint: "environment_py", language: "python", source: environmentPy }))
        assert.deepStrictEqual(yield* Effect.promise(() => session.callTool("environment", {})), { token: "tok-1", other: null })
        assert.strictEqual(yield* Effect.promise(() => session.callTool("environment_py", {})), "tok-1")
        track(keyed.worker)

        const standard = yield* setup(makeLayer, undefined, { credentials }, { profile: "standard", deploymentConsent: true })
        const plain = standard.sessions.get("s1")
        yield* Effect.promise(() => plain.createTool({ entrypoint: "environment", language: "javascript", source: environmentJs }))
        assert.deepStrictEqual(yield* Effect.promise(() => plain.callTool("environment", {})), { token: null, other: null })
        track(standard.worker)
      }).pipe(Effect.scoped), 60_000)

    it.live("a worker without the credential a profile names refuses its sessions' code, naming it", () =>
      Effect.gen(function*() {
        const { sessions, worker } = yield* setup(makeLayer, undefined, { credentials: { OTHER_TOKEN: "tok-2" } }, { profile: "keyed", deploymentConsent: true })
        const error = yield* rejection(sessions.get("s1").createTool({ entrypoint: "environment", language: "javascript", source: environmentJs }))
        assert.strictEqual((error as { _tag?: string })._tag, "PolicyViolation", String(error))
        assert.strictEqual((error as { reason?: string }).reason, "NotAdmitted")
        assert.match((error as { detail?: string }).detail ?? "", /needs the credential 'SERVICE_TOKEN', which this worker does not hold/)
        assert.notInclude(String((error as { detail?: string }).detail), "tok-2")
        assert.strictEqual(worker.fetches(), 0)
      }).pipe(Effect.scoped), 60_000)

    it.live("a composition deeper than the session's slots and the worker's concurrency runs: nested calls run on their caller's slot", () =>
      Effect.gen(function*() {
        const { sessions, worker } = yield* setup(makeLayer, { allowedLanguages: ["JavaScript"], maximumConcurrentInvocations: 1, shortInvocationTimeoutSeconds: 30 }, { concurrency: 1 })
        const session = sessions.get("s1")
        for (const link of chain(6)) yield* Effect.promise(() => session.createTool(link))
        const results = yield* Effect.promise(() => Promise.all([session.callTool("link0", {}), session.callTool("link0", {})]))
        assert.deepStrictEqual(results, ["012345", "012345"])
        track(worker)
      }).pipe(Effect.scoped), 60_000)

    it.live("a pinned worker runs a composition of its profile's tools: nested calls do not wait behind their caller", () =>
      Effect.gen(function*() {
        const { sessions, worker } = yield* setup(makeLayer, undefined, { nodeId: "node-a" }, { profile: "pinned", deploymentConsent: true })
        const session = sessions.get("s1")
        for (const link of chain(3)) yield* Effect.promise(() => session.createTool(link))
        assert.strictEqual(yield* Effect.promise(() => session.callTool("link0", {})), "012")
        track(worker)
      }).pipe(Effect.scoped), 60_000)

    it.live("a pinned profile (sandboxNodeId) runs on its named worker, one invocation at a time", () =>
      Effect.gen(function*() {
        const { sessions, worker } = yield* setup(makeLayer, undefined, { nodeId: "node-a", concurrency: 4 }, { profile: "pinned", deploymentConsent: true })
        const session = sessions.get("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "pause", language: "javascript", source: pauseJs }))
        const before = noted.length
        const results = yield* Effect.promise(() => Promise.all([1, 2, 3].map(() => session.callTool("pause", {}))))
        assert.deepStrictEqual(results, ["done", "done", "done"])
        const phases = noted.slice(before).map((entry) => (entry as { phase: string }).phase)
        assert.deepStrictEqual(phases, ["in", "out", "in", "out", "in", "out"], "the pinned worker never ran two at once")
        track(worker)
      }).pipe(Effect.scoped), 60_000)

    it.live("no child process is left behind once the workers are closed", () =>
      Effect.gen(function*() {
        assert.isAbove(seen.size, 0)
        yield* waitUntil("every child is gone", () => [...seen].every((pid) => !alive(pid)), 10_000)
      }), 30_000)
  })
