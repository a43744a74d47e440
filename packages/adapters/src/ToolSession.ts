/**
 * What an orchestrator adapter needs of a jitbox session, wherever it lives: read the tool
 * definitions to offer the model, and call a tool with the conversation's call id and an abort
 * signal. A `JitHarness` (core) fits as it is, and so does a remote session (the runtime's
 * `RemoteSession`, what `connect(…).session(id)` of @jitbox/nats answers), which has no `ready`:
 * it is ready when it answers.
 *
 * The definitions are those of the Chat Completions protocol, the plain function-calling one:
 * orchestrators have no deferred loading, so every tool the session exposes is offered.
 *
 * @since 0.1.0
 */
import type { CallOptions, Exposure, SessionDefinitions, SessionShape, SessionTool } from "@jitbox/core"

/** @since 0.1.0 @category models */
export interface ToolSession {
  /** Resolves when the toolbox is ready (a snapshot activated); absent: ready now. */
  readonly ready?: Promise<void> | undefined
  readonly callTool: (name: string, args?: unknown, options?: CallOptions) => Promise<unknown>
  readonly definitions: SessionShape["definitions"]
}

/** @since 0.1.0 @category models */
export interface ToolSessionOptions {
  /**
   * Whether the management tools (`create_tool`, `update_tool`, `list_tools` …) are offered too,
   * so the model can build and change its own tools (default `false`: only the session's code,
   * text and base tools).
   */
  readonly management?: boolean | undefined
}

/** The protocol whose definitions are offered (see the module comment). @since 0.1.0 @category constants */
export const protocol: Exposure.ModelProtocol = "chat_completions"

/**
 * What to offer the model now: the session's tools, without the management tools unless asked
 * for; the instruction block (it explains the management tools) only with them, else empty.
 *
 * @since 0.1.0
 * @category getters
 */
export const offered = async (session: ToolSession, options: ToolSessionOptions = {}): Promise<SessionDefinitions> => {
  await session.ready
  const definitions = await session.definitions(protocol)
  if (options.management === true) return definitions
  return { instructions: "", tools: definitions.tools.filter((tool) => !tool.management) }
}

/** A tool's description for the model: its guidelines follow it. @since 0.1.0 @category getters */
export const description = (tool: SessionTool): string =>
  tool.guidelines === null ? tool.description : `${tool.description}\n\nGuidelines: ${tool.guidelines}`

/**
 * A tool's parameters as a JSON Schema of an object (what function calling requires): a copy of
 * its own, since validators annotate the schemas they are given and the session's are frozen.
 *
 * @since 0.1.0
 * @category getters
 */
export const parameters = (tool: SessionTool): Record<string, unknown> => ({ ...structuredClone(tool.parameters), type: "object" })

/**
 * The options of one call: the conversation's tool-call id when it has one, and its abort signal.
 *
 * @since 0.1.0
 * @category constructors
 */
export const callOptions = (callId: string | undefined, signal: AbortSignal | undefined): CallOptions => ({
  ...(callId === undefined || callId === "" ? {} : { callId }),
  ...(signal === undefined ? {} : { signal })
})
