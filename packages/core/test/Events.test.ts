import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { JitHarness } from "../src/JitHarness.js"
import * as JitToolEvent from "../src/JitToolEvent.js"
import { tool } from "../src/Tool.js"
import { add, codeTool, makeHarness, makeHarnessWithUnbound, recordEvents, rejection, withTwice } from "./fixtures.js"

/** Lets a forked stream reach its subscription (a stream subscribes when it starts running). */
const subscribed = (harness: JitHarness) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1_000 && !harness.events.active; i++) yield* Effect.yieldNow()
    expect(harness.events.active).toBe(true)
  })

const payloadOf = (event: JitToolEvent.JitToolEvent) => event.payload as Record<string, unknown>

/** Every started event has exactly one completed event with the same call id, after it. */
const expectPaired = (events: ReadonlyArray<JitToolEvent.JitToolEvent>) => {
  const open = new Map<string, number>()
  for (const [index, event] of events.entries()) {
    const id = payloadOf(event).tool_call_id as string
    if (event.name === "jit_tool_started") {
      expect(open.has(id)).toBe(false)
      open.set(id, index)
    } else if (event.name === "jit_tool_completed") {
      expect(open.has(id)).toBe(true)
      open.delete(id)
    }
  }
  expect([...open.keys()]).toEqual([])
}

