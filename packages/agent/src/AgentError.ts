/**
 * Errors of the agent loop itself (provider failures stay `ProviderError`).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** @since 0.1.0 @category errors */
export class AgentError extends Schema.TaggedError<AgentError>()("AgentError", {
  reason: Schema.Literal("MaxTurnsExceeded", "Configuration", "History"),
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}
