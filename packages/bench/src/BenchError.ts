/**
 * What a benchmark fails with: `BenchToolFailed` when the tool (or a composing tool of the run)
 * errored during a timed or warm-up call, `BenchSetupError` when the run could not be set up (the
 * tool is not in the snapshot, the runtime or the connection could not be built, a composing tool
 * could not be created, a floor could not be started).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** @since 0.1.0 @category errors */
export class BenchToolFailed extends Schema.TaggedError<BenchToolFailed>()("BenchToolFailed", {
  tool: Schema.String,
  /** What was being timed: `target` (the tool through the target at `depth`) or a floor. */
  phase: Schema.Literal("target", "direct floor", "raw floor"),
  depth: Schema.Number,
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.tool} failed (${this.phase}, depth ${this.depth}): ${this.detail}`
  }
}

/** @since 0.1.0 @category errors */
export class BenchSetupError extends Schema.TaggedError<BenchSetupError>()("BenchSetupError", {
  step: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.step}: ${this.detail}`
  }
}

/** @since 0.1.0 @category errors */
export type BenchError = BenchToolFailed | BenchSetupError

/** What a thrown value says: its type and message for an Error (or its tag), else its text. @since 0.1.0 @category utils */
export const describe = (error: unknown): string => {
  if (error instanceof Error) {
    const tag = (error as { readonly _tag?: unknown })._tag
    const name = typeof tag === "string" ? tag : error.name
    return name === "Error" || name === "" ? error.message : `${name}: ${error.message}`
  }
  try {
    return typeof error === "string" ? error : JSON.stringify(error)
  } catch {
    return String(error)
  }
}
