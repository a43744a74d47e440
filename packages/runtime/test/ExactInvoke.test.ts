/**
 * The hand decoders of the hot path agree with the schemas: a valid `invoke` (as a session writes
 * it) decodes by hand to exactly what `WorkerProtocol.InvokeRequest` decodes it to, an `ok` reply
 * to exactly what `Protocol.valueOf` reads; anything else (a field missing, added, of another
 * type, another kind or version, another spelling of the reply) is left to the schema path.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as fc from "fast-check"
import * as Envelope from "../src/Envelope.js"
import * as Ids from "../src/Ids.js"
import { valueOf } from "../src/Protocol.js"
import * as WorkerProtocol from "../src/WorkerProtocol.js"
import * as ExactInvoke from "../src/internal/exactInvoke.js"
import * as Wire from "../src/internal/wire.js"

const tokenChar = fc.constantFrom(..."abcXYZ019_-")
const token = fc.string({ unit: tokenChar, minLength: 1, maxLength: 12 })
const capability = fc.string({ unit: tokenChar, minLength: 22, maxLength: 22 })
const number = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }))

/** An `invoke` as it is on the wire: every field of its type, `lease_id` and `args` sometimes absent. */
const wireInvoke = fc.record(
  {
    v: fc.constant(Envelope.version),
    kind: fc.constant("invoke"),
    session_id: token,
    version_id: fc.string(),
    tool_name: fc.string(),
    language: fc.constantFrom(...WorkerProtocol.Language.literals),
    entrypoint: fc.string(),
    entry_file: fc.string(),
    lease_id: token,
    capability,
    args: fc.jsonValue(),
    call_id: fc.string(),
    parent_call_id: fc.option(fc.string(), { nil: null }),
    depth: number,
    within_change: fc.boolean(),
    timeout_ms: fc.option(number, { nil: null })
  },
  { requiredKeys: ["v", "kind", "session_id", "version_id", "tool_name", "language", "entrypoint", "entry_file", "capability", "call_id", "parent_call_id", "depth", "within_change", "timeout_ms"] }
)

/** Through JSON, as the worker parses it. */
const onWire = (message: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(message))

const keys = ["v", "kind", "session_id", "version_id", "tool_name", "language", "entrypoint", "entry_file", "lease_id", "capability", "args", "call_id", "parent_call_id", "depth", "within_change", "timeout_ms", "extra"]

/** A valid invoke with one field removed, added, or given another value (possibly still valid). */
const mutated = fc.tuple(wireInvoke, fc.constantFrom(...keys), fc.option(fc.jsonValue(), { nil: undefined })).map(([message, key, value]) => {
  const copy: Record<string, unknown> = { ...onWire(message) }
  if (value === undefined) delete copy[key]
  else copy[key] = value
  return onWire(copy)
})

const schemaDecode = (parsed: Record<string, unknown>) => Envelope.decodeParsed(WorkerProtocol.InvokeRequest, parsed, "test")

