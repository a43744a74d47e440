/**
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as HttpServer from "./HttpServer.js"

/**
 * @since 0.1.0
 */
export * as McpError from "./McpError.js"

/**
 * @since 0.1.0
 */
export * as ServedSession from "./ServedSession.js"

/**
 * @since 0.1.0
 */
export * as SessionServer from "./SessionServer.js"

/**
 * @since 0.1.0
 */
export * as StdioServer from "./StdioServer.js"

/**
 * @since 0.1.0
 */
export * as ToolResult from "./ToolResult.js"
