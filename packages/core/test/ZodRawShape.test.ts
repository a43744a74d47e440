/**
 * A zod raw shape (`parameters: { a: z.number() }`, the MCP SDK's style) is accepted and behaves
 * exactly as `z.object(shape)`: the same JSON Schema, a closed object, the same accepted and
 * refused arguments, and a handler argument type inferred from the shape. Core does not import
 * zod at run time: the shape is assembled from each property's own JSON Schema.
 */
import { describe, expect, expectTypeOf, it } from "vitest"
import { z } from "zod"
import { z as z3 } from "zod/v3"
import { ToolDefinitionError } from "../src/HarnessError.js"
import * as ParameterSchema from "../src/ParameterSchema.js"
import { tool, type ToolDefinition } from "../src/Tool.js"

const spec = { description: "Add two integers, with an optional label.", guidelines: "Use for integer addition." }

const accepts = (definition: ToolDefinition, args: unknown) => definition.validate(args) === undefined

const cases: ReadonlyArray<readonly [string, unknown]> = [
  ["both integers", { left: 1, right: 2 }],
  ["with the optional label", { left: -4, right: 0, label: "sum" }],
  ["with the defaulted scale", { left: 1, right: 2, scale: 3 }],
  ["a missing required field", { left: 1 }],
  ["a string for an integer", { left: "1", right: 2 }],
  ["a fraction for an integer", { left: 1.5, right: 2 }],
  ["null for an integer", { left: null, right: 2 }],
  ["a number for the string label", { left: 1, right: 2, label: 3 }],
  ["an undeclared argument", { left: 1, right: 2, extra: true }],
  ["an array instead of an object", [1, 2]],
  ["null instead of an object", null],
  ["a nested object", { left: 1, right: 2, tags: { color: "red" } }],
  ["a nested object with an undeclared key", { left: 1, right: 2, tags: { color: "red", size: 1 } }],
  ["an enum value", { left: 1, right: 2, mode: "fast" }],
  ["a value outside the enum", { left: 1, right: 2, mode: "slow" }]
]

describe("zod 4 raw shapes", () => {
  const shape = {
    left: z.number().int(),
    right: z.number().int(),
    label: z.string().optional(),
    scale: z.number().default(1),
    tags: z.object({ color: z.string() }).optional(),
    mode: z.enum(["fast", "exact"]).optional()
  }
  const fromShape = tool({ ...spec, parameters: shape }, ({ left, right }) => left + right)
  const fromObject = tool({ ...spec, parameters: z.object(shape) }, ({ left, right }) => left + right)

  it("normalises to the JSON Schema of z.object(shape): closed, optional and defaulted fields not required", () => {
    expect(fromShape.parameters).toEqual(fromObject.parameters)
    expect(fromShape.parameters).toMatchObject({ type: "object", required: ["left", "right"], additionalProperties: false })
    expect(ParameterSchema.normalize(shape).source).toBe("zod-shape")
  })

  it.each(cases)("validates %s as z.object(shape) does", (_, args) => {
    expect(accepts(fromShape, args)).toBe(accepts(fromObject, args))
  })

  it("infers the handler's argument type from the shape", () => {
    tool({ ...spec, parameters: shape }, (args) => {
      expectTypeOf(args).toEqualTypeOf<{
        left: number
        right: number
        label?: string | undefined
        scale?: number | undefined
        tags?: { color: string } | undefined
        mode?: "fast" | "exact" | undefined
      }>()
      return args.left + args.right
    })
    // @ts-expect-error: `left` is a number
    tool({ ...spec, parameters: { left: z.number() } }, ({ left }: { left: string }) => left)
  })

  it("keeps recursive and reused property schemas valid ($ref is re-rooted under the property)", () => {
    interface Node {
      readonly name: string
      readonly children: ReadonlyArray<Node>
    }
    const Node: z.ZodType<Node, Node> = z.object({ name: z.string(), children: z.array(z.lazy(() => Node)) })
    const definition = tool({ ...spec, parameters: { tree: Node, count: z.number() } }, ({ tree }) => tree.name)
    expect(accepts(definition, { tree: { name: "a", children: [{ name: "b", children: [] }] }, count: 1 })).toBe(true)
    expect(accepts(definition, { tree: { name: "a", children: [{ name: 2, children: [] }] }, count: 1 })).toBe(false)
    expect(accepts(definition, { tree: { name: "a", children: [{ name: "b" }] }, count: 1 })).toBe(false)
  })

  it("a field with a transform stays required, as in z.object's input schema", () => {
    const trimmed = { text: z.string().transform((s) => s.trim()) }
    expect(tool({ ...spec, parameters: trimmed }, () => 1).parameters)
      .toEqual(tool({ ...spec, parameters: z.object(trimmed) }, () => 1).parameters)
  })
})

describe("zod 3 raw shapes", () => {
  const shape = {
    left: z3.number().int(),
    right: z3.number().int(),
    label: z3.string().optional(),
    scale: z3.number().default(1),
    tags: z3.object({ color: z3.string() }).optional(),
    mode: z3.enum(["fast", "exact"]).optional()
  }
  const fromShape = tool({ ...spec, parameters: shape }, ({ left, right }) => left + right)
  const fromObject = tool({ ...spec, parameters: z3.object(shape) }, ({ left, right }) => left + right)

  it("normalises to a closed object with only the required fields required", () => {
    expect(fromShape.parameters).toMatchObject({ type: "object", required: ["left", "right"], additionalProperties: false })
    expect(Object.keys(fromShape.parameters.properties as object)).toEqual(Object.keys(shape))
  })

  it.each(cases)("validates %s as z3.object(shape) does", (_, args) => {
    expect(accepts(fromShape, args)).toBe(accepts(fromObject, args))
  })

  it("keeps a schema reused inside a field valid (zod-to-json-schema's $ref is re-rooted)", () => {
    const point = z3.object({ x: z3.number() })
    const definition = tool({ ...spec, parameters: { segment: z3.object({ from: point, to: point }) } }, () => 1)
    expect(accepts(definition, { segment: { from: { x: 1 }, to: { x: 2 } } })).toBe(true)
    expect(accepts(definition, { segment: { from: { x: 1 }, to: { x: "2" } } })).toBe(false)
  })

  it("infers the handler's argument type from a zod 3 shape", () => {
    tool({ ...spec, parameters: shape }, (args) => {
      expectTypeOf(args.left).toEqualTypeOf<number>()
      expectTypeOf(args.label).toEqualTypeOf<string | undefined>()
      return 1
    })
  })
})

describe("what is not a raw shape", () => {
  it("a shape mixing zod schemas and other values is a ToolDefinitionError naming the key", () => {
    const error = (() => {
      try {
        tool({ ...spec, parameters: { left: z.number(), right: { type: "integer" } } as never }, () => 1)
      } catch (e) {
        return e
      }
    })()
    expect(error).toBeInstanceOf(ToolDefinitionError)
    expect((error as ToolDefinitionError).reason).toBe("InvalidParameters")
    expect((error as ToolDefinitionError).detail).toMatch(/'right' is not a zod schema/)
  })

  it("plain JSON Schema is still JSON Schema", () => {
    const schema = { type: "object", properties: { left: { type: "integer" } }, required: ["left"] }
    expect(ParameterSchema.normalize(schema)).toEqual({ schema, dialect: "draft-07", source: "json-schema" })
  })
})
