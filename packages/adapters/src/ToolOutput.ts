/**
 * How a call's outcome reads to the model when a library needs text: a result as the jitbox
 * agent loop shows it (a string as it is, anything else as its JSON), a failure as
 * `ThrownValue.forModel` words it (`<type>: <message>`), whoever offers the tools.
 *
 * @since 0.1.0
 */
import { ThrownValue } from "@jitbox/core"

/** The text of a result. @since 0.1.0 @category rendering */
export const resultText = (value: unknown): string => {
  if (typeof value === "string") return value
  try {
    return JSON.stringify(value) ?? "null"
  } catch {
    return String(value)
  }
}

/** The text of a failure. @since 0.1.0 @category rendering */
export const failureText = (thrown: unknown): string => ThrownValue.forModel(thrown).text

/**
 * A failed call as an `Error` whose message is the failure's text (what a library shows the
 * model), the session's own error as its `cause`.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolCallFailed extends Error {
  override readonly name = "ToolCallFailed"
  readonly toolName: string
  constructor(toolName: string, cause: unknown) {
    super(failureText(cause), { cause })
    this.toolName = toolName
  }
}
