/**
 * Normalises a tool's `parameters` to plain JSON Schema: an effect Schema (`JSONSchema.make`),
 * a zod 4 schema (its native `toJSONSchema`), a zod 3 schema (`zod-to-json-schema`, which only
 * understands zod 3), a zod raw shape (`{ a: z.number() }`, the MCP SDK's style, read as
 * `z.object(shape)`), or JSON Schema as data.
 *
 * @since 0.1.0
 */
import * as JSONSchema from "effect/JSONSchema"
import * as Schema from "effect/Schema"
import type { zodToJsonSchema } from "zod-to-json-schema"
import { ToolDefinitionError } from "./HarnessError.js"
import { isJsonSchemaObject, type JsonSchema } from "./JsonSchema.js"
import { coreRequire } from "./internal/coreRequire.js"

/** Which JSON Schema dialect a normalised schema is written in. @since 0.1.0 @category models */
export type Dialect = "draft-07" | "2020-12"

/** @since 0.1.0 @category models */
export interface Normalized {
  readonly schema: JsonSchema
  readonly dialect: Dialect
  readonly source: "effect" | "zod4" | "zod3" | "zod-shape" | "json-schema"
}

/** A zod 4 or zod 3 schema, as far as core can tell without importing zod. @since 0.1.0 @category models */
export type ZodSchemaLike = { readonly _zod: unknown } | { readonly _def: unknown }

/**
 * A zod raw shape, `{ a: z.number(), b: z.string().optional() }` (the MCP SDK's style): read as
 * `z.object(shape)`, a closed object whose non-optional fields are required.
 *
 * @since 0.1.0
 * @category models
 */
export type ZodRawShape = { readonly [key: string]: ZodSchemaLike }

/** Anything `tool({ parameters })` accepts. @since 0.1.0 @category models */
export type ParameterInput = Schema.Schema.Any | JsonSchema | ZodRawShape | ZodSchemaLike

const isZod4 = (u: object): u is { toJSONSchema: (params: object) => unknown } =>
  "_zod" in u && typeof (u as { toJSONSchema?: unknown }).toJSONSchema === "function"

const isZod3 = (u: object): boolean =>
  "_def" in u && !("_zod" in u) && typeof (u as { safeParse?: unknown }).safeParse === "function"

/**
 * zod 4 leaves `additionalProperties` out of a plain (stripping) `z.object` in `io: "input"` mode,
 * so undeclared arguments would pass, while the same contract written as an effect Schema, a zod 3
 * schema or JSON Schema rejects them. Close such objects so all four sources validate alike.
 */
const closeStrippedObjects = (ctx: { readonly zodSchema: unknown; readonly jsonSchema: Record<string, unknown> }): void => {
  const def = (ctx.zodSchema as { _zod?: { def?: { type?: unknown; catchall?: unknown } } })._zod?.def
  if (def?.type === "object" && def.catchall === undefined && ctx.jsonSchema.additionalProperties === undefined) {
    ctx.jsonSchema.additionalProperties = false
  }
}

const zod4JsonSchema = (schema: { toJSONSchema: (params: object) => unknown }): JsonSchema =>
  withoutMetaSchema(schema.toJSONSchema({ target: "draft-7", io: "input", override: closeStrippedObjects }) as JsonSchema)

/**
 * zod-to-json-schema is loaded with the first zod 3 schema (its CommonJS build, so synchronously;
 * it reads a schema's type names only, so a schema of the ESM zod converts the same): a program
 * that gives none does not pay for it.
 */
const zod3JsonSchema = (schema: object): JsonSchema => {
  const { zodToJsonSchema: convert } = coreRequire("zod-to-json-schema") as { readonly zodToJsonSchema: typeof zodToJsonSchema }
  return withoutMetaSchema(convert(schema as Parameters<typeof zodToJsonSchema>[0], { target: "jsonSchema7" }) as unknown as JsonSchema)
}

const isPlainObject = (u: object): boolean => {
  const proto = Object.getPrototypeOf(u)
  return proto === Object.prototype || proto === null
}

const isZodLike = (u: unknown): boolean => typeof u === "object" && u !== null && (isZod4(u) || isZod3(u))

/**
 * Whether a field is optional in `z.object`'s input: zod 4 reads `_zod.optin`, looking through a
 * transform's pipe and a catch to the declared input type (as its own JSON Schema emitter does);
 * zod 3 asks the field (`isOptional`, true for optional and defaulted fields).
 */
const optionalInput = (field: object): boolean => {
  if (isZod4(field)) {
    const optin = (schema: unknown): unknown => {
      const zod = (schema as { _zod: { def: Record<string, any>; optin?: unknown } })._zod
      const def = zod.def
      if (def.type === "pipe" && def.in?._zod?.traits?.has?.("$ZodTransform")) return optin(def.out)
      if (def.type === "catch") return optin(def.innerType)
      return zod.optin
    }
    return optin(field) !== undefined
  }
  return (field as { isOptional: () => boolean }).isOptional() === true
}

