/**
 * What the harness keeps of a thrown value: its type name and its message, or `null` when it
 * cannot be formatted (a non-Error value, a throwing `message` getter or `toString`; ERR-12);
 * and how a failed call reads to the model (`forModel`), whoever offers the tools: the agent loop,
 * an MCP server.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 @category getters */
export const errorType = (thrown: unknown): string => {
  try {
    if (typeof thrown === "object" && thrown !== null) {
      const carried = (thrown as { _tag?: unknown; errorType?: unknown })
      // A failure carried across a process boundary keeps the type name it had where it was thrown.
      if (carried._tag === "ToolFailure" && typeof carried.errorType === "string") return carried.errorType
      const tag = (thrown as { _tag?: unknown })._tag
      if (typeof tag === "string" && tag !== "") return tag
      if (thrown instanceof Error) {
        const name = thrown.name
        if (typeof name === "string" && name !== "" && name !== "Error") return name
        return thrown.constructor?.name || "Error"
      }
      return thrown.constructor?.name || "Object"
    }
    return thrown === null ? "null" : typeof thrown
  } catch {
    return "Unknown"
  }
}

/** @since 0.1.0 @category getters */
export const message = (thrown: unknown): string | null => {
  if (!(thrown instanceof Error)) return null
  try {
    const text = thrown.message
    return typeof text === "string" ? text : String(text)
  } catch {
    return null
  }
}

/**
 * How a failed call reads to the model: `<type>: <message>`, the type being the error's `_tag`,
 * else its `name`, else `typeof`; a value that cannot be formatted says so instead of throwing. A
 * failure carried across a process boundary (`ToolFailure`) reads as it would where it was thrown.
 *
 * @since 0.1.0
 * @category rendering
 */
export const forModel = (thrown: unknown): { readonly type: string; readonly text: string } => {
  let type: string
  let text: string
  try {
    const tagged = typeof thrown === "object" && thrown !== null ? thrown as { _tag?: unknown; errorType?: unknown } : undefined
    type = tagged?._tag === "ToolFailure" && typeof tagged.errorType === "string"
      ? tagged.errorType
      : typeof tagged?._tag === "string"
      ? tagged._tag
      : thrown instanceof Error
      ? thrown.name
      : typeof thrown
  } catch {
    type = "Unknown"
  }
  try {
    text = thrown instanceof Error ? thrown.message : String(thrown)
  } catch {
    text = "(the error could not be formatted)"
  }
  return { type, text: `${type}: ${text}` }
}
