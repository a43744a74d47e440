/**
 * Tools and conversations shared by the provider tests.
 */
import type { ModelProvider } from "@jitbox/agent"

export const weatherTool: ModelProvider.ModelTool = {
  name: "get_weather",
  description: "Current weather for a city.",
  parameters: {
    type: "object",
    properties: { city: { type: "string", description: "City name" } },
    required: ["city"],
    additionalProperties: false
  },
  deferLoading: false
}

/** An inspection tool, deferred as in the harness's default exposure (EXP-03). */
export const readSourceTool: ModelProvider.ModelTool = {
  name: "read_tool_source",
  description: "Read the source of a code tool, one page at a time.",
  parameters: {
    type: "object",
    properties: { name: { type: "string" }, offset: { type: "integer", minimum: 0 } },
    required: ["name"]
  },
  deferLoading: true
}

export const instructions = "You are a careful assistant. Use tools when they help."

export const firstTurn: ModelProvider.ModelRequest = {
  instructions,
  messages: [{ role: "user", content: "What is the weather in Paris and Oslo?" }],
  tools: [weatherTool, readSourceTool]
}

/** The conversation after the model called `get_weather` twice and the loop ran both calls (one failed). */
export const secondTurn: ModelProvider.ModelRequest = {
  ...firstTurn,
  messages: [
    ...firstTurn.messages,
    {
      role: "assistant",
      content: "Let me look that up.",
      toolCalls: [
        { id: "call_paris", name: "get_weather", arguments: { city: "Paris" } },
        { id: "call_oslo", name: "get_weather", arguments: { city: "Oslo" } }
      ]
    },
    { role: "tool", toolCallId: "call_paris", name: "get_weather", content: "{\"celsius\":18}", isError: false },
    {
      role: "tool",
      toolCallId: "call_oslo",
      name: "get_weather",
      content: "{\"error\":\"station offline\"}",
      isError: true
    }
  ]
}
