/**
 * A `ModelProvider` over OpenAI Chat Completions (`POST /v1/chat/completions`) through the official
 * `openai` SDK. The same provider serves every OpenAI-compatible server (Ollama, vLLM, LM Studio,
 * llama.cpp, gateways) through `baseURL`:
 *
 * ```ts
 * OpenAIChatCompletions.make({ model: "llama3.1", baseURL: "http://127.0.0.1:11434/v1", apiKey: "ollama" })
 * ```
 *
 * The instructions become the first `system` message; every tool is sent in full as a `function`
 * tool (Chat Completions has no deferred loading, so `deferLoading` is ignored, EXP-04).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam
} from "openai/resources/chat/completions"
import * as ModelProvider from "./ModelProvider.js"
import { decodeBody } from "./internal/errors.js"
import { makeClient, toProviderError } from "./internal/openai.js"
import * as ToolArguments from "./internal/toolArguments.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The model id, e.g. `"gpt-4.1"` or, on Ollama, `"llama3.1"`. */
  readonly model: string
  /** The provider's name in errors and logs. Default `"openai"`. */
  readonly name?: string | undefined
  /** Default: the `OPENAI_API_KEY` environment variable. Servers without auth still need a non-empty value. */
  readonly apiKey?: string | undefined
  /** Default: `OPENAI_BASE_URL`, else `https://api.openai.com/v1`. Include the `/v1`. */
  readonly baseURL?: string | undefined
  /** Per attempt, in milliseconds. Default: the SDK's (10 minutes). */
  readonly timeoutMs?: number | undefined
  /** Retries on connection errors, timeouts, 408, 409, 429 and 5xx, with the SDK's backoff. Default 2. */
  readonly maxRetries?: number | undefined
  /** Extra body fields (`temperature`, `max_completion_tokens`, `reasoning_effort`, server-specific options). */
  readonly extraBody?: { readonly [key: string]: unknown } | undefined
}

/**
 * The JSON body this provider sends for a request.
 *
 * @since 0.1.0
 * @category encoding
 */
export const requestBody = (
  options: Pick<Options, "model" | "extraBody">,
  request: ModelProvider.ModelRequest
): ChatCompletionCreateParamsNonStreaming => {
  const messages: Array<ChatCompletionMessageParam> = []
  if (request.instructions !== "") messages.push({ role: "system", content: request.instructions })
  for (const message of request.messages) {
    switch (message.role) {
      case "user": {
        messages.push({ role: "user", content: message.content })
        break
      }
      case "assistant": {
        if (message.toolCalls.length === 0) {
          messages.push({ role: "assistant", content: message.content ?? "" })
        } else {
          messages.push({
            role: "assistant",
            content: message.content,
            tool_calls: message.toolCalls.map((call) => ({
              id: call.id,
              type: "function",
              function: { name: call.name, arguments: ToolArguments.stringify(call) }
            }))
          })
        }
        break
      }
      case "tool": {
        messages.push({ role: "tool", tool_call_id: message.toolCallId, content: message.content })
        break
      }
    }
  }
  const tools = request.tools.map((tool): ChatCompletionFunctionTool => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: { ...tool.parameters } }
  }))
  return {
    ...options.extraBody,
    model: options.model,
    messages,
    ...(tools.length === 0 ? {} : { tools })
  }
}

const WireToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.optional(Schema.String),
  function: Schema.optional(Schema.Struct({ name: Schema.String, arguments: Schema.optional(Schema.Unknown) }))
})

const WireChatCompletion = Schema.Struct({
  choices: Schema.NonEmptyArray(Schema.Struct({
    message: Schema.Struct({
      content: Schema.optional(Schema.NullOr(Schema.String)),
      refusal: Schema.optional(Schema.NullOr(Schema.String)),
      tool_calls: Schema.optional(Schema.NullOr(Schema.Array(WireToolCall)))
    }),
    finish_reason: Schema.optional(Schema.NullOr(Schema.String))
  })),
  usage: Schema.optional(Schema.NullOr(Schema.Struct({
    prompt_tokens: Schema.optional(Schema.NullOr(Schema.Number)),
    completion_tokens: Schema.optional(Schema.NullOr(Schema.Number))
  })))
})

const fromWire = (completion: typeof WireChatCompletion.Type): ModelProvider.ModelResponse => {
  const message = completion.choices[0].message
  const toolCalls: Array<ModelProvider.ToolCall> = []
  for (const call of message.tool_calls ?? []) {
    if (call.function === undefined) continue // a custom (free-text) tool: this provider never defines one
    const raw = call.function.arguments
    toolCalls.push({
      id: call.id,
      name: call.function.name,
      // Some compatible servers send the arguments as an object instead of a JSON text.
      ...(typeof raw === "string" ? ToolArguments.parse(raw) : { arguments: raw ?? {} })
    })
  }
  const text = message.content ?? message.refusal ?? null
  return {
    message: {
      role: "assistant",
      content: text === "" && toolCalls.length > 0 ? null : text,
      toolCalls
    },
    usage: {
      inputTokens: completion.usage?.prompt_tokens ?? null,
      outputTokens: completion.usage?.completion_tokens ?? null
    }
  }
}

/**
 * A Chat Completions provider. It never throws: a client that cannot be built (no API key) fails
 * every `generate` with an `Authentication` error.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): ModelProvider.ModelProvider => {
  const name = options.name ?? "openai"
  const client = makeClient(name, options)
  const decode = decodeBody(WireChatCompletion, name)
  const generate = Effect.fn("OpenAIChatCompletions.generate")(function*(request: ModelProvider.ModelRequest) {
    const sdk = yield* client
    const body = requestBody(options, request)
    const completion = yield* Effect.tryPromise({
      try: (signal) => sdk.chat.completions.create(body, { signal }),
      catch: toProviderError(name)
    })
    return fromWire(yield* decode(completion))
  })
  return { name, protocol: "chat_completions", generate }
}

/**
 * Provides a Chat Completions model as the `ModelProvider` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<ModelProvider.ModelProvider> =>
  Layer.sync(ModelProvider.ModelProvider, () => make(options))
