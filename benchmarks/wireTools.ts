/**
 * Renders exposed management tools as the `tools` array a provider sends on the wire. Kept apart
 * so the benchmark can later use the provider package's own renderer instead.
 *
 * @since 0.1.0
 */
import type { ExposedTool, ModelProtocol } from "../packages/core/src/Exposure.js"

/** One entry of a request's `tools` array. @since 0.1.0 @category models */
export type WireTool = { readonly [key: string]: unknown }

/**
 * OpenAI Responses: flat function tools, `defer_loading` on deferred ones, plus the hosted
 * `tool_search` entry whenever anything is deferred.
 *
 * @since 0.1.0
 * @category rendering
 */
export const responsesTools = (tools: ReadonlyArray<ExposedTool>): ReadonlyArray<WireTool> => {
  const rendered: Array<WireTool> = tools.map((tool) => ({
    type: "function",
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    strict: false,
    ...(tool.deferLoading ? { defer_loading: true } : {})
  }))
  return tools.some((tool) => tool.deferLoading) ? [...rendered, { type: "tool_search" }] : rendered
}

/**
 * OpenAI Chat Completions (and OpenAI-compatible servers): nested `function` objects; deferral
 * does not exist there.
 *
 * @since 0.1.0
 * @category rendering
 */
export const chatCompletionsTools = (tools: ReadonlyArray<ExposedTool>): ReadonlyArray<WireTool> =>
  tools.map((tool) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters }
  }))

/** @since 0.1.0 @category rendering */
export const wireTools = (protocol: ModelProtocol, tools: ReadonlyArray<ExposedTool>): ReadonlyArray<WireTool> => {
  switch (protocol) {
    case "responses":
      return responsesTools(tools)
    case "chat_completions":
      return chatCompletionsTools(tools)
    case "anthropic_messages":
      throw new Error("the token benchmark covers the OpenAI protocols only")
  }
}
