/**
 * The AI SDK's own mock model (`MockLanguageModelV3` from `ai/test`) playing a scripted
 * conversation: on each step it records the tools it was offered and the tool result it read, then
 * answers the step's tool call or final answer.
 */
import { MockLanguageModelV3 } from "ai/test"
import type { Observed, Seen, Step } from "./fixtures.js"

type CallOptions = Parameters<MockLanguageModelV3["doGenerate"]>[0]

const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 }
}

const observedIn = (options: CallOptions): Observed | undefined => {
  const last = options.prompt.at(-1)
  if (last?.role !== "tool") return undefined
  const part = last.content.find((content) => content.type === "tool-result")
  if (part === undefined) return undefined
  const output = part.output
  switch (output.type) {
    case "text":
    case "error-text":
      return { name: part.toolName, text: output.value, isError: output.type === "error-text" }
    case "json":
    case "error-json":
      return { name: part.toolName, text: JSON.stringify(output.value), isError: output.type === "error-json" }
    default:
      return { name: part.toolName, text: `(${output.type})`, isError: true }
  }
}

export interface ScriptedAiModel {
  readonly model: MockLanguageModelV3
  readonly seen: Array<Seen>
}

/** A mock model that plays `steps`; `onStep` runs as each step is asked for (before it answers). */
export const scriptedAiModel = (steps: ReadonlyArray<Step>, onStep?: (index: number, signal: AbortSignal | undefined) => void): ScriptedAiModel => {
  const seen: Array<Seen> = []
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      const index = seen.length
      seen.push({ offered: (options.tools ?? []).map((tool) => tool.name).sort(), observed: observedIn(options) })
      onStep?.(index, options.abortSignal)
      const step = steps[index]
      if (step === undefined || "answer" in step) {
        return { content: [{ type: "text", text: step?.answer ?? "out of script" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] }
      }
      return {
        content: [{ type: "tool-call", toolCallId: `call_${index}`, toolName: step.call, input: JSON.stringify(step.args) }],
        finishReason: { unified: "tool-calls", raw: undefined },
        usage,
        warnings: []
      }
    }
  })
  return { model, seen }
}