describe("jit_tool_started / jit_tool_completed (EVT-01..13, D-10, D-11)", () => {
  it("carry exactly the EVT-06 payload fields (EVT-01, EVT-06, EVT-13)", async () => {
    const harness = await withTwice({ sessionId: "builder" })
    const events = recordEvents(harness)
    await harness.callTool("twice", { value: 21 }, { callId: "tc-1" })
    const seen = await events.stop()
    expect(seen).toEqual([
      { type: "CUSTOM", name: "jit_tool_started", payload: { session_id: "builder", tool_call_id: "tc-1", tool_name: "twice", origin: "code" } },
      {
        type: "CUSTOM",
        name: "jit_tool_completed",
        payload: { session_id: "builder", tool_call_id: "tc-1", tool_name: "twice", origin: "code", success: true, error_type: null }
      }
    ])
    for (const event of seen) expect(Schema.decodeUnknownSync(JitToolEvent.JitToolEvent)(event)).toEqual(event)
  })

  it("never carry arguments, results or error messages (EVT-07)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "leaky", source: codeTool("leaky", `args.fail ? (() => { throw new Error("message-secret") })() : "result-secret"`) })
    const events = recordEvents(harness)
    await harness.callTool("leaky", { token: "argument-secret" })
    await rejection(harness.callTool("leaky", { fail: true, token: "argument-secret" }))
    const text = JSON.stringify(await events.stop())
    for (const secret of ["argument-secret", "result-secret", "message-secret"]) expect(text).not.toContain(secret)
  })

  it("pair every dispatched management, code and text call, nested ones included; none for base tools (EVT-03..05, CON-18, MGMT-28, TXT-15, ORG-09)", async () => {
    const harness = makeHarness()
    const events = recordEvents(harness)
    await harness.callTool("create_tool", { kind: "text", name: "notes", description: "Notes.", source: "# Notes" })
    await harness.callTool("create_tool", { entrypoint: "inner", source: codeTool("inner", `await harness.callTool("add", { left: 1, right: 1 })`) })
    await harness.callTool("create_tool", {
      entrypoint: "outer",
      source: codeTool("outer", `[await harness.callTool("inner", {}), await harness.callTool("notes", {}), await harness.callTool("list_tools", {})]`)
    })
    await harness.callTool("outer", {})
    await harness.callTool("add", { left: 2, right: 2 })
    const seen = await events.stop()
    expectPaired(seen)
    expect(seen.map((event) => `${event.name === "jit_tool_started" ? "+" : "-"}${payloadOf(event).tool_name}:${payloadOf(event).origin}`)).toEqual([
      "+create_tool:management",
      "-create_tool:management",
      "+create_tool:management",
      "-create_tool:management",
      "+create_tool:management",
      "-create_tool:management",
      "+outer:code",
      "+inner:code",
      "-inner:code",
      "+notes:text",
      "-notes:text",
      "+list_tools:management",
      "-list_tools:management",
      "-outer:code"
    ])
  })

  it("tool_call_id equals the record's call_id, model-supplied or fresh (EVT-08, D-10)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "inner", source: codeTool("inner", `"x"`) })
    await harness.createTool({ entrypoint: "outer", source: codeTool("outer", `[await harness.callTool("inner", {}), await harness.callTool("inner", {})]`) })
    const events = recordEvents(harness)
    await harness.callTool("outer", {}, { callId: "model-call" })
    await harness.callTool("outer", {})
    const seen = await events.stop()
    const eventIds = seen.filter((event) => event.name === "jit_tool_started").map((event) => payloadOf(event).tool_call_id)
    const recordIds = harness.profile().calls.map((call) => call.call_id).reverse()
    expect(eventIds).toHaveLength(6)
    expect(new Set(eventIds).size).toBe(6)
    // Records are written when an attempt ends; started events when it begins.
    expect([...eventIds].sort()).toEqual([...recordIds].sort())
    expect(eventIds[0]).toBe("model-call")
  })

  it("a validation failure is failed and paired with success false (D-11, EVT-09, AMB-19)", async () => {
    const harness = await withTwice()
    const events = recordEvents(harness)
    await rejection(harness.callTool("twice", { value: "x" }, { callId: "v-1" }))
    expect((await events.stop()).map((event) => event.payload)).toEqual([
      { session_id: "test", tool_call_id: "v-1", tool_name: "twice", origin: "code" },
      { session_id: "test", tool_call_id: "v-1", tool_name: "twice", origin: "code", success: false, error_type: "ValidationError" }
    ])
    expect(harness.profile("twice").calls[0]).toMatchObject({ call_id: "v-1", status: "failed", error_type: "ValidationError" })
  })

  it("a thrown error is paired with success false and its type (EVT-01)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "bad", source: codeTool("bad", `(() => { throw new TypeError("no") })()`) })
    const events = recordEvents(harness)
    await rejection(harness.callTool("bad", {}))
    expect(payloadOf((await events.stop())[1]!)).toMatchObject({ success: false, error_type: "TypeError" })
  })

  it("no pair for calls rejected before dispatch or for unknown names (EVT-09..11, STS-07)", async () => {
    const harness = await makeHarnessWithUnbound(["ghost"])
    await harness.createTool({ entrypoint: "dep", source: codeTool("dep", `"x"`) })
    await harness.unloadTool("dep")
    const events = recordEvents(harness)
    await rejection(harness.callTool("dep", {}))
    await rejection(harness.callTool("ghost", {}))
    await rejection(harness.callTool("never_seen", {}))
    expect(await events.stop()).toEqual([])
    expect(harness.profile().calls.slice(0, 2).map((call) => [call.tool_name, call.status])).toEqual([
      ["ghost", "rejected"],
      ["dep", "rejected"]
    ])
  })

  it("every subscriber gets every event; a closed one gets no more", async () => {
    const harness = await withTwice()
    const first = recordEvents(harness)
    const second = recordEvents(harness)
    await harness.callTool("twice", { value: 1 })
    const firstSeen = await first.stop()
    await harness.callTool("twice", { value: 2 })
    expect(firstSeen).toHaveLength(2)
    expect(await second.stop()).toHaveLength(4)
  })

  it("a waiting reader receives events as they happen", async () => {
    const harness = await withTwice()
    const subscription = harness.subscribe()
    const iterator = subscription[Symbol.asyncIterator]()
    const next = iterator.next()
    await harness.callTool("twice", { value: 1 })
    expect((await next).value).toMatchObject({ name: "jit_tool_started" })
    expect((await iterator.next()).value).toMatchObject({ name: "jit_tool_completed" })
    await iterator.return!()
    expect(await iterator.next()).toEqual({ value: undefined, done: true })
  })

  it("releasing the harness ends every subscription (PRF-18, LIFE-06)", async () => {
    const harness = await withTwice()
    const subscription = harness.subscribe()
    const pending = subscription[Symbol.asyncIterator]().next()
    await harness.release()
    expect(await pending).toEqual({ value: undefined, done: true })
  })
})

