/**
 * `tool(spec, handler)`: the one way to define a tool, for application base tools and for code
 * tools alike (CON-01..04). The definition is checked and its validator compiled here, once.
 *
 * @since 0.1.0
 */
import type * as Schema from "effect/Schema"
import type { InvocationContext } from "./CodeRunner.js"
import { ToolDefinitionError } from "./HarnessError.js"
import type { JsonSchema } from "./JsonSchema.js"
import * as ParameterSchema from "./ParameterSchema.js"
import { ToolExecutionMode } from "./ToolOrigin.js"
import * as Validator from "./Validator.js"

/** @since 0.1.0 @category models */
export interface ToolSpec<P extends ParameterSchema.ParameterInput | undefined = ParameterSchema.ParameterInput> {
  /** Required for base tools passed as a list; code tools take their name from the request. */
  readonly name?: string | undefined
  readonly description: string
  readonly guidelines: string
  readonly parameters?: P
  readonly executionMode?: ToolExecutionMode | undefined
}

/** @since 0.1.0 @category models */
export type ToolHandler<A = any, R = unknown> = (args: A, context: InvocationContext) => R | PromiseLike<R>

type ZodInput<S> = S extends { readonly _zod: { readonly input: infer I } } ? I
  : S extends { readonly _input: infer I } ? I
  : never

type TypedZod = { readonly _zod: { readonly input: unknown } } | { readonly _input: unknown }

/** `z.object(shape)`'s input: a field whose input admits `undefined` (optional, defaulted) is optional. */
type ShapeArguments<S> =
  & { -readonly [K in keyof S as undefined extends ZodInput<S[K]> ? never : K]: ZodInput<S[K]> }
  & { -readonly [K in keyof S as undefined extends ZodInput<S[K]> ? K : never]?: ZodInput<S[K]> }

/**
 * The arguments a handler receives, inferred from an effect Schema, a zod schema or a zod raw shape
 * when possible.
 *
 * @since 0.1.0
 * @category models
 */
export type ArgumentsOf<P> = P extends Schema.Schema<infer A, infer _I, infer _R> ? A
  : P extends { readonly _zod: { readonly input: infer I } } ? I
  : P extends { readonly _input: infer I } ? I
  : P extends { readonly [key: string]: TypedZod } ? { [K in keyof ShapeArguments<P>]: ShapeArguments<P>[K] }
  : any

/** A checked tool definition. @since 0.1.0 @category models */
export class ToolDefinition<A = any, R = unknown> {
  readonly _tag = "ToolDefinition"
  constructor(
    readonly name: string | undefined,
    readonly description: string,
    readonly guidelines: string,
    readonly parameters: JsonSchema,
    readonly executionMode: ToolExecutionMode,
    readonly validate: Validator.Validate,
    readonly handler: ToolHandler<A, R>
  ) {}

  /** The same definition under another name (the validator is shared, not recompiled). */
  named(name: string): ToolDefinition<A, R> {
    checkName(name)
    return new ToolDefinition(name, this.description, this.guidelines, this.parameters, this.executionMode, this.validate, this.handler)
  }
}

/** @since 0.1.0 @category refinements */
export const isToolDefinition = (u: unknown): u is ToolDefinition => u instanceof ToolDefinition

const namePattern = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/

/** @since 0.1.0 @category validation */
export const checkName = (name: unknown): string => {
  if (typeof name !== "string" || !namePattern.test(name)) {
    throw new ToolDefinitionError({
      reason: "InvalidName",
      detail: `tool name ${JSON.stringify(name)} must match ${namePattern.source}`
    })
  }
  return name
}

/**
 * Checks the tool contract that every definition shares: a description, non-empty guidelines and an
 * object parameter schema. Returns the normalised schema and its compiled validator.
 *
 * @since 0.1.0
 * @category validation
 */
export const checkContract = (spec: {
  readonly description?: unknown
  readonly guidelines?: unknown
  readonly parameters?: unknown
}): { readonly parameters: JsonSchema; readonly validate: Validator.Validate } => {
  if (typeof spec.description !== "string" || spec.description.trim() === "") {
    throw new ToolDefinitionError({ reason: "MissingDescription", detail: "a tool needs a non-empty description" })
  }
  if (typeof spec.guidelines !== "string" || spec.guidelines.trim() === "") {
    throw new ToolDefinitionError({ reason: "EmptyGuidelines", detail: "a tool needs non-empty guidelines" })
  }
  const normalized = ParameterSchema.normalize(spec.parameters as ParameterSchema.ParameterInput | undefined)
  return { parameters: normalized.schema, validate: Validator.compile(normalized.schema, normalized.dialect) }
}

/**
 * Defines a tool.
 *
 * @example
 * const add = tool({
 *   name: "add",
 *   description: "Add two integers.",
 *   guidelines: "Use for integer addition.",
 *   parameters: { type: "object", properties: { left: { type: "integer" }, right: { type: "integer" } }, required: ["left", "right"] }
 * }, ({ left, right }) => left + right)
 *
 * @since 0.1.0
 * @category constructors
 */
export const tool = <P extends ParameterSchema.ParameterInput | undefined = undefined, R = unknown>(
  spec: ToolSpec<P>,
  handler: ToolHandler<ArgumentsOf<P>, R>
): ToolDefinition<ArgumentsOf<P>, R> => {
  if (typeof handler !== "function") {
    throw new ToolDefinitionError({ reason: "InvalidParameters", detail: "tool(spec, handler) needs a handler function" })
  }
  const name = spec.name === undefined ? undefined : checkName(spec.name)
  const { parameters, validate } = checkContract(spec)
  const executionMode = spec.executionMode ?? ToolExecutionMode.Parallel
  if (executionMode !== ToolExecutionMode.Parallel && executionMode !== ToolExecutionMode.Serial) {
    throw new ToolDefinitionError({
      reason: "InvalidParameters",
      detail: `executionMode must be "parallel" or "serial"`
    })
  }
  return new ToolDefinition(name, spec.description, spec.guidelines, parameters, executionMode, validate, handler)
}
