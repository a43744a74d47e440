/**
 * The envelope and the wire errors on their own: every error the union holds survives JSON as the
 * same class with the same fields, a tool's own thrown value becomes ToolFailure, what a peer
 * sends that this version cannot decode is a ProtocolError, and values are bounded before they are
 * sent.
 */
import { HarnessError, JitHarnessSnapshot, SharedCatalog } from "@jitbox/core"
import { SandboxError } from "@jitbox/sandbox"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as CoordinatorProtocol from "../src/CoordinatorProtocol.js"
import * as Envelope from "../src/Envelope.js"
import * as Ids from "../src/Ids.js"
import * as MemoryTransport from "../src/MemoryTransport.js"
import * as Protocol from "../src/Protocol.js"
import * as RemoteSession from "../src/RemoteSession.js"
import * as Subject from "../src/Subject.js"
import * as SessionProtocol from "../src/SessionProtocol.js"
import { OwnershipError } from "../src/SessionOwnership.js"
import { isProtocolError, ProtocolError } from "../src/ProtocolError.js"
import { RemoteExecutionError } from "../src/RemoteExecutionError.js"
import { isTransportError, TransportError } from "../src/TransportError.js"
import * as WireError from "../src/WireError.js"

const subject = "jitbox.test.session.s1.call"
const encoder = new TextEncoder()

/** Through the wire and back: encode, JSON text, parse, decode. */
const roundTrip = (error: WireError.WireError): WireError.WireError => {
  const text = Envelope.error(error)
  const parsed = Envelope.parse(encoder.encode(text), subject)
  if (Either.isLeft(parsed)) throw parsed.left
  return WireError.decode(parsed.right.error, subject)
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
  new SharedCatalog.CatalogError({ name: "slugify", reason: "NotApproved", detail: "version v_1 is proposed; only approved versions load" }),
  new SandboxError.SandboxError({ reason: "ChildExited", toolName: "t", detail: "the child exited" }),
  new TransportError({ reason: "Busy", subject, detail: "64 requests run" }),
  new ProtocolError({ reason: "Version", subject, detail: "the message is of protocol version 1; this runtime speaks version 2" }),
  new RemoteExecutionError({ reason: "WorkerLost", subject, toolName: "slow", callId: "c1", detail: "no heartbeat in 3000 ms" }),
  new OwnershipError({ reason: "Held", sessionId: "s1", detail: "host-a holds it" })
]

describe("wire errors", () => {
  it("the union holds every harness error, ToolFailure, SnapshotError, CatalogError, SandboxError, TransportError, ProtocolError, RemoteExecutionError and OwnershipError", () => {
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
      v: 2,
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
    assert.isTrue(isProtocolError(decoded) && decoded.reason === "Decode")
    assert.include((decoded as TransportError).detail, "QuantumError: entangled")
    const partial = WireError.decode({ _tag: "ToolNotFound" }, subject)
    assert.isTrue(isProtocolError(partial) && partial.reason === "Decode")
  })
})

describe("the envelope", () => {
  it("call and reply messages carry v and kind; a spliced value is the same JSON", () => {
    const json = Envelope.encodeValue({ left: 1, right: 2 }, "the arguments", subject)
    assert.deepStrictEqual(json, Either.right(`{"left":1,"right":2}`))
    const call = Envelope.withValue("call", { name: "add", call_id: "toolu_1" }, "args", Either.getOrThrow(json))
    assert.deepStrictEqual(JSON.parse(call), { v: 2, kind: "call", name: "add", call_id: "toolu_1", args: { left: 1, right: 2 } })
    const decoded = Envelope.decodeKind(SessionProtocol.callMessages, encoder.encode(call), subject)
    assert.deepStrictEqual(decoded, Either.right({ v: 2, kind: "call", name: "add", call_id: "toolu_1", args: { left: 1, right: 2 } }))
    assert.deepStrictEqual(JSON.parse(Envelope.ok("3")), { v: 2, kind: "ok", value: 3 })
    assert.deepStrictEqual(JSON.parse(Envelope.ok()), { v: 2, kind: "ok" })
  })

  it("values are bounded before they are sent: JT-LIM-02, depth, JSON", () => {
    const refusal = (value: unknown, what = "v"): TransportError => Either.flip(Envelope.encodeValue(value, what, subject)).pipe(Either.getOrThrow)
    const exact = "x".repeat(262_144 - 2)
    assert.deepStrictEqual(Envelope.encodeValue(exact, "v", subject), Either.right(JSON.stringify(exact)))
    const over = refusal("x".repeat(262_144 - 1), "the arguments of 'echo'")
    assert.strictEqual(over.reason, "PayloadTooLarge")
    assert.include(over.detail, "the arguments of 'echo': 262145 bytes")
    // Multi-byte characters count as bytes, not characters.
    assert.strictEqual(refusal("é".repeat(131_100)).reason, "PayloadTooLarge")
    assert.strictEqual(refusal(JSON.parse(`${"[".repeat(129)}${"]".repeat(129)}`)).reason, "PayloadTooLarge")
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    assert.strictEqual(refusal(cyclic).reason, "InvalidArgument")
    assert.deepStrictEqual(Envelope.encodeValue(undefined, "v", subject), Either.right(undefined))
  })

  it("what a peer sends that does not decode is a Decode error naming the fault", () => {
    const decode = (text: string) => {
      const decoded = Envelope.decodeKind(SessionProtocol.manageRequests, encoder.encode(text), subject)
      return Either.isLeft(decoded)
        ? decoded.left.detail
        : `decoded: ${JSON.stringify(decoded.right)}`
    }
    assert.include(decode("{"), "not JSON")
    assert.include(decode("null"), "not a JSON object")
    assert.include(decode(`{"v":"1","kind":"list_tools"}`), "version \"1\"")
    const version1 = Envelope.decodeKind(SessionProtocol.manageRequests, encoder.encode(`{"v":1,"kind":"list_tools"}`), subject)
    assert.isTrue(Either.isLeft(version1) && version1.left._tag === "ProtocolError" && version1.left.reason === "Version")
    assert.include(decode(`{"v":2,"kind":"toString"}`), "kind: expected one of")
    assert.include(decode(`{"v":2,"kind":"profile","limit":"ten"}`), "limit")
    assert.include(decode(`${"[".repeat(200)}${"]".repeat(200)}`), "nests deeper")
    assert.strictEqual(decode(`{"v":2,"kind":"list_tools","extra":true}`), `decoded: {"v":2,"kind":"list_tools"}`)
  })
})

