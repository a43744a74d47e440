import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { Protocol } from "../src/index.js"

const schemaDecode = Schema.decodeUnknownEither(Protocol.ChildMessage)
const schemaDecodeBash = Schema.decodeUnknownEither(Protocol.BashMessage)

/** Objects shaped like the warm-call messages, with keys missing, extra or of the wrong type. */
const nearMessage = fc.record(
  {
    _tag: fc.constantFrom("Result", "Log", "Failed", "Output", "Reaped", "Other"),
    invocationId: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
    value: fc.jsonValue(),
    cpuMs: fc.oneof(fc.integer(), fc.string()),
    line: fc.oneof(fc.string(), fc.boolean()),
    exitCode: fc.oneof(fc.integer(), fc.string()),
    extra: fc.jsonValue()
  },
  { requiredKeys: [] }
)

const warmMessage = fc.oneof(
  fc.record({ _tag: fc.constant("Result"), invocationId: fc.string(), value: fc.jsonValue(), cpuMs: fc.integer() }, {
    requiredKeys: ["_tag", "invocationId", "value"]
  }),
  fc.record({ _tag: fc.constant("Log"), line: fc.string(), invocationId: fc.string() }, { requiredKeys: ["_tag", "line"] }),
  fc.record({ _tag: fc.constant("Reaped"), exitCode: fc.integer() })
)

describe("Protocol", () => {
  it("decodes a child line (Node, Python, Bash) exactly as the schema does, fast path or not", () => {
    fc.assert(
      fc.property(fc.oneof(warmMessage, nearMessage), (message) => {
        const line = JSON.stringify(message)
        const cases: ReadonlyArray<readonly [unknown, Either.Either<unknown, unknown>]> = [
          [Protocol.decodeChildLine(line), schemaDecode(JSON.parse(line))],
          [Protocol.decodeBashLine(line), schemaDecodeBash(JSON.parse(line))]
        ]
        for (const [decoded, expected] of cases) {
          if (Either.isRight(expected)) expect(decoded).toEqual(expected.right)
          else expect(typeof decoded).toBe("string")
        }
      }),
      { numRuns: 1_000 }
    )
  })

  it("takes the warm-call messages as they are sent", () => {
    expect(Protocol.decodeChildLine(`{"_tag":"Result","invocationId":"7","cpuMs":12,"value":{"a":[1,null]}}`)).toEqual({
      _tag: "Result",
      invocationId: "7",
      cpuMs: 12,
      value: { a: [1, null] }
    })
    expect(Protocol.decodeChildLine(`{"_tag":"Result","invocationId":"8","value":null}`)).toEqual({ _tag: "Result", invocationId: "8", value: null })
    expect(Protocol.decodeChildLine(`{"_tag":"Log","line":"hi","invocationId":"8"}`)).toEqual({ _tag: "Log", line: "hi", invocationId: "8" })
    expect(Protocol.decodeChildLine(`{"_tag":"Result","invocationId":8,"value":1}`)).toMatch(/^not a protocol message/)
    expect(Protocol.decodeChildLine(`{"_tag":"Result","invocationId":"8"`)).toMatch(/^not JSON/)
    expect(Protocol.decodeBashLine(`{"_tag":"Output","invocationId":"3","exitCode":0}`)).toMatch(/^not a protocol message/)
    expect(Protocol.decodeBashLine(`{"_tag":"Reaped","exitCode":137}`)).toEqual({ _tag: "Reaped", exitCode: 137 })
    expect(Protocol.decodeBashLine(`{"_tag":"Reaped","exitCode":"0"}`)).toMatch(/^not a protocol message/)
  })
})