describe("overflow is reported, never silent", () => {
  it("a subscriber with bufferSize 4 that does not read while 20 events are emitted gets jit_events_dropped 16 first", async () => {
    const harness = makeHarness({ sessionId: "overflow" })
    await harness.createTool({ kind: "text", name: "notes", description: "Notes.", source: "# Notes" })
    const subscription = harness.subscribe({ bufferSize: 4 })
    for (let i = 0; i < 10; i++) await harness.callTool("notes", {}, { callId: `r${i}` })
    expect(subscription.dropped).toBe(16)
    subscription.close()
    const seen: Array<JitToolEvent.JitToolEvent> = []
    for await (const event of subscription) seen.push(event)
    expect(seen[0]).toEqual({ type: "CUSTOM", name: "jit_events_dropped", payload: { session_id: "overflow", dropped: 16 } })
    expect(seen.slice(1).map((event) => [event.name, payloadOf(event).tool_call_id])).toEqual([
      ["jit_tool_started", "r8"],
      ["jit_tool_completed", "r8"],
      ["jit_tool_started", "r9"],
      ["jit_tool_completed", "r9"]
    ])
    expect(Schema.decodeUnknownSync(JitToolEvent.JitToolEvent)(seen[0])).toEqual(seen[0])
  })

  it("a reader that catches up sees each gap reported once, before the next delivered event", async () => {
    const harness = makeHarness()
    await harness.createTool({ kind: "text", name: "notes", description: "Notes.", source: "# Notes" })
    const subscription = harness.subscribe({ bufferSize: 2 })
    const iterator = subscription[Symbol.asyncIterator]()
    await harness.callTool("notes", {})
    await harness.callTool("notes", {})
    expect((await iterator.next()).value).toMatchObject({ name: "jit_events_dropped", payload: { dropped: 2 } })
    expect((await iterator.next()).value).toMatchObject({ name: "jit_tool_started" })
    expect((await iterator.next()).value).toMatchObject({ name: "jit_tool_completed" })
    const waiting = iterator.next()
    await harness.callTool("notes", {})
    expect((await waiting).value).toMatchObject({ name: "jit_tool_started" })
    subscription.close()
  })
})

describe("the Effect Stream form (EVT-13, X-23)", () => {
  it.effect("harness.events.stream() delivers the events of later calls", () =>
    Effect.gen(function*() {
      const harness = yield* Effect.promise(() => withTwice())
      const fiber = yield* harness.events.stream().pipe(Stream.take(4), Stream.runCollect, Effect.fork)
      yield* subscribed(harness)
      yield* Effect.promise(() => harness.callTool("twice", { value: 1 }, { callId: "s1" }))
      yield* Effect.promise(() => harness.callTool("twice", { value: 2 }, { callId: "s2" }))
      const events = Chunk.toReadonlyArray(yield* Fiber.join(fiber))
      expect(events.map((event) => [event.name, payloadOf(event).tool_call_id])).toEqual([
        ["jit_tool_started", "s1"],
        ["jit_tool_completed", "s1"],
        ["jit_tool_started", "s2"],
        ["jit_tool_completed", "s2"]
      ])
    }))

  it.effect("ending the stream closes its subscription", () =>
    Effect.gen(function*() {
      const harness = new JitHarness({ tools: [add] })
      yield* Effect.promise(() => harness.createTool({ kind: "text", name: "notes", description: "Notes.", source: "# n" }))
      const fiber = yield* harness.events.stream().pipe(Stream.take(1), Stream.runCollect, Effect.fork)
      yield* subscribed(harness)
      yield* Effect.promise(() => harness.callTool("notes", {}))
      expect(Chunk.size(yield* Fiber.join(fiber))).toBe(1)
      expect(harness.events.active).toBe(false)
    }))

  it("base tools with manageBaseTools false still emit nothing", async () => {
    const noisy = tool({ name: "noisy", description: "Noise.", guidelines: "Use in tests." }, () => 1)
    const harness = new JitHarness({ tools: [noisy], manageBaseTools: false })
    const events = recordEvents(harness)
    await harness.callTool("noisy", {})
    expect(await events.stop()).toEqual([])
  })
})
