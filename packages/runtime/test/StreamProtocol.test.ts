/**
 * The batch messages of `StreamProtocol` read on their own: what decodes, what is skipped.
 * (Publishing them over a transport is in StreamConformance.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import * as StreamProtocol from "../src/StreamProtocol.js"

const started = (session: string, n: number) => ({
  type: "CUSTOM" as const,
  name: "jit_tool_started" as const,
  payload: { session_id: session, tool_call_id: `call_${n}`, tool_name: "add", origin: "text" as const }
})

const encoder = new TextEncoder()

describe("StreamProtocol", () => {
  it("a batch decodes on the reading side; an item a reader does not know is skipped, the rest kept; what is not a batch holds none", () => {
    const batch = StreamProtocol.encode("events", [started("s", 1), { type: "CUSTOM", name: "jit_something_new", payload: {} }, started("s", 2)].map((e) => JSON.stringify(e)))
    assert.deepStrictEqual(StreamProtocol.decodeEvents(encoder.encode(batch)).map((event) => event.payload.session_id), ["s", "s"])
    assert.deepStrictEqual(StreamProtocol.decodeEvents(encoder.encode(JSON.stringify({ v: 2, kind: "event", event: started("s", 1) }))), [])
    assert.deepStrictEqual(StreamProtocol.decodeEvents(encoder.encode(JSON.stringify({ v: 3, kind: "events", events: [started("s", 1)] }))), [])
    assert.deepStrictEqual(StreamProtocol.decodeRecords(encoder.encode(batch)), [])
    const oversized = encoder.encode(StreamProtocol.encode("events", [JSON.stringify(started("s".repeat(StreamProtocol.maxBatchBytes), 1))]))
    assert.deepStrictEqual(StreamProtocol.decodeEvents(oversized), [])
  })

  it("split keeps the order and each batch within the bound, counting bytes, not characters", () => {
    const items = Array.from({ length: 40 }, (_, i) => JSON.stringify({ i, text: "é".repeat(1_000 + i) }))
    const batches = StreamProtocol.split("records", items, (item) => item)
    assert.isAbove(batches.length, 1)
    assert.deepStrictEqual(batches.flat(), items)
    for (const batch of batches) assert.isAtMost(encoder.encode(StreamProtocol.encode("records", batch)).length, StreamProtocol.maxBatchBytes)
    assert.deepStrictEqual(StreamProtocol.split("records", items.slice(0, 3), (item) => item), [items.slice(0, 3)])
    assert.isTrue(StreamProtocol.fits("events", "x".repeat(StreamProtocol.maxBatchBytes - StreamProtocol.overheadBytes("events"))))
    assert.isFalse(StreamProtocol.fits("events", "é".repeat(StreamProtocol.maxBatchBytes / 2)))
  })
})
