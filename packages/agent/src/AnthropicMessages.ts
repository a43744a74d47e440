/**
 * A `ModelProvider` over the Anthropic Messages API (`POST /v1/messages`) through the official
 * `@anthropic-ai/sdk`.
 *
 * The instructions go in the top-level `system` field; tools are `{ name, description,
 * input_schema }`; the assistant's calls are `tool_use` blocks and their results go back as
 * `tool_result` blocks (with `is_error`) in the next user turn. Consecutive results, and a user
 * message that follows them, share one user turn, as the API requires. `deferLoading` is ignored:
 * every definition is sent in full (EXP-04).
 *
 * @since 0.1.0
 */
import Anthropic, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "@anthropic-ai/sdk"
import type {
  ContentBlockParam,
  MessageCreateParamsNonStreaming,
  MessageParam,
  Tool
} from "@anthropic-ai/sdk/resources/messages/messages"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as ModelProvider from "./ModelProvider.js"
import { ProviderError } from "./ProviderError.js"
import { decodeBody, describe, isRecord, sdkErrorMapper, withoutStatus } from "./internal/errors.js"
import * as ToolArguments from "./internal/toolArguments.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The model id, e.g. `"claude-sonnet-5-5"`. */
  readonly model: string
  /** The provider's name in errors and logs. Default `"anthropic"`. */
  readonly name?: string | undefined
  /** Default: the `ANTHROPIC_API_KEY` environment variable (or the SDK's other credential sources). */
  readonly apiKey?: string | undefined
  /** Default: `ANTHROPIC_BASE_URL`, else `https://api.anthropic.com`. Without `/v1`: the SDK adds it. */
  readonly baseURL?: string | undefined
  /**
   * Per attempt, in milliseconds. Default: the SDK's, which derives it from `maxTokens` and refuses
   * a non-streaming request that might take longer than 10 minutes (about 21,000 tokens and up);
   * set a timeout to send such a request anyway.
   */
  readonly timeoutMs?: number | undefined
  /** Retries on connection errors, timeouts, 408, 409, 429 and 5xx (529 included), with the SDK's backoff. Default 2. */
  readonly maxRetries?: number | undefined
  /** `max_tokens`, which the Messages API requires. Default 4096. */
  readonly maxTokens?: number | undefined
  /** Extra body fields (`temperature`, `thinking`, `metadata`, …). */
  readonly extraBody?: { readonly [key: string]: unknown } | undefined
}

type Role = "user" | "assistant"

/**
 * The JSON body this provider sends for a request.
 *
 * @since 0.1.0
 * @category encoding
 */
export const requestBody = (
  options: Pick<Options, "model" | "maxTokens" | "extraBody">,
  request: ModelProvider.ModelRequest
): MessageCreateParamsNonStreaming => {
  const turns: Array<{ role: Role; content: Array<ContentBlockParam> }> = []
  const append = (role: Role, blocks: ReadonlyArray<ContentBlockParam>): void => {
    if (blocks.length === 0) return // the API rejects empty turns
    const last = turns[turns.length - 1]
    if (last !== undefined && last.role === role) last.content.push(...blocks)
    else turns.push({ role, content: [...blocks] })
  }
  for (const message of request.messages) {
    switch (message.role) {
      case "user": {
        append("user", [{ type: "text", text: message.content }])
        break
      }
      case "assistant": {
        append("assistant", [
          ...(message.content === null || message.content === "" ? [] : [{ type: "text" as const, text: message.content }]),
          ...message.toolCalls.map((call) => ({
            type: "tool_use" as const,
            id: call.id,
            name: call.name,
            input: ToolArguments.asObject(call)
          }))
        ])
        break
      }
      case "tool": {
        append("user", [{
          type: "tool_result",
          tool_use_id: message.toolCallId,
          content: message.content,
          is_error: message.isError
        }])
        break
      }
    }
  }
  const messages = turns.map((turn): MessageParam => {
    const [only] = turn.content
    return turn.content.length === 1 && only !== undefined && only.type === "text"
      ? { role: turn.role, content: only.text }
      : turn
  })
  const tools = request.tools.map((tool): Tool => ({
    name: tool.name,
    description: tool.description,
    input_schema: { type: "object", ...tool.parameters }
  }))
  return {
    ...options.extraBody,
    model: options.model,
    max_tokens: options.maxTokens ?? 4096,
    ...(request.instructions === "" ? {} : { system: request.instructions }),
    messages,
    ...(tools.length === 0 ? {} : { tools })
  }
}

