/**
 * @since 0.1.0
 */
export * as Bench from "./Bench.js"

/**
 * @since 0.1.0
 */
export * as BenchError from "./BenchError.js"

/**
 * @since 0.1.0
 */
export * as BenchResult from "./BenchResult.js"

/**
 * @since 0.1.0
 */
export * as Chart from "./Chart.js"

/**
 * @since 0.1.0
 */
export * as DirectCall from "./DirectCall.js"

/**
 * @since 0.1.0
 */
export * as ExclusiveChildren from "./ExclusiveChildren.js"

/**
 * @since 0.1.0
 */
export * as Measure from "./Measure.js"

/**
 * @since 0.1.0
 */
export * as ProcessCpu from "./ProcessCpu.js"

/**
 * @since 0.1.0
 */
export * as RawEcho from "./RawEcho.js"

/**
 * @since 0.1.0
 */
export * as RawFloor from "./RawFloor.js"

/**
 * @since 0.1.0
 */
export * as Target from "./Target.js"
