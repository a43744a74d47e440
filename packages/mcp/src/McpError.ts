/**
 * Why an MCP server could not serve: the HTTP port could not be listened on (`Listen`), or the
 * session could not be opened (`Session`: a snapshot that does not activate, a remote session
 * that does not answer).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** @since 0.1.0 @category errors */
export class McpServeError extends Schema.TaggedError<McpServeError>()("McpServeError", {
  reason: Schema.Literal("Listen", "Session"),
  detail: Schema.String
}) {
  override get message(): string {
    return this.detail
  }
}
