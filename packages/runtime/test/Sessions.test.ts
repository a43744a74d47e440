/**
 * What the host of sessions does in its own process, beyond the shared actor suite: it is the
 * core's `Sessions` too, a local session's events outlive passivation, an attached request pins
 * a session, a store that fails keeps the session (and says so), a template starts every new
 * session, and closing the host releases every harness.
 */
import { HarnessError, JitHarnessSnapshot, type JitToolEvent, Sessions as CoreSessions, tool } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as Ids from "../src/Ids.js"
import * as MemoryTransport from "../src/MemoryTransport.js"
import * as Sessions from "../src/Sessions.js"
import * as SnapshotStore from "../src/SnapshotStore.js"
import * as Subject from "../src/Subject.js"
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
})
