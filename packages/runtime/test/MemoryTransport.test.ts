/**
 * The in-memory layer: the conformance suite, and what only this layer has (its own payload bound).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Ids from "../src/Ids.js"
import * as MemoryTransport from "../src/MemoryTransport.js"
import * as Subject from "../src/Subject.js"
import * as Transport from "../src/Transport.js"
import { isTransportError } from "../src/TransportError.js"
import { transportConformance } from "./TransportConformance.js"

transportConformance("MemoryTransport", () => MemoryTransport.layer())

describe("MemoryTransport", () => {
  it.scopedLive("maxPayload is the configured bound, default 1 MiB like nats-server", () =>
    Effect.gen(function*() {
      const defaults = yield* MemoryTransport.make()
      assert.strictEqual(defaults.maxPayload(), 1_048_576)
      const small = yield* MemoryTransport.make({ maxPayload: 16 })
      assert.strictEqual(small.maxPayload(), 16)
      const subject = Subject.profile(Subject.prefix(Ids.namespace("mem")), Ids.sessionId("s"))
      small.publish(subject, "x".repeat(16))
      try {
        small.publish(subject, "x".repeat(17))
        assert.fail("published a message over the bound")
      } catch (error) {
        assert.isTrue(isTransportError(error) && error.reason === "PayloadTooLarge")
      }
    }))

  it.scopedLive("a publisher's call returns before any subscriber runs", () =>
    Effect.gen(function*() {
      const transport = yield* MemoryTransport.make()
      const subject = Subject.sessionCall(Subject.prefix(Ids.namespace("mem")), Ids.sessionId("s"))
      const order: Array<string> = []
      yield* transport.serve(subject, { concurrency: 1 }, () => {
        order.push("handler")
        return "ok"
      })
      const reply = transport.request(subject, "x", { timeoutMs: 1_000 })
      order.push("returned")
      assert.strictEqual(Transport.text(yield* Effect.promise(() => reply)), "ok")
      assert.deepStrictEqual(order, ["returned", "handler"])
    }))
})