describe("ExactInvoke", () => {
  it("a valid invoke decodes by hand to what the schema decodes it to", () => {
    fc.assert(
      fc.property(wireInvoke, (message) => {
        const parsed = onWire(message)
        const fast = ExactInvoke.invoke(parsed)
        const slow = schemaDecode(parsed)
        assert.isTrue(Either.isRight(slow))
        assert.isDefined(fast)
        assert.deepStrictEqual(fast, Either.getOrThrow(slow))
      }),
      { numRuns: 500 }
    )
  })

  it("anything else is left to the schema: what the hand decoder takes, the schema decodes the same", () => {
    let fast = 0
    let schemaOnly = 0
    fc.assert(
      fc.property(fc.oneof(mutated, fc.dictionary(fc.constantFrom(...keys), fc.jsonValue())), (parsed) => {
        const decoded = ExactInvoke.invoke(parsed)
        const slow = schemaDecode(parsed)
        if (decoded === undefined) {
          if (Either.isRight(slow)) schemaOnly++
          return
        }
        fast++
        assert.isTrue(Either.isRight(slow), JSON.stringify(parsed))
        assert.deepStrictEqual(decoded, Either.getOrThrow(slow))
      }),
      { numRuns: 2_000 }
    )
    assert.isAbove(fast, 0, "some mutations leave the message valid and exact")
    // an extra field is ignored by the schema, but not exact: those decode by the schema only
    assert.isAbove(schemaOnly, 0)
  })

  it("what a session sends takes the hand path", () => {
    const body = Wire.message(WorkerProtocol.worker, "invoke", {
      sessionId: Ids.sessionId("s1"),
      versionId: "v1",
      toolName: "echo",
      language: "javascript",
      entrypoint: "echo",
      entryFile: "index.js",
      leaseId: Ids.leaseId("lease1"),
      capability: "AAAAAAAAAAAAAAAAAAAAAA" as WorkerProtocol.Capability,
      callId: "c1",
      parentCallId: null,
      depth: 1,
      withinChange: false,
      timeoutMs: 1_000
    }, "args", JSON.stringify({ a: [1, 2] }))
    const parsed = Envelope.parse(new TextEncoder().encode(body), "test")
    assert.isTrue(Either.isRight(parsed))
    const fast = ExactInvoke.invoke(Either.getOrThrow(parsed))
    assert.isDefined(fast)
    assert.deepStrictEqual(fast, Either.getOrThrow(schemaDecode(Either.getOrThrow(parsed))))
    assert.deepStrictEqual(fast?.args, { a: [1, 2] })
  })

  const message = (text: string) => ({ subject: "test", data: new TextEncoder().encode(text), headers: {}, dropped: 0 })
  const deep = (levels: number) => "[".repeat(levels) + "]".repeat(levels)

  it("an ok reply decodes by hand to the value valueOf reads, up to the depth bound", () => {
    fc.assert(
      fc.property(fc.option(fc.jsonValue(), { nil: undefined }), (value) => {
        const text = Envelope.ok(value === undefined ? undefined : JSON.stringify(value))
        const fast = ExactInvoke.ok(message(text).data)
        const slow = valueOf(message(text), "test")
        assert.isDefined(fast)
        assert.deepStrictEqual(Either.right(fast?.value), slow)
      }),
      { numRuns: 500 }
    )
    const bound = Envelope.limits.valueDepth + Envelope.limits.envelopeDepth
    assert.isDefined(ExactInvoke.ok(message(Envelope.ok(deep(bound - 1))).data))
    assert.isTrue(Either.isRight(valueOf(message(Envelope.ok(deep(bound - 1))), "test")))
    assert.isUndefined(ExactInvoke.ok(message(Envelope.ok(deep(bound))).data))
    assert.isTrue(Either.isLeft(valueOf(message(Envelope.ok(deep(bound))), "test")))
  })

  it("any other reply is left to valueOf: what the hand decoder takes, valueOf reads the same", () => {
    const head = `{"v":${Envelope.version},"kind":"ok","value":`
    const replies = fc.oneof(
      fc.string(),
      fc.jsonValue().map((value) => JSON.stringify(value)),
      fc.tuple(fc.jsonValue(), fc.string()).map(([value, tail]) => `${head}${JSON.stringify(value)}${tail}`),
      fc.tuple(fc.string(), fc.jsonValue()).map(([before, value]) => `${before}${head}${JSON.stringify(value)}}`)
    )
    let fast = 0
    fc.assert(
      fc.property(replies, (text) => {
        const decoded = ExactInvoke.ok(message(text).data)
        if (decoded === undefined) return
        fast++
        assert.deepStrictEqual(valueOf(message(text), "test"), Either.right(decoded.value))
      }),
      { numRuns: 2_000 }
    )
    assert.isAbove(fast, 0)
    assert.isUndefined(ExactInvoke.ok(new Uint8Array([0xff, 0xfe])))
    assert.isUndefined(ExactInvoke.ok(message(`{"v":${Envelope.version},"kind":"error","error":{"_tag":"ToolNotFound"}}`).data))
    assert.isUndefined(ExactInvoke.ok(message(`{"v":3,"kind":"ok","value":1}`).data))
  })
})
