/**
 * Tool-call arguments as the OpenAI protocols carry them: a JSON text the model wrote, which is
 * not always valid JSON.
 *
 * @internal
 */
import * as Either from "effect/Either"
import type { ToolCall } from "../ModelProvider.js"

/** Parses the model's argument text; an empty text means no arguments. */
export const parse = (raw: string): Pick<ToolCall, "arguments" | "argumentsError"> => {
  if (raw.trim() === "") return { arguments: {} }
  return Either.match(Either.try(() => JSON.parse(raw) as unknown), {
    onLeft: (error) => ({
      arguments: raw,
      argumentsError: `the arguments are not valid JSON (${error instanceof Error ? error.message : String(error)})`
    }),
    onRight: (value) => ({ arguments: value })
  })
}

/** The argument text to send back: the model's own text when it could not be parsed. */
export const stringify = (call: ToolCall): string =>
  call.argumentsError !== undefined && typeof call.arguments === "string"
    ? call.arguments
    : JSON.stringify(call.arguments ?? {})

/** Anthropic's `tool_use.input` must be an object. */
export const asObject = (call: ToolCall): { readonly [key: string]: unknown } =>
  typeof call.arguments === "object" && call.arguments !== null && !Array.isArray(call.arguments)
    ? call.arguments as { readonly [key: string]: unknown }
    : {}
