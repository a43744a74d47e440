/**
 * The provider-neutral contract between the agent loop and a model: a request is the instructions,
 * the conversation so far and the tool definitions; a response is one assistant message, which may
 * carry tool calls, plus token usage. Every provider (scripted, OpenAI Chat Completions, OpenAI
 * Responses, Anthropic Messages) translates this to and from its own wire protocol.
 *
 * The message types are effect Schemas, so a message store can encode and decode a conversation
 * without knowing which provider produced it.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import type { ProviderError } from "./ProviderError.js"

/**
 * A tool definition as the model sees it. `parameters` is a JSON Schema object. `deferLoading`
 * asks the provider to keep the definition out of the prompt until the model searches for it; only
 * OpenAI Responses honours it (through its hosted `tool_search`), the other protocols send every
 * definition in full.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ModelTool = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  parameters: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  deferLoading: Schema.Boolean
})

/**
 * @since 0.1.0
 * @category models
 */
export type ModelTool = typeof ModelTool.Type

/**
 * A call the model asked for. `arguments` is the parsed JSON the model sent.
 *
 * When the model sent arguments that are not valid JSON, the call is still returned (the loop
 * should answer it with an error rather than crash): `arguments` then holds the raw text exactly
 * as the model wrote it and `argumentsError` says why it could not be parsed.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolCall = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  arguments: Schema.Unknown,
  argumentsError: Schema.optional(Schema.String)
})

/**
 * @since 0.1.0
 * @category models
 */
export type ToolCall = typeof ToolCall.Type

/**
 * @since 0.1.0
 * @category schemas
 */
export const UserMessage = Schema.Struct({
  role: Schema.Literal("user"),
  content: Schema.String
})

/**
 * @since 0.1.0
 * @category models
 */
export type UserMessage = typeof UserMessage.Type

/**
 * What the model said: text (or `null` when it only called tools) and the tool calls, in order.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: Schema.NullOr(Schema.String),
  toolCalls: Schema.Array(ToolCall)
})

/**
 * @since 0.1.0
 * @category models
 */
export type AssistantMessage = typeof AssistantMessage.Type

/**
 * The result of one tool call, fed back to the model. `toolCallId` is the `id` of the `ToolCall`
 * it answers. Only Anthropic Messages has a wire field for `isError`; on the OpenAI protocols the
 * content itself has to say that the call failed.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  toolCallId: Schema.String,
  name: Schema.String,
  content: Schema.String,
  isError: Schema.Boolean
})

/**
 * @since 0.1.0
 * @category models
 */
export type ToolMessage = typeof ToolMessage.Type

/**
 * One entry of a conversation.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Message = Schema.Union(UserMessage, AssistantMessage, ToolMessage)

/**
 * @since 0.1.0
 * @category models
 */
export type Message = typeof Message.Type

/**
 * Token counts as the provider reported them; `null` when it reported nothing. For Anthropic,
 * `inputTokens` includes the cache-read and cache-creation tokens, so it is comparable with the
 * OpenAI figures, which include cached tokens.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Usage = Schema.Struct({
  inputTokens: Schema.NullOr(Schema.Number),
  outputTokens: Schema.NullOr(Schema.Number)
})

/**
 * @since 0.1.0
 * @category models
 */
export type Usage = typeof Usage.Type

/**
 * @since 0.1.0
 * @category schemas
 */
export const ModelRequest = Schema.Struct({
  instructions: Schema.String,
  messages: Schema.Array(Message),
  tools: Schema.Array(ModelTool)
})

/**
 * @since 0.1.0
 * @category models
 */
export type ModelRequest = typeof ModelRequest.Type

/**
 * @since 0.1.0
 * @category schemas
 */
export const ModelResponse = Schema.Struct({
  message: AssistantMessage,
  usage: Usage
})

/**
 * @since 0.1.0
 * @category models
 */
export type ModelResponse = typeof ModelResponse.Type

/**
 * The wire protocol a provider speaks.
 *
 * @since 0.1.0
 * @category models
 */
export type Protocol = "responses" | "chat_completions" | "anthropic_messages" | "scripted"

/**
 * A model behind one protocol. `generate` makes one model call (the SDK's retries included) and
 * fails only with `ProviderError`. Interrupting it aborts the HTTP request.
 *
 * @since 0.1.0
 * @category models
 */
export interface ModelProvider {
  readonly name: string
  readonly protocol: Protocol
  readonly generate: (request: ModelRequest) => Effect.Effect<ModelResponse, ProviderError>
}

/**
 * The service tag under which a layer provides the model the agent loop talks to.
 *
 * @since 0.1.0
 * @category tags
 */
export const ModelProvider: Context.Tag<ModelProvider, ModelProvider> = Context.GenericTag<ModelProvider>(
  "@jitbox/agent/ModelProvider"
)

/**
 * A `ModelProvider` for async code: `generate` resolves with the response and rejects with the
 * `ProviderError` itself (so `error instanceof ProviderError` works). Aborting the signal aborts the
 * HTTP request.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromiseModelProvider {
  readonly name: string
  readonly protocol: Protocol
  readonly generate: (
    request: ModelRequest,
    options?: { readonly signal?: AbortSignal | undefined }
  ) => Promise<ModelResponse>
}

/**
 * The Promise facade of a provider.
 *
 * @example
 * ```ts
 * const model = ModelProvider.toPromise(OpenAIChatCompletions.make({ model: "gpt-4.1" }))
 * const { message } = await model.generate({ instructions: "Be brief.", messages: [{ role: "user", content: "Hi" }], tools: [] })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const toPromise = (provider: ModelProvider): PromiseModelProvider => ({
  name: provider.name,
  protocol: provider.protocol,
  generate: (request, options) =>
    Effect.runPromiseExit(
      provider.generate(request),
      options?.signal === undefined ? undefined : { signal: options.signal }
    ).then((exit) => Exit.isSuccess(exit) ? exit.value : Promise.reject(Cause.squash(exit.cause)))
})
