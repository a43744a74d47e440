/**
 * @since 0.1.0
 */
export * as Cli from "./Cli.js"

/**
 * @since 0.1.0
 */
export * as Connection from "./Connection.js"

/**
 * @since 0.1.0
 */
export * as CoordinatorCommand from "./CoordinatorCommand.js"

/**
 * @since 0.1.0
 */
export * as Serve from "./Serve.js"

/**
 * @since 0.1.0
 */
export * as SessionsCommand from "./SessionsCommand.js"

/**
 * @since 0.1.0
 */
export * as WorkerCommand from "./WorkerCommand.js"

/**
 * @since 0.1.0
 */
export * as Progress from "./Progress.js"
