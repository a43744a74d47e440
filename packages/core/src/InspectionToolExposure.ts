/**
 * How the inspection tier reaches the model (EXP-01): deferred until a tool search loads it where
 * the provider supports that, always sent, or never exposed. Nothing but the exposed definitions
 * and the instruction block depends on it: names stay reserved, scheduling and budgets are equal.
 *
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 * @category models
 */
export const InspectionToolExposure = {
  Deferred: "deferred",
  Always: "always",
  Hidden: "hidden"
} as const

/**
 * @since 0.1.0
 * @category models
 */
export type InspectionToolExposure = typeof InspectionToolExposure[keyof typeof InspectionToolExposure]

/**
 * The mode a harness uses when the application does not choose one.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultInspectionToolExposure: InspectionToolExposure = InspectionToolExposure.Deferred
