/**
 * The envelope and the wire errors on their own: every error the union holds survives JSON as the
 * same class with the same fields, a tool's own thrown value becomes ToolFailure, what a peer
 * sends that this version cannot decode is a Decode error, and values are bounded before they are
 * sent.
 */
import { HarnessError, JitHarnessSnapshot } from "@jitbox/core"
import { SandboxError } from "@jitbox/sandbox"
import { assert, describe, it } from "@effect/vitest"
import * as Envelope from "../src/Envelope.js"
import * as SessionProtocol from "../src/SessionProtocol.js"
import { OwnershipError } from "../src/SessionOwnership.js"
import { isTransportError, TransportError } from "../src/TransportError.js"
import * as WireError from "../src/WireError.js"

const subject = "jitbox.test.session.s1.call"
const encoder = new TextEncoder()

/** Through the wire and back: encode, JSON text, parse, decode. */
const roundTrip = (error: WireError.WireError): WireError.WireError => {
  const text = Envelope.error(error)
  const parsed = Envelope.parse(encoder.encode(text), subject)
  if (parsed instanceof TransportError) throw parsed
  return WireError.decode(parsed.error, subject)
}

const everyError: ReadonlyArray<WireError.WireError> = [
  new HarnessError.ToolNotFound({ name: "nope" }),
  new HarnessError.ToolRejected({ name: "t", reason: "Unloaded", detail: "tool 't' is unloaded" }),
  new HarnessError.ValidationError({ name: "add", issues: "/left must be integer" }),
  new HarnessError.ToolDefinitionError({ reason: "MissingDescription", detail: "no description" }),
  new HarnessError.PackageError({ name: "t", reason: "CompileError", path: "index.ts", detail: "unexpected token" }),
  new HarnessError.NameConflict({ name: "add", reason: "BaseTool" }),
  new HarnessError.InvalidToolRequest({ reason: "MissingField", detail: "source: is missing" }),
  new HarnessError.ConfigError({ option: "sessionId", detail: "bad" }),
  new HarnessError.ToolCancelled({ name: "t", callId: "c1" }),
  new HarnessError.PolicyViolation({ name: "t", reason: "ConcurrencyLimit", detail: "too many" }),
  new HarnessError.ToolTimeout({ name: "t", seconds: 30 }),
  new HarnessError.HarnessReleased({ sessionId: "s1", operation: "calling 't'" }),
  new HarnessError.ToolFailure({ toolName: "t", errorType: "ValueError", detail: "bad value", cause: undefined }),
  new JitHarnessSnapshot.SnapshotError({ reason: "Activation", detail: "does not compile" }),
  new SandboxError.SandboxError({ reason: "ChildExited", toolName: "t", detail: "the child exited" }),
  new TransportError({ reason: "Busy", subject, detail: "64 requests run" }),
  new OwnershipError({ reason: "Held", sessionId: "s1", detail: "host-a holds it" })
]

describe("wire errors", () => {
  it("the union holds every harness error, ToolFailure, SnapshotError, SandboxError, TransportError and OwnershipError", () => {
    assert.deepStrictEqual(
      WireError.WireError.members.map((member) => member._tag).sort(),
      everyError.map((error) => error._tag).sort()
    )
  })

  it("each crosses JSON as the same class with the same fields and message", () => {
    for (const error of everyError) {
      const decoded = roundTrip(error)
      assert.strictEqual(decoded.constructor, error.constructor, error._tag)
      assert.deepStrictEqual({ ...decoded }, { ...error }, error._tag)
      assert.strictEqual(decoded.message, error.message, error._tag)
    }
  })

  it("on the wire an error is its tag, its fields and its message; a ToolFailure carries no cause", () => {
    const failure = WireError.fromThrown("explode", new RangeError("too far"))
    const wire = JSON.parse(Envelope.error(failure)) as Record<string, unknown>
    assert.deepStrictEqual(wire, {
      v: 1,
      kind: "error",
      error: { _tag: "ToolFailure", toolName: "explode", errorType: "RangeError", detail: "too far", message: "too far" }
    })
    const decoded = roundTrip(failure) as HarnessError.ToolFailure
    assert.strictEqual(decoded.name, "RangeError")
    assert.isUndefined(decoded.cause)
  })

  it("a tool's own thrown value becomes ToolFailure; a value that only claims a harness tag does too", () => {
    class QuotaError extends Error {
      override name = "QuotaError"
    }
    assert.deepInclude(WireError.fromThrown("t", new QuotaError("over")), { errorType: "QuotaError", detail: "over" })
    assert.deepInclude(WireError.fromThrown("t", "a string"), { _tag: "ToolFailure", errorType: "string", detail: null })
    const forged = WireError.fromThrown("t", { _tag: "ToolNotFound" })
    assert.strictEqual(forged._tag, "ToolFailure")
    const genuine = WireError.fromThrown("t", { _tag: "ToolNotFound", name: "x" })
    assert.instanceOf(genuine, HarnessError.ToolNotFound)
  })

  it("an error this version does not know is a Decode error quoting its tag and message", () => {
    const decoded = WireError.decode({ _tag: "QuantumError", message: "entangled" }, subject)
    assert.isTrue(isTransportError(decoded) && decoded.reason === "Decode")
    assert.include((decoded as TransportError).detail, "QuantumError: entangled")
    const partial = WireError.decode({ _tag: "ToolNotFound" }, subject)
    assert.isTrue(isTransportError(partial) && partial.reason === "Decode")
  })
})

