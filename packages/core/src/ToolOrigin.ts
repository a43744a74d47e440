/**
 * The registry that served a call, as recorded in profiles, events and the catalog.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 @category models */
export const ToolOrigin = {
  Base: "base",
  Code: "code",
  Text: "text",
  Management: "management",
  Unknown: "unknown"
} as const

/** @since 0.1.0 @category models */
export type ToolOrigin = typeof ToolOrigin[keyof typeof ToolOrigin]

/** How an attempt ended. @since 0.1.0 @category models */
export const ToolCallStatus = {
  Completed: "completed",
  Failed: "failed",
  Cancelled: "cancelled",
  Rejected: "rejected"
} as const

/** @since 0.1.0 @category models */
export type ToolCallStatus = typeof ToolCallStatus[keyof typeof ToolCallStatus]

/** Languages a code tool can be written in (D-02). @since 0.1.0 @category models */
export const CodeLanguages = ["javascript", "typescript", "python", "bash", "csharp"] as const

/** @since 0.1.0 @category models */
export type CodeLanguage = typeof CodeLanguages[number]

/** Whether a tool may run alongside the other calls of one model response. @since 0.1.0 @category models */
export const ToolExecutionMode = {
  Parallel: "parallel",
  Serial: "serial"
} as const

/** @since 0.1.0 @category models */
export type ToolExecutionMode = typeof ToolExecutionMode[keyof typeof ToolExecutionMode]
