import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as Harness from "../src/Harness.js"
import { ToolFailure } from "../src/HarnessError.js"
import type { JitHarness } from "../src/JitHarness.js"
import { tool } from "../src/Tool.js"
import { add, deferred, flush, twiceSource } from "./fixtures.js"

const rangeError = tool({ name: "explode", description: "Throws.", guidelines: "Use in tests." }, () => {
  throw new RangeError("too far")
})

const hanging = () => {
  const started = deferred<AbortSignal | undefined>()
  const hang = tool({ name: "hang", description: "Never returns.", guidelines: "Use in tests." }, (_args, context) => {
    started.resolve(context.signal)
    return new Promise(() => {})
  })
  return { hang, started }
}

const TestHarness = Harness.layer({ sessionId: "effect", tools: [add, rangeError] })

describe("the Effect API (Harness.ts)", () => {
  it.effect("creates a tool and calls it through the same dispatch path", () =>
    Effect.gen(function*() {
      expect(yield* Harness.createTool({ entrypoint: "twice", source: twiceSource })).toEqual({ name: "twice", status: "loaded" })
      expect(yield* Harness.callTool("twice", { value: 21 }, { callId: "e-1" })).toBe(42)
      const profile = yield* Harness.profile("twice")
      expect(profile.calls[0]).toMatchObject({ call_id: "e-1", status: "completed" })
      expect(yield* Harness.profileStats("add")).toMatchObject({ call_count: 1 })
    }).pipe(Effect.provide(TestHarness)))

  it.effect("harness errors arrive as themselves, in the typed error channel", () =>
    Effect.gen(function*() {
      const notFound = yield* Effect.flip(Harness.callTool("nope"))
      expect(notFound).toMatchObject({ _tag: "ToolNotFound", name: "nope" })
      const invalid = yield* Effect.flip(Harness.callTool("add", { left: "x" }))
      expect(invalid._tag).toBe("ValidationError")
      const conflict = yield* Effect.flip(Harness.createTool({ entrypoint: "add", source: "export const add = 1" }))
      expect(conflict).toMatchObject({ _tag: "NameConflict", reason: "BaseTool" })
      expect((yield* Effect.flip(Harness.profile(undefined, { limit: 0 })))._tag).toBe("InvalidToolRequest")
      expect((yield* Effect.flip(Harness.toolErrors(undefined, { limit: 1_001 })))._tag).toBe("InvalidToolRequest")
    }).pipe(Effect.provide(TestHarness)))

  it.effect("what a tool's own code throws arrives as ToolFailure with its type and message", () =>
    Effect.gen(function*() {
      const failure = yield* Effect.flip(Harness.callTool("explode"))
      expect(failure).toBeInstanceOf(ToolFailure)
      expect(failure).toMatchObject({ _tag: "ToolFailure", toolName: "explode", name: "RangeError", errorType: "RangeError", detail: "too far" })
      expect((failure as ToolFailure).cause).toBeInstanceOf(RangeError)
      const report = yield* Harness.toolErrors("explode")
      expect(report.errors[0]).toMatchObject({ error_type: "RangeError", message: "too far" })
    }).pipe(Effect.provide(TestHarness)))

  it.effect("unload, load and update as effects", () =>
    Effect.gen(function*() {
      yield* Harness.createTool({ entrypoint: "twice", source: twiceSource })
      expect(yield* Harness.unloadTool("twice")).toEqual({ name: "twice", status: "unloaded" })
      const rejected = yield* Effect.flip(Harness.callTool("twice", { value: 1 }))
      expect(rejected).toMatchObject({ _tag: "ToolRejected", reason: "Unloaded" })
      expect(yield* Harness.updateTool({ name: "twice", source: twiceSource })).toEqual({ name: "twice", status: "unloaded" })
      expect(yield* Harness.loadTool("twice")).toEqual({ name: "twice", status: "loaded" })
      expect(yield* Harness.callTool("twice", { value: 2 })).toBe(4)
    }).pipe(Effect.provide(TestHarness)))

  it.effect("interrupting callTool cancels the call: the handler's signal fires and the record says cancelled (D-22, X-18)", () => {
    const { hang, started } = hanging()
    return Effect.gen(function*() {
      const harness = yield* Harness.Harness
      const fiber = yield* Effect.fork(Harness.callTool("hang", {}, { callId: "x-1" }))
      const signal = yield* Effect.promise(() => started.promise)
      expect(signal?.aborted).toBe(false)
      yield* Fiber.interrupt(fiber)
      expect(signal?.aborted).toBe(true)
      yield* Effect.promise(() => flush())
      expect(harness.profile("hang").calls[0]).toMatchObject({ call_id: "x-1", status: "cancelled" })
      expect(harness.toolErrors().retained_errors).toBe(0)
    }).pipe(Effect.provide(Harness.layer({ tools: [hang] })))
  })

  it.effect("Harness.events is a Stream of the harness's events", () =>
    Effect.gen(function*() {
      const harness = yield* Harness.Harness
      yield* Harness.createTool({ entrypoint: "twice", source: twiceSource })
      const stream = yield* Harness.events({ bufferSize: 16 })
      const fiber = yield* stream.pipe(Stream.take(2), Stream.runCollect, Effect.fork)
      for (let i = 0; i < 1_000 && !harness.events.active; i++) yield* Effect.yieldNow()
      yield* Harness.callTool("twice", { value: 1 }, { callId: "ev-1" })
      const events = Chunk.toReadonlyArray(yield* Fiber.join(fiber))
      expect(events.map((event) => [event.name, (event.payload as { tool_call_id: string }).tool_call_id])).toEqual([
        ["jit_tool_started", "ev-1"],
        ["jit_tool_completed", "ev-1"]
      ])
    }).pipe(Effect.provide(TestHarness)))

  it.effect("a bad option fails construction with ConfigError (D-16)", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Harness.make({ callCapacity: 0 }))
      expect(error).toMatchObject({ _tag: "ConfigError", option: "callCapacity" })
      const exit = yield* Effect.exit(Harness.profile().pipe(Effect.provide(Harness.layer({ errorCapacity: -1 }))))
      expect(Exit.isFailure(exit)).toBe(true)
    }))

  it.effect("closing the scope releases the harness and ends its subscriptions", () =>
    Effect.gen(function*() {
      let captured: JitHarness | undefined
      const subscription = yield* Effect.scoped(
        Effect.gen(function*() {
          const harness = yield* Harness.makeScoped({ tools: [add] })
          captured = harness
          return harness.subscribe()
        })
      )
      const next = yield* Effect.promise(() => subscription[Symbol.asyncIterator]().next())
      expect(next).toEqual({ value: undefined, done: true })
      expect(captured?.events.active).toBe(false)
    }))
})
