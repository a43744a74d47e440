/**
 * A jitbox session as LangChain tools. Each of the session's tools is a `DynamicStructuredTool`
 * whose schema is the tool's JSON Schema (LangChain validates the arguments against it); it calls
 * the session with the tool call's id and the run's abort signal and answers the result as text (a
 * string as it is, anything else as its JSON).
 *
 * A failure invoked with a tool call (as a LangGraph `ToolNode` or an agent invokes tools) answers a
 * `ToolMessage` with `status: "error"` carrying the text the model should read; invoked with bare
 * arguments there is no message to answer, so it throws `ToolCallFailed`. A cancelled run throws.
 *
 * The toolbox changes while the conversation runs: `SessionToolkit` is a `BaseToolkit` whose
 * `refresh` re-reads the session; call it before each model step and bind what it answers
 * (`model.bindTools(await toolkit.refresh())`), and run the calls with `toolkit.tools`.
 *
 * @since 0.1.0
 */
import type { SessionTool } from "@jitbox/core"
import { ToolMessage } from "@langchain/core/messages"
import type { RunnableConfig } from "@langchain/core/runnables"
import { BaseToolkit, DynamicStructuredTool, type ToolRunnableConfig } from "@langchain/core/tools"
import type { JSONSchema } from "@langchain/core/utils/json_schema"
import * as LiveTools from "./LiveTools.js"
import { failureText, resultText, ToolCallFailed } from "./ToolOutput.js"
import * as ToolSession from "./ToolSession.js"

const toolCallIdOf = (config: RunnableConfig | undefined): string | undefined => (config as ToolRunnableConfig | undefined)?.toolCall?.id

/**
 * The LangChain tool of one session tool.
 *
 * @since 0.1.0
 * @category constructors
 */
export const langChainTool = (session: ToolSession.ToolSession, tool: SessionTool): DynamicStructuredTool =>
  new DynamicStructuredTool({
    name: tool.name,
    description: ToolSession.description(tool),
    schema: ToolSession.parameters(tool) as JSONSchema,
    func: async (input: unknown, _runManager, config): Promise<string | ToolMessage> => {
      const toolCallId = toolCallIdOf(config)
      const signal = config?.signal
      try {
        return resultText(await session.callTool(tool.name, input ?? {}, ToolSession.callOptions(toolCallId, signal)))
      } catch (error) {
        if (signal?.aborted === true || toolCallId === undefined) throw new ToolCallFailed(tool.name, error)
        return new ToolMessage({ status: "error", content: failureText(error), tool_call_id: toolCallId, name: tool.name })
      }
    }
  })

/**
 * The session's tools as a refreshable LangChain toolkit.
 *
 * @since 0.1.0
 * @category models
 */
export class SessionToolkit extends BaseToolkit {
  /** The tools as of the last `refresh`. */
  tools: Array<DynamicStructuredTool> = []
  /** The instruction block as of the last refresh (empty without the management tools). */
  instructions = ""
  readonly #session: ToolSession.ToolSession
  readonly #options: ToolSession.ToolSessionOptions
  readonly #live: LiveTools.LiveTools<DynamicStructuredTool>

  constructor(session: ToolSession.ToolSession, options: ToolSession.ToolSessionOptions = {}) {
    super()
    this.#session = session
    this.#options = options
    this.#live = LiveTools.make((tool) => langChainTool(session, tool))
  }

  /** Re-reads the session's tools; answers them (also `tools` from now on). */
  async refresh(): Promise<Array<DynamicStructuredTool>> {
    const offered = await ToolSession.offered(this.#session, this.#options)
    this.tools = [...this.#live.sync(offered.tools)]
    this.instructions = offered.instructions
    return this.tools
  }
}

/**
 * A toolkit of the session's tools, read once now.
 *
 * @since 0.1.0
 * @category constructors
 */
export const sessionToolkit = async (session: ToolSession.ToolSession, options: ToolSession.ToolSessionOptions = {}): Promise<SessionToolkit> => {
  const toolkit = new SessionToolkit(session, options)
  await toolkit.refresh()
  return toolkit
}