const WireMessage = Schema.Struct({
  content: Schema.Array(Schema.Union(
    Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
    Schema.Struct({ type: Schema.Literal("tool_use"), id: Schema.String, name: Schema.String, input: Schema.Unknown }),
    // thinking, redacted_thinking, server tool blocks: not part of the provider-neutral message
    Schema.Struct({ type: Schema.String.pipe(Schema.filter((type) => type !== "text" && type !== "tool_use")) })
  )),
  stop_reason: Schema.optional(Schema.NullOr(Schema.String)),
  usage: Schema.optional(Schema.NullOr(Schema.Struct({
    input_tokens: Schema.optional(Schema.NullOr(Schema.Number)),
    output_tokens: Schema.optional(Schema.NullOr(Schema.Number)),
    cache_creation_input_tokens: Schema.optional(Schema.NullOr(Schema.Number)),
    cache_read_input_tokens: Schema.optional(Schema.NullOr(Schema.Number))
  })))
})

const fromWire = (message: typeof WireMessage.Type): ModelProvider.ModelResponse => {
  const texts: Array<string> = []
  const toolCalls: Array<ModelProvider.ToolCall> = []
  for (const block of message.content) {
    if (block.type === "text" && "text" in block) texts.push(block.text)
    else if (block.type === "tool_use" && "input" in block) {
      toolCalls.push({ id: block.id, name: block.name, arguments: block.input })
    }
  }
  const usage = message.usage
  const input = usage?.input_tokens
  return {
    message: { role: "assistant", content: texts.length === 0 ? null : texts.join(""), toolCalls },
    usage: {
      inputTokens: input === undefined || input === null
        ? null
        : input + (usage?.cache_creation_input_tokens ?? 0) + (usage?.cache_read_input_tokens ?? 0),
      outputTokens: usage?.output_tokens ?? null
    }
  }
}

const bodyMessage = (error: APIError): string => {
  if (typeof error.apiMessage === "string") return error.apiMessage
  const body: unknown = error.error
  if (isRecord(body) && isRecord(body["error"]) && typeof body["error"]["message"] === "string") {
    return body["error"]["message"]
  }
  if (isRecord(body) && typeof body["message"] === "string") return body["message"]
  return error.status === undefined ? error.message : withoutStatus(error.message, error.status)
}

// The SDK throws a plain Error when it finds no credential to send.
const toProviderError = sdkErrorMapper(
  { timeout: APIConnectionTimeoutError, connection: APIConnectionError, abort: APIUserAbortError, api: APIError },
  bodyMessage,
  (message) => /authentication method/i.test(message) ? "Authentication" : "BadRequest"
)

/**
 * An Anthropic Messages provider. It never throws: every failure, including a client that cannot
 * be built, is a `ProviderError` from `generate`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): ModelProvider.ModelProvider => {
  const name = options.name ?? "anthropic"
  const client = Either.try({
    try: () =>
      new Anthropic({
        apiKey: options.apiKey,
        baseURL: options.baseURL,
        maxRetries: options.maxRetries ?? 2,
        ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs })
      }),
    catch: (error) => new ProviderError({ reason: "BadRequest", provider: name, status: null, providerMessage: describe(error) })
  })
  const decode = decodeBody(WireMessage, name)
  const generate = Effect.fn("AnthropicMessages.generate")(function*(request: ModelProvider.ModelRequest) {
    const sdk = yield* client
    const body = requestBody(options, request)
    const message = yield* Effect.tryPromise({
      try: (signal) => sdk.messages.create(body, { signal }),
      catch: toProviderError(name)
    })
    return fromWire(yield* decode(message))
  })
  return { name, protocol: "anthropic_messages", generate }
}

/**
 * Provides an Anthropic model as the `ModelProvider` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<ModelProvider.ModelProvider> =>
  Layer.sync(ModelProvider.ModelProvider, () => make(options))
