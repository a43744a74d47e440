/**
 * @since 0.1.0
 */
export * as CodeRunner from "./CodeRunner.js"

/**
 * @since 0.1.0
 */
export * as HarnessError from "./HarnessError.js"

/**
 * @since 0.1.0
 */
export * as JsonSchema from "./JsonSchema.js"

/**
 * @since 0.1.0
 */
export * as ToolOrigin from "./ToolOrigin.js"
