/**
 * The compact JSON Schemas the model sees for create_tool and update_tool (hand-written, because
 * they keep tokens low) and the effect Schema that decodes every request must accept and reject
 * the same inputs: a property test over requests built from each declared field's valid and
 * invalid values, missing required fields, and fields nobody declared.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { managementTools } from "../src/ManagementTools.js"
import * as ToolRequest from "../src/ToolRequest.js"
import * as Validator from "../src/Validator.js"

const json = fc.jsonValue({ maxDepth: 2 })
const stringMap = fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 3 })
const object = fc.dictionary(fc.string({ maxLength: 6 }), json, { maxKeys: 3 })
const example = fc.oneof(
  fc.record({ input: object, expected_output: json }),
  fc.record({ input: json, expected_output: json }, { requiredKeys: [] })
)

/** Values a field may take: mostly of its type, now and then something else. */
const mostly = (valid: fc.Arbitrary<unknown>, ...invalid: Array<fc.Arbitrary<unknown>>) =>
  fc.oneof({ arbitrary: valid, weight: 12 }, ...invalid.map((arbitrary) => ({ arbitrary, weight: 1 })))

const fieldValues: Record<string, fc.Arbitrary<unknown>> = {
  source: mostly(fc.string({ maxLength: 8 }), json),
  name: mostly(fc.string({ maxLength: 8 }), json),
  kind: mostly(fc.constantFrom("code", "text"), fc.constant("other"), json),
  entrypoint: mostly(fc.string({ maxLength: 8 }), json),
  description: mostly(fc.string({ maxLength: 8 }), json),
  language: mostly(fc.constantFrom("typescript", "javascript", "python", "bash"), fc.constant("ruby"), json),
  files: mostly(stringMap, fc.dictionary(fc.string({ maxLength: 4 }), json, { minKeys: 1, maxKeys: 2 }), json),
  guidelines: mostly(fc.string({ maxLength: 8 }), json),
  parameters: mostly(object, json),
  examples: mostly(fc.array(example, { minLength: 1, maxLength: 8 }), fc.constant([]), fc.array(example, { minLength: 9, maxLength: 10 }), json),
  markdown: mostly(fc.string({ maxLength: 8 }), json),
  remove: mostly(fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }), fc.array(json, { minLength: 1, maxLength: 2 }), json),
  duration: json,
  undeclared: json
}

/** Requests over `fields`; the required field is usually there. */
const requests = (fields: ReadonlyArray<string>, required: string) => {
  const others = fields.filter((field) => field !== required)
  const rest = fc.record(Object.fromEntries(others.map((field) => [field, fieldValues[field]!])), { requiredKeys: [] })
  return fc.oneof(
    { arbitrary: fc.tuple(rest, fieldValues[required]!).map(([request, value]) => ({ ...request, [required]: value })), weight: 9 },
    { arbitrary: rest, weight: 1 }
  )
}

const check = (tool: "create_tool" | "update_tool", fields: ReadonlyArray<string>, required: string, schema: Schema.Schema.AnyNoContext) => {
  const definition = managementTools.find((candidate) => candidate.name === tool)!
  const validate = Validator.compile(definition.parameters, "draft-07")
  const decode = Schema.decodeUnknownEither(schema, { exact: true, onExcessProperty: "ignore" })
  let accepted = 0
  fc.assert(
    fc.property(requests(fields, required), (request) => {
      const byJsonSchema = validate(request) === undefined
      const byDecoder = Either.isRight(decode(request))
      expect(byDecoder).toBe(byJsonSchema)
      if (byJsonSchema) accepted++
    }),
    { numRuns: 3_000 }
  )
  // both verdicts are exercised, or the property says nothing
  expect(accepted).toBeGreaterThan(300)
  expect(accepted).toBeLessThan(2_700)
}

describe("one decoder for tool requests", () => {
  it("create_tool's JSON Schema and the decoder accept and reject the same requests", () => {
    check("create_tool", [
      "source",
      "name",
      "kind",
      "entrypoint",
      "description",
      "language",
      "files",
      "guidelines",
      "parameters",
      "examples",
      "duration",
      "undeclared"
    ], "source", ToolRequest.CreateToolFields)
  })

  it("update_tool's JSON Schema and the decoder accept and reject the same requests", () => {
    check("update_tool", [
      "name",
      "source",
      "markdown",
      "files",
      "remove",
      "entrypoint",
      "description",
      "guidelines",
      "parameters",
      "examples",
      "kind",
      "language",
      "duration",
      "undeclared"
    ], "name", ToolRequest.UpdateToolFields)
  })

  it("what the JSON Schemas cannot say (duration, an update's kind) is checked once, for both callers", () => {
    expect(() => ToolRequest.decodeCreate({ source: "x", duration: "forever" })).toThrow(/duration must be "short" or "long"/)
    expect(() => ToolRequest.decodeUpdate({ name: "x", kind: 3 })).toThrow(/kind must be "code" or "text"/)
    expect(() => ToolRequest.decodeCreate({ kind: "code" })).toThrow(expect.objectContaining({ reason: "MissingField" }))
  })
})
