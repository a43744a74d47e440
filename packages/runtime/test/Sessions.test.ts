/**
 * What the host of sessions does in its own process, beyond the shared actor suite: it is the
 * core's `Sessions` too, a local session's events outlive passivation, an attached request pins
 * a session, a store that fails keeps the session (and says so), a template starts every new
 * session, closing the host releases every harness, and the host's bounds: at most
 * `maxActiveSessions` (the least recently used idle one passivated first, `Busy` when all are
 * busy) and a short `admissionWindow` for a session nobody uses; a caller that may not create
 * sessions reaches only stored or active ones.
 */
import { HarnessError, JitHarnessSnapshot, type JitToolEvent, Sessions as CoreSessions, tool } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as Envelope from "../src/Envelope.js"
import * as Ids from "../src/Ids.js"
import * as MemoryTransport from "../src/MemoryTransport.js"
import * as RemoteSession from "../src/RemoteSession.js"
import * as Sessions from "../src/Sessions.js"
import * as SnapshotStore from "../src/SnapshotStore.js"
import * as Subject from "../src/Subject.js"
import * as Transport from "../src/Transport.js"
import { TransportError } from "../src/TransportError.js"
import { add, twiceSource } from "../../core/test/fixtures.js"

const prefix = Subject.prefix(Ids.namespace("local"))

const settle = () => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))

const waitUntil = (what: string, check: () => boolean): Effect.Effect<void> =>
  Effect.promise(async () => {
    const deadline = Date.now() + 5_000
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`${what} did not happen within 5 s`)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  })

/** A host, and the transport it runs on, in the caller's scope. */
const hostWith = (store: SnapshotStore.SnapshotStoreShape, options: Partial<Sessions.SessionsOptions> = {}) =>
  Effect.flatMap(Layer.build(Layer.merge(MemoryTransport.layer(), Layer.succeed(SnapshotStore.SnapshotStore, store))), (context) =>
    Sessions.make({ prefix, harness: { tools: [add] }, idleTimeout: "1 minute", ...options }).pipe(Effect.provide(context)))

/** A memory store whose saves fail while `failing` is set. */
const flakyStore = () => {
  const inner = SnapshotStore.makeMemory()
  const control = { failing: false }
  const store: SnapshotStore.SnapshotStoreShape = {
    ...inner,
    save: (sessionId, snapshot) =>
      control.failing
        ? Effect.fail(new JitHarnessSnapshot.SnapshotError({ reason: "Io", detail: "the disk is full" }))
        : inner.save(sessionId, snapshot)
  }
  return { store, inner, control }
}

