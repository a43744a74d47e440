/**
 * A call as it flows through the dispatch path (lookup → middleware → reject checks → validation
 * → handler → record → events): one value from start to end, whoever asked for it: the model, the
 * application, or a tool composing another. Middleware sees it; a handler sees it as its
 * `InvocationContext`.
 *
 * @since 0.1.0
 */
import type { ToolOrigin } from "./ToolOrigin.js"

/** Who asked for a call. @since 0.1.0 @category models */
export type CallSource = "application" | "composed" | "example"

/** @since 0.1.0 @category models */
export interface Call {
  readonly name: string
  readonly args: unknown
  /** The conversation's tool-call id when one was given, else an id unique in this harness. */
  readonly callId: string
  readonly parentCallId: string | null
  /** The name of the tool whose code made this call, or `null`. */
  readonly callerToolName: string | null
  readonly depth: number
  /** Fires when the call is cancelled or runs past its deadline. */
  readonly signal: AbortSignal
  /** Whether the call runs inside a toolbox change (an example of a version being made). */
  readonly withinChange: boolean
  /** The registry the tool was found in. */
  readonly origin: ToolOrigin
  readonly source: CallSource
  /** `performance.now()` when the call was dispatched. */
  readonly startedAt: number
}

/**
 * Surrounds dispatch (reject checks, validation, handler). Calling `next` runs the attempt; not
 * calling it short-circuits, and then no record is made because the tool never ran (MEAS-11).
 *
 * @since 0.1.0
 * @category models
 */
export type Middleware = (call: Call, next: () => Promise<unknown>) => Promise<unknown>
