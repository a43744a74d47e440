/**
 * A call's outcome as an MCP `tools/call` result. A result is text content (a string as it is,
 * anything else as its JSON, as the agent loop shows it to the model) and, when it is JSON other
 * than a string, `structuredContent`: an object as it is, an array, number, boolean or `null`
 * wrapped as `{"result": …}` (MCP requires an object there). A failure is a result with
 * `isError: true` carrying the text the model would get (`ThrownValue.forModel`), never a
 * protocol error.
 *
 * @since 0.1.0
 */
import { ThrownValue } from "@jitbox/core"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * The result of a call that returned `value`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const success = (value: unknown): CallToolResult => {
  if (typeof value === "string") return { content: [{ type: "text", text: value }] }
  let text: string
  try {
    text = JSON.stringify(value) ?? "null"
  } catch {
    return { content: [{ type: "text", text: String(value) }] }
  }
  if (value === undefined) return { content: [{ type: "text", text }] }
  // a JSON round trip: what a client receives is what the text says (no Dates, functions, undefined fields)
  const json: unknown = JSON.parse(text)
  return { content: [{ type: "text", text }], structuredContent: isObject(json) ? json : { result: json } }
}

/**
 * The result of a call that failed with `thrown`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const failure = (thrown: unknown): CallToolResult => ({
  content: [{ type: "text", text: ThrownValue.forModel(thrown).text }],
  isError: true
})