const escapePointer = (key: string): string => encodeURIComponent(key.replaceAll("~", "~0").replaceAll("/", "~1"))

/** Data keywords whose values are instances, not schemas: a `$ref` inside them is not a reference. */
const dataKeywords = new Set(["const", "enum", "default", "examples"])

/**
 * A property's JSON Schema moved under `properties/<key>`: local references (`#`, `#/definitions/…`)
 * were written against the property's own root and now point below it.
 */
const reRooted = (schema: unknown, prefix: string): unknown => {
  if (Array.isArray(schema)) return schema.map((item) => reRooted(item, prefix))
  if (typeof schema !== "object" || schema === null) return schema
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$ref" && typeof value === "string" && value.startsWith("#")) {
      out[key] = value === "#" || value.startsWith("#/") ? prefix + value.slice(1) : value
    } else {
      out[key] = dataKeywords.has(key) ? value : reRooted(value, prefix)
    }
  }
  return out
}

/**
 * The JSON Schema of `z.object(shape)` without zod at run time: each field converted on its own
 * (zod 4 natively, zod 3 through zod-to-json-schema), assembled as a closed object.
 */
const rawShapeSchema = (shape: Readonly<Record<string, object>>): JsonSchema => {
  const properties: Record<string, unknown> = {}
  const required: Array<string> = []
  for (const [key, field] of Object.entries(shape)) {
    const schema = isZod4(field) ? zod4JsonSchema(field) : zod3JsonSchema(field)
    Object.defineProperty(properties, key, {
      value: reRooted(schema, `#/properties/${escapePointer(key)}`),
      enumerable: true,
      writable: true,
      configurable: true
    })
    if (!optionalInput(field)) required.push(key)
  }
  return {
    type: "object",
    properties,
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false
  }
}

/**
 * A plain object some of whose values are zod schemas is meant as a raw shape: all of them must be.
 * `undefined` when the object is not a raw shape at all.
 */
const asRawShape = (input: object): Readonly<Record<string, object>> | undefined => {
  if (!isPlainObject(input)) return undefined
  const entries = Object.entries(input)
  if (entries.length === 0 || !entries.some(([, value]) => isZodLike(value))) return undefined
  const stray = entries.find(([, value]) => !isZodLike(value))
  if (stray !== undefined) {
    throw new ToolDefinitionError({
      reason: "InvalidParameters",
      detail: `parameters look like a zod raw shape, but '${stray[0]}' is not a zod schema: ` +
        `give every field as a zod schema, or write the whole schema as z.object(...) or JSON Schema`
    })
  }
  return input as Readonly<Record<string, object>>
}

const dialectOf = (schema: JsonSchema): Dialect =>
  typeof schema.$schema === "string" && schema.$schema.includes("2020-12") ? "2020-12" : "draft-07"

const withoutMetaSchema = (schema: JsonSchema): JsonSchema => {
  if (!("$schema" in schema)) return schema
  const { $schema: _, ...rest } = schema
  return rest
}

const objectOnly = (normalized: Normalized): Normalized => {
  const type = normalized.schema.type
  if (type !== "object" && !(type === undefined && "properties" in normalized.schema)) {
    throw new ToolDefinitionError({
      reason: "InvalidParameters",
      detail: `parameters must describe an object of named arguments, got ${JSON.stringify(type ?? null)}`
    })
  }
  return normalized
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const normalize = (input: ParameterInput | undefined): Normalized => {
  if (input === undefined) return { schema: { type: "object", properties: {} }, dialect: "draft-07", source: "json-schema" }
  if (Schema.isSchema(input)) {
    return objectOnly({ schema: withoutMetaSchema(JSONSchema.make(input) as unknown as JsonSchema), dialect: "draft-07", source: "effect" })
  }
  if (typeof input === "object" && input !== null) {
    if (isZod4(input)) return objectOnly({ schema: zod4JsonSchema(input), dialect: "draft-07", source: "zod4" })
    if (isZod3(input)) return objectOnly({ schema: zod3JsonSchema(input), dialect: "draft-07", source: "zod3" })
    const shape = asRawShape(input)
    if (shape !== undefined) return { schema: rawShapeSchema(shape), dialect: "draft-07", source: "zod-shape" }
    if (isJsonSchemaObject(input)) {
      return objectOnly({ schema: withoutMetaSchema(input), dialect: dialectOf(input), source: "json-schema" })
    }
  }
  throw new ToolDefinitionError({
    reason: "InvalidParameters",
    detail: "parameters must be an effect Schema, a zod schema, a zod raw shape or a JSON Schema object"
  })
}
