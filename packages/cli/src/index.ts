/**
 * @since 0.1.0
 */
export * as BenchCommand from "./BenchCommand.js"

/**
 * @since 0.1.0
 */
export * as CatalogCommand from "./CatalogCommand.js"

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
export * as McpCommand from "./McpCommand.js"

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
export * as WorkerSandbox from "./WorkerSandbox.js"

/**
 * @since 0.1.0
 */
export * as Progress from "./Progress.js"

/**
 * @since 0.1.0
 */
export * as EventsCommand from "./EventsCommand.js"

/**
 * @since 0.1.0
 */
export * as ExitCode from "./ExitCode.js"

/**
 * @since 0.1.0
 */
export * as OperatorOptions from "./OperatorOptions.js"

/**
 * @since 0.1.0
 */
export * as SnapshotCommand from "./SnapshotCommand.js"

/**
 * @since 0.1.0
 */
export * as SnapshotSource from "./SnapshotSource.js"

/**
 * @since 0.1.0
 */
export * as StatusCommand from "./StatusCommand.js"

/**
 * @since 0.1.0
 */
export * as Table from "./Table.js"

/**
 * @since 0.1.0
 */
export * as Telemetry from "./Telemetry.js"

/**
 * @since 0.1.0
 */
export * as DevCommand from "./DevCommand.js"

/**
 * @since 0.1.0
 */
export * as Health from "./Health.js"

/**
 * @since 0.1.0
 */
export * as ChildCommand from "./ChildCommand.js"

/**
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as Terminate from "./Terminate.js"
