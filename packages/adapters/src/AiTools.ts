/**
 * A jitbox session as Vercel AI SDK tools. Each of the session's tools is a `dynamicTool` whose
 * input schema is the tool's JSON Schema (`jsonSchema`); its `execute` calls the session with the
 * tool-call id and the step's abort signal, answers the result as it is (the SDK sends it to the
 * model as JSON, or text for a string), and throws `ToolCallFailed` on a failure, which the SDK
 * turns into a `tool-error` part whose text the model reads.
 *
 * The toolbox changes while the conversation runs (the model creates a tool, code loads one): the
 * answered `tools` object is live, and `prepareStep` re-reads the session before every step, adding,
 * replacing and removing the session's tools in that same object, which `generateText` and
 * `streamText` read again on each step. Pass the object itself, not a copy; tools of your own may
 * be added to it and are left alone.
 *
 * @since 0.1.0
 */
import type { SessionTool } from "@jitbox/core"
import { dynamicTool, jsonSchema, type JSONSchema7, type Tool, type ToolSet } from "ai"
import * as LiveTools from "./LiveTools.js"
import { ToolCallFailed } from "./ToolOutput.js"
import * as ToolSession from "./ToolSession.js"

/** @since 0.1.0 @category models */
export interface SessionToolSet {
  /** The live tools: give this object itself as `tools`. */
  readonly tools: ToolSet
  /** The instruction block as of the last refresh (empty without the management tools). */
  readonly instructions: () => string
  /** Re-reads the session into `tools`; answers the names of the session's tools now. */
  readonly refresh: () => Promise<ReadonlyArray<string>>
  /** Refreshes `tools` before each step; give it as `prepareStep`, or call `refresh` from your own. */
  readonly prepareStep: () => Promise<undefined>
}

/**
 * The AI SDK tool of one session tool.
 *
 * @since 0.1.0
 * @category constructors
 */
export const aiTool = (session: ToolSession.ToolSession, tool: SessionTool): Tool =>
  dynamicTool({
    description: ToolSession.description(tool),
    inputSchema: jsonSchema(ToolSession.parameters(tool) as JSONSchema7),
    execute: async (input, { abortSignal, toolCallId }) => {
      try {
        return await session.callTool(tool.name, input ?? {}, ToolSession.callOptions(toolCallId, abortSignal))
      } catch (error) {
        throw new ToolCallFailed(tool.name, error)
      }
    }
  })

/**
 * The session's tools for `generateText` / `streamText` / `ToolLoopAgent`, read once now.
 *
 * @since 0.1.0
 * @category constructors
 */
export const sessionTools = async (session: ToolSession.ToolSession, options: ToolSession.ToolSessionOptions = {}): Promise<SessionToolSet> => {
  const tools: ToolSet = {}
  const live = LiveTools.make((tool) => aiTool(session, tool))
  let owned: ReadonlyArray<string> = []
  let instructions = ""
  const refresh = async (): Promise<ReadonlyArray<string>> => {
    const offered = await ToolSession.offered(session, options)
    const built = live.sync(offered.tools)
    for (const name of owned) delete tools[name]
    offered.tools.forEach((tool, index) => {
      tools[tool.name] = built[index]!
    })
    owned = offered.tools.map((tool) => tool.name)
    instructions = offered.instructions
    return owned
  }
  await refresh()
  return {
    tools,
    instructions: () => instructions,
    refresh,
    prepareStep: async () => {
      await refresh()
      return undefined
    }
  }
}
