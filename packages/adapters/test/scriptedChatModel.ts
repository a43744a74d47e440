/**
 * A LangChain chat model playing a scripted conversation, in the manner of the fake models of
 * `@langchain/core/utils/testing` (whose list models answer text only, not tool calls): on each
 * step it records the tools bound to it and the tool result it read, then answers the step's tool
 * call or final answer as an `AIMessage`.
 */
import { BaseChatModel, type BindToolsInput } from "@langchain/core/language_models/chat_models"
import { AIMessage, type BaseMessage, ToolMessage } from "@langchain/core/messages"
import type { ChatResult } from "@langchain/core/outputs"
import type { Observed, Seen, Step } from "./fixtures.js"

interface Script {
  readonly steps: ReadonlyArray<Step>
  readonly seen: Array<Seen>
}

const observedIn = (messages: ReadonlyArray<BaseMessage>): Observed | undefined => {
  const last = messages.at(-1)
  if (last === undefined || !ToolMessage.isInstance(last)) return undefined
  return { name: last.name ?? "", text: String(last.content), isError: last.status === "error" }
}

const nameOf = (tool: BindToolsInput): string => (tool as { name?: string }).name ?? "(unnamed)"

export class ScriptedChatModel extends BaseChatModel {
  readonly #script: Script
  readonly #bound: ReadonlyArray<string>

  constructor(script: Script, bound: ReadonlyArray<string> = []) {
    super({})
    this.#script = script
    this.#bound = bound
  }

  /** What the model was offered and read on each step so far. */
  get seen(): ReadonlyArray<Seen> {
    return this.#script.seen
  }

  _llmType(): string {
    return "scripted"
  }

  override bindTools(tools: Array<BindToolsInput>): ScriptedChatModel {
    return new ScriptedChatModel(this.#script, tools.map(nameOf))
  }

  async _generate(messages: Array<BaseMessage>): Promise<ChatResult> {
    const index = this.#script.seen.length
    this.#script.seen.push({ offered: [...this.#bound].sort(), observed: observedIn(messages) })
    const step = this.#script.steps[index]
    const message = step === undefined || "answer" in step
      ? new AIMessage({ content: step?.answer ?? "out of script" })
      : new AIMessage({ content: "", tool_calls: [{ id: `call_${index}`, name: step.call, args: step.args, type: "tool_call" }] })
    return { generations: [{ text: typeof message.content === "string" ? message.content : "", message }] }
  }
}

/** A model that plays `steps`. */
export const scriptedChatModel = (steps: ReadonlyArray<Step>): ScriptedChatModel => new ScriptedChatModel({ steps, seen: [] })
