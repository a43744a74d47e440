/**
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as AnthropicMessages from "./AnthropicMessages.js"

/**
 * @since 0.1.0
 */
export * as ModelProvider from "./ModelProvider.js"

/**
 * @since 0.1.0
 */
export * as OpenAIChatCompletions from "./OpenAIChatCompletions.js"

/**
 * @since 0.1.0
 */
export * as OpenAIResponses from "./OpenAIResponses.js"

/**
 * @since 0.1.0
 */
export * as ProviderError from "./ProviderError.js"

/**
 * @since 0.1.0
 */
export * as ScriptedModel from "./ScriptedModel.js"

/**
 * @since 0.1.0
 */
export * as AgentEvent from "./AgentEvent.js"

/**
 * @since 0.1.0
 */
export * as AgentExtension from "./AgentExtension.js"

export { Agent, type AgentConfig, createAgent, type CreateAgentOptions, type RunResult } from "./Agent.js"
export { AgentError } from "./AgentError.js"
export { FileMessageStore } from "./FileMessageStore.js"
export { InMemoryMessageAccumulator } from "./InMemoryMessageAccumulator.js"
export { JitHarnessExtension, type JitHarnessExtensionOptions } from "./JitHarnessExtension.js"
export { ToolGuidelinesExtension } from "./ToolGuidelinesExtension.js"
