/**
 * Argument validation: one ajv validator compiled per tool version, whatever the schema's origin,
 * so every path (model call, composition, application call) validates the same way.
 *
 * @since 0.1.0
 */
import type { Ajv, ValidateFunction } from "ajv"
import type { Ajv2020 } from "ajv/dist/2020.js"
import { ToolDefinitionError } from "./HarnessError.js"
import type { JsonSchema } from "./JsonSchema.js"
import type { Dialect } from "./ParameterSchema.js"
import { coreRequire } from "./internal/coreRequire.js"

/** Returns `undefined` for valid arguments, or a readable description of the problems. @since 0.1.0 @category models */
export type Validate = (args: unknown) => string | undefined

/** ajv is loaded on the first compile (it is CommonJS, so synchronously): importing the package, or a command that validates nothing, does not pay for it. */
let compilers: { readonly "draft-07": Ajv; readonly "2020-12": Ajv2020 } | undefined

const compilerFor = (dialect: Dialect): Ajv | Ajv2020 => {
  if (compilers === undefined) {
    const options = { strict: false, allErrors: true, allowUnionTypes: true } as const
    const draft07 = new (coreRequire("ajv") as typeof import("ajv")).Ajv(options)
    const draft2020 = new (coreRequire("ajv/dist/2020.js") as typeof import("ajv/dist/2020.js")).Ajv2020(options)
    const addFormats = coreRequire("ajv-formats") as (ajv: Ajv | Ajv2020) => void
    addFormats(draft07)
    addFormats(draft2020)
    compilers = { "draft-07": draft07, "2020-12": draft2020 }
  }
  return compilers[dialect]
}

const describe = (validate: ValidateFunction): string =>
  (validate.errors ?? [])
    .slice(0, 8)
    .map((error) => `${error.instancePath === "" ? "arguments" : error.instancePath} ${error.message ?? "is invalid"}`)
    .join("; ")

/**
 * @since 0.1.0
 * @category constructors
 */
export const compile = (schema: JsonSchema, dialect: Dialect): Validate => {
  let validate: ValidateFunction
  try {
    validate = compilerFor(dialect).compile(schema)
  } catch (cause) {
    throw new ToolDefinitionError({
      reason: "InvalidParameters",
      detail: `parameters is not a valid JSON Schema: ${cause instanceof Error ? cause.message : String(cause)}`
    })
  }
  return (args) => (validate(args) ? undefined : describe(validate))
}