describe("the protocol tables", () => {
  it("a coordinator request is encoded from its table: camelCase in code, snake_case on the wire", () => {
    const admit = Schema.encodeSync(CoordinatorProtocol.AdmitRequest)({
      sessionId: Ids.sessionId("s1"),
      profile: "standard",
      deploymentConsent: true,
      contractVersion: "2"
    })
    assert.deepStrictEqual(admit, { session_id: "s1", profile: "standard", deployment_consent: true, contract_version: "2" })
    const renew = Protocol.requests(CoordinatorProtocol.operations).renew
    assert.deepStrictEqual(
      Schema.decodeUnknownSync(renew)({ v: 2, kind: "renew", session_id: "s1", lease_id: "lease-1", more: false }),
      { v: 2, kind: "renew", sessionId: Ids.sessionId("s1"), leaseId: Ids.leaseId("lease-1"), more: false }
    )
  })

  it("the faces have one method per operation, named by the table", () => {
    const invoked: Array<string> = []
    const face = Protocol.facade(SessionProtocol.manage, (kind, payload) => {
      invoked.push(`${kind} ${JSON.stringify(payload)}`)
      return Promise.resolve(undefined as never)
    })
    assert.deepStrictEqual(Object.keys(face).sort(), Object.values(SessionProtocol.manage).map((op) => op.method).sort())
    void face.unloadTool("twice")
    void face.profile("twice", { offset: 2 })
    assert.deepStrictEqual(invoked, [`unload_tool {"name":"twice"}`, `profile {"name":"twice","offset":2}`])
  })

  it.effect("a server derived from a table answers an operation sent to another operation's subject with a Decode error and runs nothing", () =>
    Effect.gen(function*() {
      let ran = 0
      const serve = Protocol.serve(CoordinatorProtocol.operations, {
        admit: () => Promise.reject(new Error("not here")),
        renew: () => Promise.reject(new Error("not here")),
        release: () => Promise.reject(new Error("not here")),
        policy: () => {
          ran++
          return Promise.reject(new Error("not here"))
        },
        verify: () => Promise.reject(new Error("not here")),
        ran: () => Promise.reject(new Error("not here")),
        workers: () => [],
        leases: () => Promise.reject(new Error("not here"))
      }, { kindOf: (subject) => Subject.coordinatorParts(subject)?.op })
      const reply = yield* Effect.promise(async () =>
        String(await serve({ subject: "jitbox.demo.coordinator.operator.workers", data: encoder.encode(`{"v":2,"kind":"policy","profile":"x"}`), headers: {}, signal: new AbortController().signal }))
      )
      assert.include(reply, `"reason":"Decode"`)
      assert.include(reply, "kind 'policy' sent to 'workers'")
      assert.strictEqual(ran, 0)
    }))

  it.effect("a Promise method rejects with the tagged error itself, never a FiberFailure", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const transport = yield* Scope.extend(MemoryTransport.make(), scope)
      yield* Scope.close(scope, Exit.void)
      const session = new RemoteSession.RemoteSession(transport, "s1", { prefix: Subject.prefix(Ids.namespace("demo")) })
      const listened = yield* Effect.promise(() => session.listen(() => undefined).then(() => undefined, (error: unknown) => error))
      assert.isTrue(isTransportError(listened))
      assert.instanceOf(listened, TransportError)
      const listed = yield* Effect.promise(() => session.listTools().then(() => undefined, (error: unknown) => error))
      assert.instanceOf(listed, TransportError)
    }))
})
