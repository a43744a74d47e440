/**
 * The one error the sandbox itself raises when an invocation cannot complete for a reason that is
 * not the tool's own exception: the child broke the protocol, died, hit a limit, or ran out of time.
 * A child that fails this way is replaced transparently before the next invocation.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** @since 0.1.0 @category models */
export const SandboxErrorReason = Schema.Literal(
  "ProtocolViolation",
  "ChildExited",
  "OutputTooLarge",
  "InputTooLarge",
  "Timeout",
  "Cancelled",
  "LimitExceeded",
  "SpawnFailed"
)

/** @since 0.1.0 @category models */
export type SandboxErrorReason = typeof SandboxErrorReason.Type

/** @since 0.1.0 @category errors */
export class SandboxError extends Schema.TaggedError<SandboxError>()("SandboxError", {
  reason: SandboxErrorReason,
  toolName: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}

/** @since 0.1.0 @category refinements */
export const isSandboxError = (u: unknown): u is SandboxError =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "SandboxError"
