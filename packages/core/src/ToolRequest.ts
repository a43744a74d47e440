/**
 * The create and update requests, shared by the model-facing management tools (snake_case on the
 * wire) and the application API: every field is a single word, so one shape serves both, and one
 * effect Schema decodes both. The schema checks structure exactly as the compact JSON Schemas the
 * model sees do (a property test keeps the two in step); what the model cannot express in them
 * (`duration`, an update's `kind` or `language`) is decoded as unknown here and checked with the
 * rest of the request's meaning, with the same typed error, whoever sent it.
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { InvalidToolRequest } from "./HarnessError.js"
import type { JsonSchema } from "./JsonSchema.js"
import type { CodeLanguage } from "./ToolOrigin.js"

/** @since 0.1.0 @category models */
export const ToolKind = { Code: "code", Text: "text" } as const

/** @since 0.1.0 @category models */
export type ToolKind = typeof ToolKind[keyof typeof ToolKind]

const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const FileMap = Schema.Record({ key: Schema.String, value: Schema.String })

/** An input and the output the tool must return for it, compared by JSON deep equality. @since 0.1.0 @category schemas */
export const ToolExample = Schema.Struct({ input: JsonObject, expected_output: Schema.Unknown })

/** @since 0.1.0 @category models */
export interface ToolExample {
  readonly input: { readonly [key: string]: unknown }
  readonly expected_output: unknown
}

const Examples = Schema.Array(ToolExample).pipe(Schema.minItems(1), Schema.maxItems(8))

/** The structure `create_tool` accepts. @since 0.1.0 @category schemas */
export const CreateToolFields = Schema.Struct({
  source: Schema.String,
  kind: Schema.optional(Schema.Literal("code", "text")),
  name: Schema.optional(Schema.String),
  entrypoint: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  language: Schema.optional(Schema.Literal("typescript", "javascript", "python", "bash", "csharp")),
  files: Schema.optional(FileMap),
  guidelines: Schema.optional(Schema.String),
  parameters: Schema.optional(JsonObject),
  examples: Schema.optional(Examples),
  duration: Schema.optional(Schema.Unknown)
})

/** The structure `update_tool` accepts. @since 0.1.0 @category schemas */
export const UpdateToolFields = Schema.Struct({
  name: Schema.String,
  source: Schema.optional(Schema.String),
  markdown: Schema.optional(Schema.String),
  files: Schema.optional(FileMap),
  remove: Schema.optional(Schema.Array(Schema.String)),
  entrypoint: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  guidelines: Schema.optional(Schema.String),
  parameters: Schema.optional(JsonObject),
  examples: Schema.optional(Examples),
  kind: Schema.optional(Schema.Unknown),
  language: Schema.optional(Schema.Unknown),
  duration: Schema.optional(Schema.Unknown)
})

/** @since 0.1.0 @category models */
export interface CreateToolRequest {
  readonly source: string
  readonly kind?: ToolKind | undefined
  readonly name?: string | undefined
  readonly entrypoint?: string | undefined
  readonly description?: string | undefined
  readonly language?: CodeLanguage | undefined
  readonly files?: Readonly<Record<string, string>> | undefined
  readonly guidelines?: string | undefined
  readonly parameters?: JsonSchema | undefined
  readonly examples?: ReadonlyArray<ToolExample> | undefined
  /** 003's duration class (JT-CTR-02): a `long` tool needs a policy that allows long-running tools and gets its long timeout. */
  readonly duration?: "short" | "long" | undefined
}

/** @since 0.1.0 @category models */
export interface UpdateToolRequest {
  readonly name: string
  readonly kind?: ToolKind | undefined
  readonly source?: string | undefined
  readonly markdown?: string | undefined
  readonly files?: Readonly<Record<string, string>> | undefined
  readonly remove?: ReadonlyArray<string> | undefined
  readonly entrypoint?: string | undefined
  readonly language?: CodeLanguage | undefined
  readonly description?: string | undefined
  readonly guidelines?: string | undefined
  readonly parameters?: JsonSchema | undefined
  readonly examples?: ReadonlyArray<ToolExample> | undefined
  readonly duration?: "short" | "long" | undefined
}

/** What state-changing tools answer: nothing but the name and the status (MGMT-17, D-07). @since 0.1.0 @category schemas */
export const ToolAck = Schema.Struct({ name: Schema.String, status: Schema.Literal("loaded", "unloaded") })

/** @since 0.1.0 @category models */
export type ToolAck = typeof ToolAck.Type

const failure = (tool: string | undefined, error: ParseResult.ParseError): InvalidToolRequest => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  const path = issue?.path.join(".") ?? ""
  const missing = issue?.message === "is missing"
  return new InvalidToolRequest({
    ...(tool === undefined ? {} : { name: tool }),
    reason: missing ? "MissingField" : "FieldNotAllowed",
    detail: `${path === "" ? "the request" : path}: ${issue?.message ?? error.message}`
  })
}

const options = { exact: true, onExcessProperty: "ignore" } as const
const decodeCreateFields = Schema.decodeUnknownEither(CreateToolFields, options)
const decodeUpdateFields = Schema.decodeUnknownEither(UpdateToolFields, options)

const durationOf = (value: unknown, tool: string | undefined): "short" | "long" | undefined => {
  if (value === undefined || value === "short" || value === "long") return value
  throw new InvalidToolRequest({
    ...(tool === undefined ? {} : { name: tool }),
    reason: "FieldNotAllowed",
    detail: `duration must be "short" or "long", not ${JSON.stringify(value)}`
  })
}

/**
 * Decodes a `create_tool` request; a structural problem is an `InvalidToolRequest` naming the field.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeCreate = (input: unknown): CreateToolRequest => {
  const result = decodeCreateFields(input)
  if (Either.isLeft(result)) {
    const name = typeof (input as { name?: unknown } | null)?.name === "string" ? (input as { name: string }).name : undefined
    throw failure(name, result.left)
  }
  const fields = result.right
  return { ...fields, duration: durationOf(fields.duration, fields.name) } as CreateToolRequest
}

/**
 * Decodes an `update_tool` request; a structural problem is an `InvalidToolRequest` naming the field.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeUpdate = (input: unknown): UpdateToolRequest => {
  const result = decodeUpdateFields(input)
  if (Either.isLeft(result)) {
    const name = typeof (input as { name?: unknown } | null)?.name === "string" ? (input as { name: string }).name : undefined
    throw failure(name, result.left)
  }
  const fields = result.right
  if (fields.kind !== undefined && fields.kind !== "code" && fields.kind !== "text") {
    throw new InvalidToolRequest({ name: fields.name, reason: "FieldNotAllowed", detail: `kind must be "code" or "text", not ${JSON.stringify(fields.kind)}` })
  }
  return { ...fields, duration: durationOf(fields.duration, fields.name) } as UpdateToolRequest
}
