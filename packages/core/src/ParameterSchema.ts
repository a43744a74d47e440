/**
 * Normalises a tool's `parameters` to plain JSON Schema: an effect Schema (`JSONSchema.make`),
 * a zod 4 schema (its native `toJSONSchema`), a zod 3 schema (`zod-to-json-schema`, which only
 * understands zod 3), or JSON Schema as data.
 *
 * @since 0.1.0
 */
import * as JSONSchema from "effect/JSONSchema"
import * as Schema from "effect/Schema"
import { zodToJsonSchema } from "zod-to-json-schema"
import { ToolDefinitionError } from "./HarnessError.js"
import { isJsonSchemaObject, type JsonSchema } from "./JsonSchema.js"

/** Which JSON Schema dialect a normalised schema is written in. @since 0.1.0 @category models */
export type Dialect = "draft-07" | "2020-12"

/** @since 0.1.0 @category models */
export interface Normalized {
  readonly schema: JsonSchema
  readonly dialect: Dialect
  readonly source: "effect" | "zod4" | "zod3" | "json-schema"
}

/** Anything `tool({ parameters })` accepts. @since 0.1.0 @category models */
export type ParameterInput = Schema.Schema.Any | JsonSchema | { readonly _zod: unknown } | { readonly _def: unknown }

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
    if (isZod4(input)) {
      const schema = input.toJSONSchema({ target: "draft-7", io: "input", override: closeStrippedObjects }) as JsonSchema
      return objectOnly({ schema: withoutMetaSchema(schema), dialect: "draft-07", source: "zod4" })
    }
    if (isZod3(input)) {
      const schema = zodToJsonSchema(input as Parameters<typeof zodToJsonSchema>[0], { target: "jsonSchema7" }) as unknown as JsonSchema
      return objectOnly({ schema: withoutMetaSchema(schema), dialect: "draft-07", source: "zod3" })
    }
    if (isJsonSchemaObject(input)) {
      return objectOnly({ schema: withoutMetaSchema(input), dialect: dialectOf(input), source: "json-schema" })
    }
  }
  throw new ToolDefinitionError({
    reason: "InvalidParameters",
    detail: "parameters must be an effect Schema, a zod schema or a JSON Schema object"
  })
}