describe("Sessions in this process", () => {
  it.scoped("the layer is also the core's Sessions; a bad session id is a ConfigError", () =>
    Effect.gen(function*() {
      const core = yield* CoreSessions.Sessions
      const runtime = yield* Sessions.Sessions
      const session = core.get("s1")
      assert.strictEqual(session, runtime.get("s1"))
      assert.strictEqual(yield* Effect.promise(() => session.callTool("add", { left: 2, right: 3 })), 5)
      assert.throws(() => core.get("a.b"), HarnessError.ConfigError)
    }).pipe(
      Effect.provide(
        Sessions.layer({ prefix, harness: { tools: [add] } }).pipe(
          Layer.provide(Layer.merge(MemoryTransport.layer(), SnapshotStore.layerMemory()))
        )
      )
    ))

  it.scoped("a local session's events follow it across a passivation", () =>
    Effect.gen(function*() {
      const host = yield* hostWith(SnapshotStore.makeMemory())
      const session = host.get("s1")
      const seen: Array<JitToolEvent.JitToolEvent> = []
      session.events.listen((event) => seen.push(event))
      yield* Effect.promise(() => session.createTool({ entrypoint: "twice", source: twiceSource }))
      assert.strictEqual(yield* Effect.promise(() => session.callTool("twice", { value: 1 }, { callId: "before" })), 2)
      assert.isTrue(yield* host.passivate(Ids.sessionId("s1"), { force: true }))
      assert.deepStrictEqual(host.active(), [])
      assert.strictEqual(yield* Effect.promise(() => session.callTool("twice", { value: 2 }, { callId: "after" })), 4)
      const completed = seen.filter((event) => event.name === "jit_tool_completed").map((event) => (event.payload as { tool_call_id: string }).tool_call_id)
      assert.includeMembers(completed, ["before", "after"])
    }))

  it.scoped("a change made through manage publishes the events the management tool's call would: create, unload, a refused load", () =>
    Effect.gen(function*() {
      const host = yield* hostWith(SnapshotStore.makeMemory())
      const session = host.get("s1")
      const seen: Array<JitToolEvent.JitToolEvent> = []
      session.events.listen((event) => seen.push(event))
      yield* Effect.promise(() => session.createTool({ entrypoint: "twice", source: twiceSource }))
      yield* Effect.promise(() => session.unloadTool("twice"))
      yield* Effect.promise(() => session.loadTool("absent").catch(() => undefined))
      const pairs = seen.map((event) =>
        event.name === "jit_tool_completed"
          ? `${event.payload.tool_name} ${event.payload.origin} ${event.payload.success ? "ok" : event.payload.error_type}`
          : event.name === "jit_tool_started" ? `start ${event.payload.tool_name}` : event.name
      )
      assert.deepStrictEqual(pairs, [
        "start create_tool",
        "create_tool management ok",
        "start unload_tool",
        "unload_tool management ok",
        "start load_tool",
        "load_tool management ToolNotFound"
      ])
      const started = seen.filter((event) => event.name === "jit_tool_started").map((event) => (event.payload as { tool_call_id: string }).tool_call_id)
      assert.strictEqual(new Set(started).size, 3)
    }))

  it.scoped("an attached request pins its session: idle, it is not passivated until detached (TestClock)", () =>
    Effect.gen(function*() {
      const host = yield* hostWith(SnapshotStore.makeMemory())
      const session = host.get("s1")
      const request = {}
      yield* Effect.promise(() => session.attach(request))
      yield* TestClock.adjust("10 minutes")
      yield* settle()
      assert.deepStrictEqual(host.active(), [Ids.sessionId("s1")])
      session.detach(request)
      yield* TestClock.adjust("2 minutes")
      yield* waitUntil("passivation", () => host.active().length === 0)
    }))

  it.scoped("a store that cannot save: the change is refused with its SnapshotError, and the session stays active", () =>
    Effect.gen(function*() {
      const flaky = flakyStore()
      const host = yield* hostWith(flaky.store)
      const session = host.get("s1")
      const sid = Ids.sessionId("s1")
      yield* Effect.promise(() => session.ready)
      flaky.control.failing = true
      const refused = yield* Effect.promise(() => session.createTool({ entrypoint: "twice", source: twiceSource }).then(() => undefined, (error) => error))
      assert.instanceOf(refused, JitHarnessSnapshot.SnapshotError)
      // Not stored: neither passivation nor forget may drop it.
      yield* TestClock.adjust("5 minutes")
      yield* settle()
      assert.deepStrictEqual(host.active(), [sid])
      assert.instanceOf(yield* Effect.promise(() => host.forget("s1").then(() => undefined, (error) => error)), JitHarnessSnapshot.SnapshotError)
      assert.deepStrictEqual(host.active(), [sid])
      // Once the store works again, the session is stored and released.
      flaky.control.failing = false
      yield* Effect.promise(() => host.forget("s1"))
      assert.deepStrictEqual(host.active(), [])
      assert.deepStrictEqual(Option.getOrThrow(yield* flaky.inner.load(sid)).tools.map((record) => record.name), ["twice"])
    }))

  it.scoped("every new session starts from the template; each keeps its own changes (SNAP-03)", () =>
    Effect.gen(function*() {
      const template: JitHarnessSnapshot.JitHarnessSnapshot = {
        format_version: 1,
        tools: [{ name: "twice", language: "typescript", entrypoint: "twice", source: twiceSource }],
        text_tools: [],
        base_tools: ["add"],
        unloaded_tools: []
      }
      const host = yield* hostWith(SnapshotStore.makeMemory(), { template })
      const a = host.get("a")
      const b = host.get("b")
      assert.strictEqual(yield* Effect.promise(() => a.callTool("twice", { value: 1 })), 2)
      yield* Effect.promise(() => a.unloadTool("twice"))
      assert.strictEqual(yield* Effect.promise(() => b.callTool("twice", { value: 2 })), 4)
      yield* Effect.promise(() => host.forget("a"))
      const rejected = yield* Effect.promise(() => a.callTool("twice", { value: 1 }).then(() => undefined, (error) => error))
      assert.instanceOf(rejected, HarnessError.ToolRejected)
    }))

  it.effect("closing the host releases every session's harness and activates nothing more", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const host = yield* hostWith(SnapshotStore.makeMemory()).pipe(Scope.extend(scope))
      const actor = yield* host.activate(Ids.sessionId("s1"))
      assert.strictEqual(yield* Effect.promise(() => actor.harness.callTool("add", { left: 1, right: 1 })), 2)
      yield* Scope.close(scope, Exit.void)
      const released = yield* Effect.promise(() => actor.harness.callTool("add", { left: 1, right: 1 }).then(() => undefined, (error) => error))
      assert.instanceOf(released, HarnessError.HarnessReleased)
      // A closed host activates nothing.
      const refused = yield* Effect.promise(() => host.get("s2").callTool("add", { left: 1, right: 1 }).then(() => undefined, (error) => error))
      assert.instanceOf(refused, HarnessError.HarnessReleased)
      assert.deepStrictEqual(host.active(), [])
    }))

  it.scoped("at maxActiveSessions, an activation first passivates the least recently used idle session: stored, then released (TestClock)", () =>
    Effect.gen(function*() {
      const store = SnapshotStore.makeMemory()
      const host = yield* hostWith(store, { maxActiveSessions: 2 })
      yield* Effect.promise(() => host.get("a").createTool({ entrypoint: "twice", source: twiceSource }))
      yield* TestClock.adjust("1 second")
      yield* Effect.promise(() => host.get("b").callTool("add", { left: 1, right: 1 }))
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Effect.promise(() => host.get("c").callTool("add", { left: 2, right: 2 })), 4)
      assert.sameMembers([...host.active()], [Ids.sessionId("b"), Ids.sessionId("c")])
      // a was stored before it was released: its next use activates it with its tool, in place of b now
      assert.isTrue(Option.isSome(yield* store.load(Ids.sessionId("a"))))
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* Effect.promise(() => host.get("a").callTool("twice", { value: 4 })), 8)
      assert.sameMembers([...host.active()], [Ids.sessionId("a"), Ids.sessionId("c")])
    }))

  it.scoped("at maxActiveSessions with every session busy, an activation is refused TransportError Busy and nothing is lost", () =>
    Effect.gen(function*() {
      const host = yield* hostWith(SnapshotStore.makeMemory(), { maxActiveSessions: 1 })
      const a = host.get("a")
      const request = {}
      yield* Effect.promise(() => a.attach(request))
      const refused = yield* Effect.promise(() => host.get("b").callTool("add", { left: 1, right: 1 }).then(() => undefined, (error) => error))
      assert.instanceOf(refused, TransportError)
      assert.strictEqual((refused as TransportError).reason, "Busy")
      assert.include((refused as TransportError).message, "maxActiveSessions")
      assert.deepStrictEqual(host.active(), [Ids.sessionId("a")])
      assert.strictEqual(yield* Effect.promise(() => a.callTool("add", { left: 2, right: 3 })), 5)
      // Once a is free again, b takes its place.
      a.detach(request)
      assert.strictEqual(yield* Effect.promise(() => host.get("b").callTool("add", { left: 1, right: 1 })), 2)
      assert.deepStrictEqual(host.active(), [Ids.sessionId("b")])
    }))

  it.scoped("a remote sessions.activate beyond the bound is answered Busy; a flood of made-up ids holds at most maxActiveSessions", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(Layer.merge(MemoryTransport.layer(), SnapshotStore.layerMemory()))
      const host = yield* Sessions.make({ prefix, harness: { tools: [add] }, idleTimeout: "1 minute", maxActiveSessions: 5 }).pipe(Effect.provide(context))
      const transport = Context.get(context, Transport.Transport)
      // made-up sessions, activated and never used: each passivates the least recently activated
      for (let i = 0; i < 30; i++) {
        const answer = yield* Transport.request(Subject.sessionsActivate(prefix), Envelope.encode("activate", { session_id: `made_up_${i}` }), { timeoutMs: 5_000 }).pipe(
          Effect.provide(context)
        )
        assert.include(Transport.text(answer), `"kind":"ok"`)
        assert.isAtMost(host.active().length, 5)
      }
      assert.strictEqual(host.active().length, 5)
      // every one busy: a remote activation is refused Busy across the wire
      const requests = host.active().map((sid) => ({ sid, request: {} }))
      for (const { request, sid } of requests) yield* Effect.promise(() => host.get(sid).attach(request))
      const refused = yield* Effect.promise(() => new RemoteSession.RemoteSession(transport, Ids.sessionId("real"), { prefix }).callTool("add", { left: 1, right: 1 }).then(() => undefined, (error) => error))
      assert.strictEqual((refused as TransportError)._tag, "TransportError")
      assert.strictEqual((refused as TransportError).reason, "Busy")
      for (const { request, sid } of requests) host.get(sid).detach(request)
      assert.strictEqual(yield* Effect.promise(() => new RemoteSession.RemoteSession(transport, Ids.sessionId("real"), { prefix }).callTool("add", { left: 1, right: 1 })), 2)
    }))

  it.scoped("a RemoteSession with create: false activates only a stored or active session; one nobody stored fails SnapshotError NotFound and starts nothing", () =>
    Effect.gen(function*() {
      const store = SnapshotStore.makeMemory()
      const context = yield* Layer.build(Layer.merge(MemoryTransport.layer(), Layer.succeed(SnapshotStore.SnapshotStore, store)))
      const host = yield* Sessions.make({ prefix, harness: { tools: [add] }, idleTimeout: "1 minute" }).pipe(Effect.provide(context))
      const transport = Context.get(context, Transport.Transport)
      const existing = (sid: string) => new RemoteSession.RemoteSession(transport, sid, { prefix, create: false })
      const refused = yield* Effect.promise(() => existing("typo").listTools().then(() => undefined, (error) => error))
      assert.deepStrictEqual([(refused as JitHarnessSnapshot.SnapshotError)._tag, (refused as JitHarnessSnapshot.SnapshotError).reason], ["SnapshotError", "NotFound"])
      assert.deepStrictEqual(host.active(), [])
      // created by a caller that may create, then stored: a create: false caller reaches it, active or passivated
      yield* Effect.promise(() => new RemoteSession.RemoteSession(transport, "kept", { prefix }).callTool("add", { left: 1, right: 2 }))
      assert.strictEqual(yield* Effect.promise(() => existing("kept").callTool("add", { left: 2, right: 2 })), 4)
      yield* Effect.promise(() => host.forget("kept"))
      assert.isTrue(Option.isSome(yield* store.load(Ids.sessionId("kept"))))
      assert.strictEqual(yield* Effect.promise(() => existing("kept").callTool("add", { left: 3, right: 2 })), 5)
    }))

  it.scoped("a session activated and not used is passivated after admissionWindow; a used one after idleTimeout (TestClock)", () =>
    Effect.gen(function*() {
      const host = yield* hostWith(SnapshotStore.makeMemory(), { admissionWindow: "10 seconds", idleTimeout: "1 minute" })
      yield* host.activate(Ids.sessionId("unused"))
      yield* Effect.promise(() => host.get("used").callTool("add", { left: 1, right: 1 }))
      yield* TestClock.adjust("9 seconds")
      yield* settle()
      assert.sameMembers([...host.active()], [Ids.sessionId("unused"), Ids.sessionId("used")])
      yield* TestClock.adjust("3 seconds")
      yield* waitUntil("the unused session's passivation", () => host.active().length === 1)
      assert.deepStrictEqual(host.active(), [Ids.sessionId("used")])
      yield* TestClock.adjust("1 minute")
      yield* waitUntil("the used session's passivation", () => host.active().length === 0)
    }))

  it.effect("maxActiveSessions must be an integer of at least 1", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(hostWith(SnapshotStore.makeMemory(), { maxActiveSessions: 0 }).pipe(Effect.scoped))
      assert.instanceOf(error, HarnessError.ConfigError)
      assert.strictEqual((error as HarnessError.ConfigError).option, "maxActiveSessions")
      assert.strictEqual(Sessions.defaults.maxActiveSessions, 1_000)
    }))
})