describe("the envelope", () => {
  it("call and reply messages carry v and kind; a spliced value is the same JSON", () => {
    const json = Envelope.encodeValue({ left: 1, right: 2 }, "the arguments", subject)
    assert.strictEqual(json, `{"left":1,"right":2}`)
    const call = Envelope.withValue("call", { name: "add", call_id: "toolu_1" }, "args", json as string)
    assert.deepStrictEqual(JSON.parse(call), { v: 1, kind: "call", name: "add", call_id: "toolu_1", args: { left: 1, right: 2 } })
    const decoded = Envelope.decodeKind(SessionProtocol.callMessages, encoder.encode(call), subject)
    assert.deepStrictEqual(decoded, { v: 1, kind: "call", name: "add", call_id: "toolu_1", args: { left: 1, right: 2 } })
    assert.deepStrictEqual(JSON.parse(Envelope.ok("3")), { v: 1, kind: "ok", value: 3 })
    assert.deepStrictEqual(JSON.parse(Envelope.ok()), { v: 1, kind: "ok" })
  })

  it("values are bounded before they are sent: JT-LIM-02, depth, JSON", () => {
    const exact = "x".repeat(262_144 - 2)
    assert.strictEqual(Envelope.encodeValue(exact, "v", subject), JSON.stringify(exact))
    const over = Envelope.encodeValue("x".repeat(262_144 - 1), "the arguments of 'echo'", subject)
    assert.isTrue(isTransportError(over) && over.reason === "PayloadTooLarge")
    assert.include((over as TransportError).detail, "the arguments of 'echo': 262145 bytes")
    // Multi-byte characters count as bytes, not characters.
    const wide = Envelope.encodeValue("é".repeat(131_100), "v", subject)
    assert.isTrue(isTransportError(wide) && wide.reason === "PayloadTooLarge")
    const deep = Envelope.encodeValue(JSON.parse(`${"[".repeat(129)}${"]".repeat(129)}`), "v", subject)
    assert.isTrue(isTransportError(deep) && deep.reason === "PayloadTooLarge")
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const notJson = Envelope.encodeValue(cyclic, "v", subject)
    assert.isTrue(isTransportError(notJson) && notJson.reason === "InvalidArgument")
    assert.isUndefined(Envelope.encodeValue(undefined, "v", subject))
  })

  it("what a peer sends that does not decode is a Decode error naming the fault", () => {
    const decode = (text: string) => {
      const decoded = Envelope.decodeKind(SessionProtocol.manageRequests, encoder.encode(text), subject)
      return isTransportError(decoded) && decoded.reason === "Decode" ? decoded.detail : `decoded: ${JSON.stringify(decoded)}`
    }
    assert.include(decode("{"), "not JSON")
    assert.include(decode("null"), "not a JSON object")
    assert.include(decode(`{"v":"1","kind":"list_tools"}`), "version \"1\"")
    assert.include(decode(`{"v":1,"kind":"toString"}`), "kind: expected one of")
    assert.include(decode(`{"v":1,"kind":"profile","limit":"ten"}`), "limit")
    assert.include(decode(`${"[".repeat(200)}${"]".repeat(200)}`), "nests deeper")
    assert.strictEqual(decode(`{"v":1,"kind":"list_tools","extra":true}`), `decoded: {"v":1,"kind":"list_tools"}`)
  })
})
