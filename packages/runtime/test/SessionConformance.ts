/**
 * What a session actor does over a transport, as one suite: call it with a name and a factory of
 * the transport layer, once per layer (SessionActor.test.ts on the in-memory transport,
 * packages/nats/test/NatsSessionActor.test.ts on a real nats-server). Each test builds its own
 * transport, store and hosts in a namespace of its own, so tests share nothing.
 *
 * The session's host and the remote client share one transport (one connection): the in-memory
 * layer is one bus per build, and on NATS every message still goes through the server.
 */
import { HarnessError, JitHarnessSnapshot, tool } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Envelope from "../src/Envelope.js"
import * as Ids from "../src/Ids.js"
import * as RemoteSession from "../src/RemoteSession.js"
import * as Sessions from "../src/Sessions.js"
import * as SnapshotStore from "../src/SnapshotStore.js"
import * as Subject from "../src/Subject.js"
import * as Transport from "../src/Transport.js"
import { isProtocolError, type ProtocolError } from "../src/ProtocolError.js"
import { isTransportError, type TransportError } from "../src/TransportError.js"
import * as WireError from "../src/WireError.js"
import { twiceSource } from "../../core/test/fixtures.js"

let namespaces = 0
const freshPrefix = () => Subject.prefix(Ids.namespace(`sess${++namespaces}_${Math.random().toString(36).slice(2, 8)}`))

const intPair = {
  type: "object",
  properties: { left: { type: "integer" }, right: { type: "integer" } },
  required: ["left", "right"],
  additionalProperties: false
} as const

const add = tool(
  { name: "add", description: "Add two integers.", guidelines: "Use for integer addition.", parameters: intPair },
  ({ left, right }: { left: number; right: number }) => left + right
)

const explode = tool({ name: "explode", description: "Throws a RangeError.", guidelines: "Use in tests." }, () => {
  throw new RangeError("too far")
})

const echo = tool(
  { name: "echo", description: "Answers its text.", guidelines: "Use in tests.", parameters: { type: "object", properties: { text: { type: "string" } } } },
  ({ text }: { text?: string }) => text ?? null
)

const big = tool({ name: "big", description: "Answers 300,000 characters.", guidelines: "Use in tests." }, () => "x".repeat(300_000))

const madeSource = `export const made = tool({ description: "Made inside a change.", guidelines: "Use in tests." }, async () => "made")`

/** A tool whose example creates another tool: a change made inside a change. */
const makerSource = `
export const maker = tool({ description: "Makes a tool.", guidelines: "Use in tests." }, async () => {
  await harness.callTool("create_tool", { entrypoint: "made", source: ${JSON.stringify(madeSource)} })
  return "ok"
})
`

const notes = "# Notes\n\nRead me."

/** A promise settled from outside. */
const deferred = <A = void>() => {
  let resolve!: (value: A) => void
  const promise = new Promise<A>((res) => {
    resolve = res
  })
  return { promise, resolve }
}

/** What a promise rejects with; fails the test when it resolves. */
const rejection = (promise: Promise<unknown>): Effect.Effect<unknown> =>
  Effect.promise(() =>
    promise.then(
      (value) => {
        throw new Error(`expected a rejection, got ${JSON.stringify(value)}`)
      },
      (error: unknown) => error
    )
  )

/** Polls `check` on real time (never the TestClock) until it holds; dies after `ms`. */
const waitUntil = (what: string, check: () => boolean, ms = 5_000): Effect.Effect<void> =>
  Effect.promise(async () => {
    const deadline = Date.now() + ms
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  })

