/**
 * JSON Schema as plain data, the one form every parameter schema is normalised to.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 @category models */
export type JsonSchema = { readonly [key: string]: unknown }

/** @since 0.1.0 @category refinements */
export const isJsonSchemaObject = (u: unknown): u is JsonSchema =>
  typeof u === "object" && u !== null && !Array.isArray(u)
