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