/** A memory store whose saves can be held, and which counts them. */
const gatedStore = () => {
  const inner = SnapshotStore.makeMemory()
  let gate: Promise<void> | undefined
  const state = { saves: 0, pendingSaves: 0 }
  const store: SnapshotStore.SnapshotStoreShape = {
    load: inner.load,
    remove: inner.remove,
    save: (sessionId, snapshot) =>
      Effect.gen(function*() {
        state.pendingSaves++
        if (gate !== undefined) {
          const held = gate
          yield* Effect.promise(() => held)
        }
        state.pendingSaves--
        yield* inner.save(sessionId, snapshot)
        state.saves++
      })
  }
  return {
    store,
    state,
    hold: () => {
      const opened = deferred()
      gate = opened.promise
      return () => {
        gate = undefined
        opened.resolve()
      }
    }
  }
}

type World = {
  readonly prefix: Subject.Prefix
  readonly transport: Transport.TransportShape
  readonly context: Context.Context<Transport.Transport | SnapshotStore.SnapshotStore>
  /** A host in its own scope, closed by `close`, as a process that dies would be. */
  readonly host: (
    options?: Partial<Sessions.SessionsOptions>
  ) => Effect.Effect<{ readonly host: Sessions.SessionsShape; readonly close: Effect.Effect<void> }, TransportError | HarnessError.ConfigError, Scope.Scope>
  readonly remote: (sessionId: string, timeoutMs?: number) => RemoteSession.RemoteSession
}

