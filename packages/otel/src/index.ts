/**
 * @since 0.1.0
 */
export * as Attributes from "./Attributes.js"

/**
 * @since 0.1.0
 */
export * as DispatchTracing from "./DispatchTracing.js"

/**
 * @since 0.1.0
 */
export * as Metrics from "./Metrics.js"

/**
 * @since 0.1.0
 */
export * as Otel from "./Otel.js"

/**
 * @since 0.1.0
 */
export * as Propagation from "./Propagation.js"
