/**
 * `jitbox events tail`'s durations come from the calls' profile records, not from when events
 * arrive: a start and a completion arriving at the same instant still show the duration the
 * session measured; a completion whose record comes a little later waits for it; one whose record
 * never comes is shown without a duration after `recordGrace` (TestClock).
 */
import { assert, describe, it } from "@effect/vitest"
import type { JitToolEvent } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { EventsCommand } from "../src/index.js"

const started = (callId: string): JitToolEvent.JitToolEvent => ({
  type: "CUSTOM",
  name: "jit_tool_started",
  payload: { session_id: "s1", tool_call_id: callId, tool_name: "square", origin: "code" }
})

const completed = (callId: string): JitToolEvent.JitToolEvent => ({
  type: "CUSTOM",
  name: "jit_tool_completed",
  payload: { session_id: "s1", tool_call_id: callId, tool_name: "square", origin: "code", success: true, error_type: null }
})

const record = (callId: string, durationMs: number) => ({
  call_id: callId,
  tool_name: "square",
  origin: "code",
  status: "completed",
  duration_ms: durationMs,
  session_id: "s1",
  parent_call_id: null,
  depth: 0
})

const batch = (kind: "events" | "records", items: ReadonlyArray<unknown>) => new TextEncoder().encode(JSON.stringify({ v: 2, kind, [kind]: items }))

describe("jitbox events tail: durations from the profile records", () => {
  it("a batch of profile records decodes to its calls' timings, skipping a record without one; an events batch holds none", () => {
    assert.deepStrictEqual(EventsCommand.decodeTimings(batch("records", [record("c1", 41.5), { call_id: "c2" }, record("c3", 2)])), [
      { sessionId: "s1", callId: "c1", durationMs: 41.5 },
      { sessionId: "s1", callId: "c3", durationMs: 2 }
    ])
    assert.deepStrictEqual(EventsCommand.decodeTimings(batch("events", [started("c1")])), [])
    assert.deepStrictEqual(EventsCommand.decodeEvents(batch("events", [started("c1"), completed("c1")])), [started("c1"), completed("c1")])
    assert.deepStrictEqual(EventsCommand.decodeEvents(batch("records", [record("c1", 1)])), [])
  })

  it("start and completion arriving at the same instant: the duration is the record's, in the line and the table", () => {
    const tally = new EventsCommand.Tally()
    tally.add(started("c1"), 1_000)
    tally.time({ sessionId: "s1", callId: "c1", durationMs: 42 })
    const received = tally.add(completed("c1"), 1_000)
    assert.strictEqual(received.durationMs, 42)
    assert.match(EventsCommand.line(received), / ok 42ms$/)
    assert.deepStrictEqual(tally.tools.get("square")?.recent, [42])
    assert.strictEqual(tally.tools.get("square")?.running, 0)
  })

  it.effect("a completion waits for a record that arrives after it; without one it is shown without a duration after recordGrace", () =>
    Effect.gen(function*() {
      const tally = new EventsCommand.Tally()
      const late = yield* Effect.fork(EventsCommand.timingOf(tally, completed("c2")))
      yield* TestClock.adjust("100 millis")
      tally.time({ sessionId: "s1", callId: "c2", durationMs: 7 })
      yield* Fiber.join(late)
      assert.strictEqual(tally.add(completed("c2"), 0).durationMs, 7)

      const never = yield* Effect.fork(EventsCommand.timingOf(tally, completed("c3")))
      yield* TestClock.adjust("249 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(never)))
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(never)
      const shown = tally.add(completed("c3"), 0)
      assert.strictEqual(shown.durationMs, undefined)
      assert.match(EventsCommand.line(shown), / ok$/)
    }))
})