export const sessionConformance = (name: string, makeLayer: () => Layer.Layer<Transport.Transport, TransportError>) =>
  describe(`Session actors: ${name}`, () => {
    const world = (store: SnapshotStore.SnapshotStoreShape = SnapshotStore.makeMemory(), tools: ReadonlyArray<ReturnType<typeof tool>> = []) =>
      Effect.gen(function*() {
        const transportContext = yield* Layer.build(makeLayer())
        const context = Context.add(transportContext, SnapshotStore.SnapshotStore, store)
        const transport = Context.get(transportContext, Transport.Transport)
        const prefix = freshPrefix()
        const host = (options: Partial<Sessions.SessionsOptions> = {}) =>
          Effect.gen(function*() {
            const scope = yield* Scope.make()
            const built = yield* Sessions.make({ prefix, harness: { tools: [add, explode, echo, big, ...tools] }, ...options }).pipe(
              Scope.extend(scope),
              Effect.provide(context),
              Effect.tapErrorCause(() => Scope.close(scope, Exit.void))
            )
            yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
            return { host: built, close: Scope.close(scope, Exit.void) }
          })
        const remote = (sessionId: string, timeoutMs = 10_000) => new RemoteSession.RemoteSession(transport, sessionId, { prefix, timeoutMs })
        return { prefix, transport, context, host, remote } satisfies World
      })

    it.scopedLive("a remote call runs a base tool and a code tool; the session records both", () =>
      Effect.gen(function*() {
        const w = yield* world()
        yield* w.host()
        const session = w.remote("s1")
        assert.deepStrictEqual(yield* Effect.promise(() => session.createTool({ entrypoint: "twice", source: twiceSource })), {
          name: "twice",
          status: "loaded"
        })
        assert.strictEqual(yield* Effect.promise(() => session.callTool("add", { left: 1, right: 2 })), 3)
        assert.strictEqual(yield* Effect.promise(() => session.callTool("twice", { value: 21 }, { callId: "toolu_1" })), 42)
        assert.strictEqual(yield* RemoteSession.callTool(session, "twice", { value: 2 }), 4)
        assert.strictEqual(yield* Effect.promise(() => session.callTool("echo", {})), null)

        const profile = yield* Effect.promise(() => session.profile("twice"))
        assert.strictEqual(profile.calls.length, 2)
        assert.deepInclude(profile.calls.map((call) => call.call_id), "toolu_1")
        assert.isTrue(profile.calls.every((call) => call.status === "completed"))
        const catalog = yield* Effect.promise(() => session.listTools())
        assert.deepStrictEqual(catalog.map((entry) => entry.name).sort(), ["add", "big", "echo", "explode", "twice"])
      }))

    it.scopedLive("definitions cross the wire as the harness answers them, for each protocol", () =>
      Effect.gen(function*() {
        const w = yield* world()
        const { host } = yield* w.host()
        const session = w.remote("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "twice", source: twiceSource }))
        const harness = (yield* host.activate(Ids.sessionId("s1"))).harness
        for (const protocol of ["responses", "chat_completions", "anthropic_messages"] as const) {
          const remote = yield* Effect.promise(() => session.definitions(protocol))
          assert.deepStrictEqual(remote, harness.definitions(protocol))
        }
        const names = (yield* RemoteSession.definitions(session, "chat_completions")).tools.map((tool) => tool.name)
        assert.includeMembers(names, ["add", "twice", "create_tool"])
      }))

    it.scopedLive("typed errors cross the wire as the classes an in-process caller gets", () =>
      Effect.gen(function*() {
        const w = yield* world()
        yield* w.host()
        const session = w.remote("s1")

        const notFound = yield* rejection(session.callTool("nope"))
        assert.instanceOf(notFound, HarnessError.ToolNotFound)
        assert.strictEqual((notFound as HarnessError.ToolNotFound).name, "nope")
        const misspelt = yield* rejection(session.callTool("ad", { left: 1, right: 2 }))
        assert.deepStrictEqual((misspelt as HarnessError.ToolNotFound).suggestions, ["add"])
        assert.include((misspelt as Error).message, "did you mean 'add'?")

        const invalid = yield* rejection(session.callTool("add", { left: "one", right: 2 }))
        assert.instanceOf(invalid, HarnessError.ValidationError)
        assert.include((invalid as HarnessError.ValidationError).issues, "left")

        const thrown = yield* rejection(session.callTool("explode"))
        assert.instanceOf(thrown, HarnessError.ToolFailure)
        assert.strictEqual((thrown as Error).name, "RangeError")
        assert.strictEqual((thrown as Error).message, "too far")
        assert.strictEqual((thrown as HarnessError.ToolFailure).toolName, "explode")

        const conflict = yield* rejection(session.createTool({ entrypoint: "add", source: "export const add = 1" }))
        assert.instanceOf(conflict, HarnessError.NameConflict)
        assert.strictEqual((conflict as HarnessError.NameConflict).reason, "BaseTool")

        const badRequest = yield* rejection(session.createTool({ source: twiceSource } as never))
        assert.instanceOf(badRequest, HarnessError.InvalidToolRequest)

        const outOfRange = yield* rejection(session.profile(undefined, { limit: 0 }))
        assert.instanceOf(outOfRange, HarnessError.InvalidToolRequest)

        // The Effect API: the same errors in the typed channel.
        const flipped = yield* Effect.flip(RemoteSession.callTool(session, "explode"))
        assert.strictEqual(flipped._tag, "ToolFailure")
        assert.strictEqual((yield* Effect.flip(RemoteSession.callTool(session, "nope")))._tag, "ToolNotFound")
        // The operations derived from the protocol table, as Effects and as Promises.
        assert.strictEqual((yield* Effect.flip(RemoteSession.unloadTool(session, "nope")))._tag, "ToolNotFound")
        assert.strictEqual((yield* Effect.flip(RemoteSession.profile(session, undefined, { limit: 0 })))._tag, "InvalidToolRequest")
        const unloadMissing = yield* rejection(session.unloadTool("nope"))
        assert.instanceOf(unloadMissing, HarnessError.ToolNotFound)

        // The session recorded the failures as in process.
        const errors = yield* Effect.promise(() => session.toolErrors("explode"))
        assert.strictEqual(errors.errors[0]?.error_type, "RangeError")
      }))

    it.scopedLive("ordinary calls run at the same time", () => {
      let arrived = 0
      const all = deferred()
      const meet = tool({ name: "meet", description: "Waits until three calls are in.", guidelines: "Use in tests." }, async () => {
        if (++arrived === 3) all.resolve()
        await all.promise
        return arrived
      })
      return Effect.gen(function*() {
        const w = yield* world(undefined, [meet])
        yield* w.host()
        const session = w.remote("s1", 5_000)
        const answers = yield* Effect.promise(() => Promise.all([1, 2, 3].map(() => session.callTool("meet"))))
        assert.deepStrictEqual(answers, [3, 3, 3])
      })
    })

    it.scopedLive("a change made inside a change completes (MGMT-15): an example that creates a tool", () =>
      Effect.gen(function*() {
        const w = yield* world()
        yield* w.host()
        const session = w.remote("s1")
        const ack = yield* Effect.promise(() =>
          session.createTool({ entrypoint: "maker", source: makerSource, examples: [{ input: {}, expected_output: "ok" }] })
        )
        assert.deepStrictEqual(ack, { name: "maker", status: "loaded" })
        assert.strictEqual(yield* Effect.promise(() => session.callTool("made")), "made")
        // The model's own create_tool, as a call: a change through the call subject.
        assert.deepStrictEqual(
          yield* Effect.promise(() => session.callTool("create_tool", { name: "notes", kind: "text", description: "Notes.", source: notes })),
          { name: "notes", status: "loaded" }
        )
        const stored = yield* Effect.promise(() => session.snapshot())
        assert.deepStrictEqual(stored.tools.map((record) => record.name).sort(), ["made", "maker"])
        assert.deepStrictEqual(stored.text_tools.map((record) => record.name), ["notes"])
      }))

    it.scopedLive("every change is stored before it is acknowledged; another host takes the session over with every tool", () =>
      Effect.gen(function*() {
        const gated = gatedStore()
        const w = yield* world(gated.store)
        const first = yield* w.host()
        const session = w.remote("s1")

        // A change waits for its save: held, the acknowledgement does not come.
        const open = gated.hold()
        let acknowledged = false
        const creating = session.createTool({ entrypoint: "twice", source: twiceSource }).then((ack) => {
          acknowledged = true
          return ack
        })
        yield* waitUntil("the save of the change starting", () => gated.state.pendingSaves === 1)
        // A round trip through the same session (reads are not held) lets the reply come if it would.
        yield* Effect.promise(() => session.listTools())
        assert.isFalse(acknowledged, "the change was acknowledged before it was stored")
        open()
        assert.deepStrictEqual(yield* Effect.promise(() => creating), { name: "twice", status: "loaded" })

        // Every kind of change, from the application and from the model (a create_tool call, stored by the actor too).
        yield* Effect.promise(() => session.createTool({ entrypoint: "made", source: madeSource }))
        yield* Effect.promise(() => session.unloadTool("made"))
        yield* Effect.promise(() => session.callTool("create_tool", { name: "notes", kind: "text", description: "Notes.", source: notes }))
        const stored = yield* gated.store.load(Ids.sessionId("s1"))
        assert.isTrue(Option.isSome(stored))
        const snapshot = Option.getOrThrow(stored)
        assert.deepStrictEqual(snapshot.tools.map((record) => record.name).sort(), ["made", "twice"])
        assert.deepStrictEqual(snapshot.text_tools.map((record) => record.name), ["notes"])
        assert.deepStrictEqual(snapshot.unloaded_tools, ["made"])
        yield* Effect.promise(() => session.callTool("unload_tool", { name: "twice" }))
        yield* Effect.promise(() => session.callTool("load_tool", { name: "twice" }))
        assert.deepStrictEqual(Option.getOrThrow(yield* gated.store.load(Ids.sessionId("s1"))).unloaded_tools, ["made"])
        yield* Effect.promise(() => session.callTool("unload_tool", { name: "notes" }))
        assert.deepStrictEqual(Option.getOrThrow(yield* gated.store.load(Ids.sessionId("s1"))).unloaded_tools, ["made", "notes"])
        yield* Effect.promise(() => session.loadTool("notes"))

        // The host dies (its scope closes without a passivation); another takes over from the store.
        yield* first.close
        const second = yield* w.host()
        assert.deepStrictEqual(second.host.active(), [])
        assert.strictEqual(yield* Effect.promise(() => session.callTool("twice", { value: 5 })), 10)
        assert.deepStrictEqual(second.host.active(), [Ids.sessionId("s1")])
        const markdown = yield* Effect.promise(() => session.callTool("notes", {}))
        assert.include(JSON.stringify(markdown), "Read me.")
        const rejected = yield* rejection(session.callTool("made"))
        assert.instanceOf(rejected, HarnessError.ToolRejected)
        assert.strictEqual((rejected as HarnessError.ToolRejected).reason, "Unloaded")
        const catalog = yield* Effect.promise(() => session.listTools())
        assert.deepStrictEqual(
          catalog.map((entry) => `${entry.name}:${entry.state}`).sort(),
          ["add:loaded", "big:loaded", "echo:loaded", "explode:loaded", "made:unloaded", "notes:loaded", "twice:loaded"]
        )
      }))

    it.scoped("an idle session is stored, then passivated; the next call activates it again (TestClock)", () => {
      const held = deferred()
      const hold = tool({ name: "hold", description: "Waits.", guidelines: "Use in tests." }, async () => {
        await held.promise
        return "released"
      })
      return Effect.gen(function*() {
        const gated = gatedStore()
        const w = yield* world(gated.store, [hold])
        const { host } = yield* w.host({ idleTimeout: "1 minute" })
        const session = w.remote("s1")
        const sid = Ids.sessionId("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "twice", source: twiceSource }))
        assert.deepStrictEqual(host.active(), [sid])
        const savesBefore = gated.state.saves

        // Busy for longer than the idle timeout: a running call keeps it active.
        const holding = session.callTool("hold", {}, { timeoutMs: 30_000 })
        yield* waitUntil("the call running", () => host.active().length === 1)
        yield* TestClock.adjust("5 minutes")
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
        assert.deepStrictEqual(host.active(), [sid])
        held.resolve()
        assert.strictEqual(yield* Effect.promise(() => holding), "released")

        // Idle for less than the timeout: still active.
        yield* TestClock.adjust("30 seconds")
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
        assert.deepStrictEqual(host.active(), [sid])

        // Idle past the timeout: stored, then released.
        yield* TestClock.adjust("45 seconds")
        yield* waitUntil("the session being passivated", () => host.active().length === 0)
        assert.isAbove(gated.state.saves, savesBefore)
        assert.isTrue(Option.isSome(yield* gated.store.load(sid)))

        // Nobody serves it now; the next call activates it again from the store.
        const raw = yield* rejection(w.transport.request(Subject.sessionCall(w.prefix, sid), Envelope.encode("list_tools"), { timeoutMs: 2_000 }))
        assert.isTrue(isTransportError(raw) && raw.reason === "NoResponders")
        assert.strictEqual(yield* Effect.promise(() => session.callTool("twice", { value: 4 })), 8)
        assert.deepStrictEqual(host.active(), [sid])
      })
    })

    it.scopedLive("a call captured and sent again runs once: its call_id is refused DuplicateCall, a fresh one runs", () =>
      Effect.gen(function*() {
        let runs = 0
        const counted = tool({ name: "counted", description: "Counts its runs.", guidelines: "Use in tests." }, () => ++runs)
        const w = yield* world(gatedStore().store, [counted])
        yield* w.host()
        const subject = Subject.sessionCall(w.prefix, Ids.sessionId("s1"))
        const captured = Envelope.encode("call", { name: "counted", call_id: "toolu_once", args: {} })
        const send = (payload: string) =>
          Effect.promise(() => w.transport.request(subject, payload, { timeoutMs: 5_000 })).pipe(
            Effect.map((reply) => JSON.parse(Transport.text(reply)) as { v: number; kind: string; value?: unknown; error?: { _tag: string; reason: string } })
          )
        yield* Effect.promise(() => w.remote("s1").listTools())
        assert.deepStrictEqual(yield* send(captured), { v: 2, kind: "ok", value: 1 })
        const replayed = yield* send(captured)
        assert.strictEqual(replayed.error?._tag, "ToolRejected")
        assert.strictEqual(replayed.error?.reason, "DuplicateCall")
        assert.strictEqual(runs, 1, "the replay ran nothing")
        assert.strictEqual((yield* send(Envelope.encode("call", { name: "counted", call_id: "toolu_next", args: {} }))).value, 2)
      }))

    it.scopedLive("a message that does not decode gets a typed Decode reply and changes nothing", () =>
      Effect.gen(function*() {
        const gated = gatedStore()
        const w = yield* world(gated.store)
        yield* w.host()
        const session = w.remote("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "twice", source: twiceSource }))
        const before = yield* Effect.promise(() => session.snapshot())
        const saves = gated.state.saves
        const sid = Ids.sessionId("s1")

        const deep = `{"v":2,"kind":"create_tool","request":${"[".repeat(5_000)}${"]".repeat(5_000)}}`
        const malformed: ReadonlyArray<readonly [Subject.Subject, string | Uint8Array, string]> = [
          [Subject.sessionManage(w.prefix, sid), "not json", "not JSON"],
          [Subject.sessionManage(w.prefix, sid), new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), "not UTF-8"],
          [Subject.sessionManage(w.prefix, sid), "[1,2]", "not a JSON object"],
          [Subject.sessionManage(w.prefix, sid), `{"v":1,"kind":"unload_tool","name":"twice"}`, "version 1"],
          [Subject.sessionManage(w.prefix, sid), `{"kind":"unload_tool","name":"twice"}`, "version"],
          [Subject.sessionManage(w.prefix, sid), `{"v":2,"kind":"unload_tool"}`, "name"],
          [Subject.sessionManage(w.prefix, sid), `{"v":2,"kind":"drop_everything"}`, "kind"],
          [Subject.sessionManage(w.prefix, sid), `{"v":2,"kind":"create_tool","request":"twice"}`, "request"],
          [Subject.sessionManage(w.prefix, sid), deep, "nests deeper"],
          [Subject.sessionCall(w.prefix, sid), `{"v":2,"kind":"call","name":42}`, "name"],
          [Subject.sessionCall(w.prefix, sid), `{"v":2,"kind":"call","name":"unload_tool","args":{"name":"twice"},"call_id":7}`, "call_id"],
          [Subject.sessionsActivate(w.prefix), `{"v":2,"kind":"activate","session_id":"a.b"}`, "session_id"]
        ]
        for (const [subject, payload, mentions] of malformed) {
          const reply = yield* Effect.promise(() => w.transport.request(subject, payload, { timeoutMs: 5_000 }))
          const parsed = JSON.parse(Transport.text(reply)) as { v: number; kind: string; error: unknown }
          assert.strictEqual(parsed.v, 2)
          assert.strictEqual(parsed.kind, "error")
          const error = WireError.decode(parsed.error, subject)
          const reason = mentions.startsWith("version") ? "Version" : "Decode"
          assert.isTrue(isProtocolError(error) && error.reason === reason, `${mentions}: ${JSON.stringify(parsed.error)}`)
          assert.include((error as ProtocolError).detail, mentions)
        }
        assert.deepStrictEqual(yield* Effect.promise(() => session.snapshot()), before)
        assert.strictEqual(gated.state.saves, saves)
        assert.strictEqual(yield* Effect.promise(() => session.callTool("twice", { value: 1 })), 2)
      }))

    it.scopedLive("arguments and results over 256 KiB (JT-LIM-02) are refused before the wire", () =>
      Effect.gen(function*() {
        const w = yield* world()
        yield* w.host()
        const session = w.remote("s1")
        const sid = Ids.sessionId("s1")
        yield* Effect.promise(() => session.listTools())
        const wire = yield* w.transport.subscribe(Subject.sessionAll(w.prefix, sid))

        const tooLarge = yield* rejection(session.callTool("echo", { text: "x".repeat(262_144) }))
        assert.isTrue(isTransportError(tooLarge) && tooLarge.reason === "PayloadTooLarge", String(tooLarge))
        assert.include((tooLarge as TransportError).detail, "JT-LIM-02")
        const tooDeep = yield* rejection(session.callTool("echo", { text: JSON.parse(`${"[".repeat(200)}${"]".repeat(200)}`) }))
        assert.isTrue(isTransportError(tooDeep) && tooDeep.reason === "PayloadTooLarge")
        const notJson = yield* rejection(session.callTool("echo", { text: 1n }))
        assert.isTrue(isTransportError(notJson) && notJson.reason === "InvalidArgument")

        // Nothing of those reached the wire: the first message the tap sees is the sentinel.
        assert.strictEqual(yield* Effect.promise(() => session.callTool("echo", { text: "sentinel" })), "sentinel")
        const first = yield* Stream.runHead(wire)
        assert.include(Option.isSome(first) ? Transport.text(first.value) : "", "sentinel")

        // Just under the bound crosses; a result over it comes back as a typed error, and the session goes on.
        const under = "y".repeat(262_144 - 20)
        assert.strictEqual(yield* Effect.promise(() => session.callTool("echo", { text: under })), under)
        const result = yield* rejection(session.callTool("big"))
        assert.isTrue(isTransportError(result) && result.reason === "PayloadTooLarge")
        assert.include((result as TransportError).detail, "the result of 'big'")
        const profile = yield* Effect.promise(() => session.profile("echo"))
        assert.strictEqual(profile.calls.length, 2)
      }))

    it.scopedLive("an embedded caller calls the harness directly: nothing crosses the transport", () =>
      Effect.gen(function*() {
        const w = yield* world()
        const { host } = yield* w.host()
        const wire = yield* w.transport.subscribe(Subject.everything(w.prefix))
        const local = host.get("s1")
        yield* Effect.promise(() => local.ready)
        yield* Effect.promise(() => local.createTool({ entrypoint: "twice", source: twiceSource }))
        assert.strictEqual(yield* Effect.promise(() => local.callTool("twice", { value: 3 })), 6)
        const actor = yield* host.activate(Ids.sessionId("s1"))
        assert.strictEqual(actor.harness.profile("twice").calls.length, 1)
        // The change was stored (a change through the local API is stored like a remote one).
        const remote = w.remote("s1")
        w.transport.publish(Subject.profile(w.prefix, Ids.sessionId("sentinel")), "sentinel")
        const first = yield* Stream.runHead(wire)
        assert.strictEqual(Option.isSome(first) ? Transport.text(first.value) : "", "sentinel")
        assert.deepStrictEqual((yield* Effect.promise(() => remote.snapshot())).tools.map((record) => record.name), ["twice"])
      }))

    it.scopedLive("forget releases the session and keeps its snapshot; the next call activates it again", () =>
      Effect.gen(function*() {
        const w = yield* world()
        const { host } = yield* w.host()
        const session = w.remote("s1")
        yield* Effect.promise(() => session.createTool({ entrypoint: "twice", source: twiceSource }))
        assert.strictEqual(host.active().length, 1)
        yield* Effect.promise(() => session.forget())
        yield* waitUntil("the session being released", () => host.active().length === 0)
        yield* Effect.promise(() => session.forget()) // nothing to forget: no error
        assert.strictEqual(yield* Effect.promise(() => session.callTool("twice", { value: 7 })), 14)
        yield* Effect.promise(() => host.forget("s1"))
        assert.deepStrictEqual(host.active(), [])
        assert.strictEqual(yield* Effect.promise(() => host.get("s1").callTool("twice", { value: 8 })), 16)
      }))

    it.scopedLive("forget while calls run: a call that ends within the grace answers its result; one still running past it is answered Closed and cancelled", () => {
      const gate = deferred()
      const stuck = deferred<AbortSignal>()
      const hold = tool({ name: "hold", description: "Waits for the test.", guidelines: "Use in tests." }, () => gate.promise.then(() => "held"))
      const hang = tool({ name: "hang", description: "Never returns.", guidelines: "Use in tests." }, (_args, context) => {
        stuck.resolve(context.signal)
        return new Promise(() => {})
      })
      return Effect.gen(function*() {
        const w = yield* world(undefined, [hold, hang])
        const { host } = yield* w.host({ graceMs: 300 })
        const session = w.remote("s1")
        const held = session.callTool("hold", {})
        const hung = session.callTool("hang", {}, { callId: "hung" })
        held.catch(() => undefined)
        hung.catch(() => undefined)
        const signal = yield* Effect.promise(() => stuck.promise)
        yield* Effect.promise(() => session.forget())
        gate.resolve()
        assert.strictEqual(yield* Effect.promise(() => held), "held")
        const closed = yield* rejection(hung)
        assert.isTrue(isTransportError(closed) && closed.reason === "Closed", String(closed))
        assert.include((closed as TransportError).detail, "grace 300 ms")
        yield* waitUntil("the session being released", () => host.active().length === 0)
        assert.isTrue(signal.aborted)
      })
    })

    it.scopedLive("a call published without a reply subject runs (its result goes nowhere; its record and events are the session's)", () =>
      Effect.gen(function*() {
        const w = yield* world()
        yield* w.host()
        const session = w.remote("s1")
        yield* Effect.promise(() => session.listTools()) // activates the session
        w.transport.publish(Subject.sessionCall(w.prefix, Ids.sessionId("s1")), Envelope.encode("call", { name: "add", args: { left: 1, right: 2 }, call_id: "published" }))
        yield* Effect.promise(async () => {
          const deadline = Date.now() + 5_000
          while (!(await session.profile("add")).calls.some((call) => call.call_id === "published")) {
            if (Date.now() > deadline) throw new Error("the published call did not run within 5 s")
            await new Promise((resolve) => setTimeout(resolve, 10))
          }
        })
        assert.strictEqual((yield* Effect.promise(() => session.profile("add"))).calls[0]?.status, "completed")
      }))

    it.scopedLive("aborting a remote call cancels it in the session: ToolCancelled, and the record says cancelled", () => {
      const started = deferred<AbortSignal>()
      const hang = tool({ name: "hang", description: "Never returns.", guidelines: "Use in tests." }, (_args, context) => {
        started.resolve(context.signal)
        return new Promise(() => {})
      })
      return Effect.gen(function*() {
        const w = yield* world(undefined, [hang])
        yield* w.host()
        const session = w.remote("s1")
        const fiber = yield* Effect.fork(RemoteSession.callTool(session, "hang", {}, { callId: "toolu_hang" }))
        const signal = yield* Effect.promise(() => started.promise)
        yield* Fiber.interrupt(fiber)
        yield* waitUntil("the session aborting the call", () => signal.aborted)
        const controller = new AbortController()
        const second = session.callTool("hang", {}, { signal: controller.signal })
        controller.abort()
        const cancelled = yield* rejection(second)
        assert.instanceOf(cancelled, HarnessError.ToolCancelled)
        const profile = yield* Effect.promise(() => session.profile("hang"))
        assert.strictEqual(profile.calls.find((call) => call.call_id === "toolu_hang")?.status, "cancelled")
      })
    })

    it.scopedLive("a snapshot that cannot activate is a typed error for the caller, and nothing stays half-active", () =>
      Effect.gen(function*() {
        const store = SnapshotStore.makeMemory()
        yield* store.save(Ids.sessionId("broken"), {
          format_version: 1,
          tools: [{ name: "twice", language: "typescript", entrypoint: "twice", source: "export const twice = (" }],
          text_tools: [],
          base_tools: [],
          unloaded_tools: []
        })
        const w = yield* world(store)
        const { host } = yield* w.host()
        const error = yield* rejection(w.remote("broken").callTool("twice", { value: 1 }))
        assert.isTrue(error instanceof JitHarnessSnapshot.SnapshotError || error instanceof HarnessError.PackageError, String(error))
        assert.deepStrictEqual(host.active(), [])
      }))
  })
