/**
 * What the agent-loop tests share: the `add` base tool, code tool sources, a scripted model that
 * records every request it receives, and helpers to collect a stream and await a rejection.
 */
import { type AgentEvent, type ModelProvider, ScriptedModel } from "@jitbox/agent"
import { tool } from "@jitbox/core"

export const add = tool({
  name: "add",
  description: "Add two integers.",
  guidelines: "Use for integer addition.",
  parameters: {
    type: "object",
    properties: { left: { type: "integer" }, right: { type: "integer" } },
    required: ["left", "right"]
  }
}, ({ left, right }: { left: number; right: number }) => left + right)

export const twiceSource = `export const twice = tool({
  description: "Add the same integer twice.",
  guidelines: "Use to add an integer to itself.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }) => await harness.callTool("add", { left: value, right: value }))
`

export const quadrupleSource = `export const quadruple = tool({
  description: "Double an integer twice.",
  guidelines: "Use to multiply an integer by four.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }) => await harness.callTool("twice", { value: await harness.callTool("twice", { value }) }))
`

/** A module that counts its activations in `globalThis[key]` and its calls in a module global. */
export const counterSource = (entrypoint: string, key: string) => `const key = ${JSON.stringify(key)}
globalThis[key] = (globalThis[key] ?? 0) + 1
let count = 0
export const ${entrypoint} = tool({ description: "Count this module's calls.", guidelines: "Use to count." }, () => ++count)
`

export const activations = (key: string): number => ((globalThis as Record<string, unknown>)[key] as number | undefined) ?? 0

/** An assistant message with tool calls. */
export const calls = (
  ...toolCalls: ReadonlyArray<readonly [id: string, name: string, args: unknown]>
): ModelProvider.AssistantMessage => ({
  role: "assistant",
  content: null,
  toolCalls: toolCalls.map(([id, name, args]) => ({ id, name, arguments: args }))
})

export interface Recording {
  readonly model: ModelProvider.ModelProvider
  readonly requests: Array<ModelProvider.ModelRequest>
}

/** A scripted model that answers `replies[turn]` (or a function of the request) and records each request. */
export const recording = (
  replies: ReadonlyArray<ScriptedModel.Reply | ((request: ModelProvider.ModelRequest) => ScriptedModel.Reply)>
): Recording => {
  const requests: Array<ModelProvider.ModelRequest> = []
  const model = ScriptedModel.make((request, turn) => {
    requests.push(request)
    const reply = replies[turn]
    if (reply === undefined) throw new Error(`the script has no reply for turn ${turn}`)
    return typeof reply === "function" ? reply(request) : reply
  })
  return { model, requests }
}

export const collect = async (events: AsyncIterable<AgentEvent.AgentEvent>): Promise<Array<AgentEvent.AgentEvent>> => {
  const out: Array<AgentEvent.AgentEvent> = []
  for await (const event of events) out.push(event)
  return out
}

export const rejection = async (promise: Promise<unknown>): Promise<any> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error("expected a rejection, but the promise resolved")
}
