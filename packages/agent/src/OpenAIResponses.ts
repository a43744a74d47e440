/**
 * A `ModelProvider` over the OpenAI Responses API (`POST /v1/responses`) through the official
 * `openai` SDK.
 *
 * The instructions go in the `instructions` field; the conversation becomes `input` items (user
 * messages, the assistant's text and `function_call` items, `function_call_output` items keyed by
 * `call_id`). Tools are `function` tools with `strict: false`. A tool whose `deferLoading` is true
 * is sent with `defer_loading: true`, and whenever any tool is deferred the hosted
 * `{ "type": "tool_search" }` tool is added, so the model loads a deferred definition on demand
 * (EXP-03). Both names are the SDK's own (`FunctionTool.defer_loading`, `ToolSearchTool`).
 *
 * Each request is stateless: the whole conversation is sent every time and `previous_response_id`
 * is not used. Output items other than messages and function calls (reasoning, `tool_search_call`,
 * `tool_search_output`) are not part of the provider-neutral message, so they are not replayed.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type {
  FunctionTool,
  ResponseCreateParamsNonStreaming,
  ResponseInputItem,
  Tool,
  ToolSearchTool
} from "openai/resources/responses/responses"
import * as ModelProvider from "./ModelProvider.js"
import { ProviderError } from "./ProviderError.js"
import { decodeBody } from "./internal/errors.js"
import { makeClient, toProviderError } from "./internal/openai.js"
import * as ToolArguments from "./internal/toolArguments.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The model id, e.g. `"gpt-5.4"` (hosted tool search needs gpt-5.4 or later). */
  readonly model: string
  /** The provider's name in errors and logs. Default `"openai"`. */
  readonly name?: string | undefined
  /** Default: the `OPENAI_API_KEY` environment variable. */
  readonly apiKey?: string | undefined
  /** Default: `OPENAI_BASE_URL`, else `https://api.openai.com/v1`. Include the `/v1`. */
  readonly baseURL?: string | undefined
  /** Per attempt, in milliseconds. Default: the SDK's (10 minutes). */
  readonly timeoutMs?: number | undefined
  /** Retries on connection errors, timeouts, 408, 409, 429 and 5xx, with the SDK's backoff. Default 2. */
  readonly maxRetries?: number | undefined
  /** Extra body fields (`max_output_tokens`, `reasoning`, `store`, `temperature`, …). */
  readonly extraBody?: { readonly [key: string]: unknown } | undefined
}

const toolSearch: ToolSearchTool = { type: "tool_search" }

/**
 * The JSON body this provider sends for a request.
 *
 * @since 0.1.0
 * @category encoding
 */
export const requestBody = (
  options: Pick<Options, "model" | "extraBody">,
  request: ModelProvider.ModelRequest
): ResponseCreateParamsNonStreaming => {
  const input: Array<ResponseInputItem> = []
  for (const message of request.messages) {
    switch (message.role) {
      case "user": {
        input.push({ type: "message", role: "user", content: message.content })
        break
      }
      case "assistant": {
        if (message.content !== null && message.content !== "") {
          input.push({ type: "message", role: "assistant", content: message.content })
        }
        for (const call of message.toolCalls) {
          input.push({ type: "function_call", call_id: call.id, name: call.name, arguments: ToolArguments.stringify(call) })
        }
        break
      }
      case "tool": {
        input.push({ type: "function_call_output", call_id: message.toolCallId, output: message.content })
        break
      }
    }
  }
  const tools: Array<Tool> = request.tools.map((tool): FunctionTool => ({
    type: "function",
    name: tool.name,
    description: tool.description,
    parameters: { ...tool.parameters },
    strict: false,
    ...(tool.deferLoading ? { defer_loading: true } : {})
  }))
  if (request.tools.some((tool) => tool.deferLoading)) tools.push(toolSearch)
  return {
    ...options.extraBody,
    model: options.model,
    ...(request.instructions === "" ? {} : { instructions: request.instructions }),
    input,
    ...(tools.length === 0 ? {} : { tools })
  }
}

const WireMessage = Schema.Struct({
  type: Schema.Literal("message"),
  content: Schema.Array(Schema.Struct({
    type: Schema.String,
    text: Schema.optional(Schema.String),
    refusal: Schema.optional(Schema.String)
  }))
})

const WireFunctionCall = Schema.Struct({
  type: Schema.Literal("function_call"),
  call_id: Schema.String,
  name: Schema.String,
  arguments: Schema.String
})

/** Reasoning, tool search and hosted-tool items: not part of the provider-neutral message. */
const WireOtherItem = Schema.Struct({
  type: Schema.String.pipe(Schema.filter((type) => type !== "message" && type !== "function_call"))
})

const WireResponse = Schema.Struct({
  status: Schema.optional(Schema.NullOr(Schema.String)),
  error: Schema.optional(Schema.NullOr(Schema.Struct({ code: Schema.optional(Schema.String), message: Schema.String }))),
  output: Schema.Array(Schema.Union(WireMessage, WireFunctionCall, WireOtherItem)),
  usage: Schema.optional(Schema.NullOr(Schema.Struct({
    input_tokens: Schema.optional(Schema.NullOr(Schema.Number)),
    output_tokens: Schema.optional(Schema.NullOr(Schema.Number))
  })))
})

const fromWire = (provider: string) => (response: typeof WireResponse.Type) => {
  if (response.status === "failed") {
    return Effect.fail(
      new ProviderError({
        reason: "ServerError",
        provider,
        status: null,
        providerMessage: response.error?.message ?? "the response failed without an error message"
      })
    )
  }
  const texts: Array<string> = []
  const toolCalls: Array<ModelProvider.ToolCall> = []
  for (const item of response.output) {
    if (item.type === "message" && "content" in item) {
      for (const part of item.content) {
        if (part.type === "output_text" && part.text !== undefined) texts.push(part.text)
        else if (part.type === "refusal" && part.refusal !== undefined) texts.push(part.refusal)
      }
    } else if (item.type === "function_call" && "call_id" in item) {
      toolCalls.push({ id: item.call_id, name: item.name, ...ToolArguments.parse(item.arguments) })
    }
  }
  return Effect.succeed<ModelProvider.ModelResponse>({
    message: { role: "assistant", content: texts.length === 0 ? null : texts.join(""), toolCalls },
    usage: {
      inputTokens: response.usage?.input_tokens ?? null,
      outputTokens: response.usage?.output_tokens ?? null
    }
  })
}

/**
 * A Responses provider. It never throws: a client that cannot be built (no API key) fails every
 * `generate` with an `Authentication` error. A response with status `failed` is a `ServerError`
 * carrying the response's error message.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): ModelProvider.ModelProvider => {
  const name = options.name ?? "openai"
  const client = makeClient(name, options)
  const decode = decodeBody(WireResponse, name)
  const generate = Effect.fn("OpenAIResponses.generate")(function*(request: ModelProvider.ModelRequest) {
    const sdk = yield* client
    const body = requestBody(options, request)
    const response = yield* Effect.tryPromise({
      try: (signal) => sdk.responses.create(body, { signal }),
      catch: toProviderError(name)
    })
    return yield* Effect.flatMap(decode(response), fromWire(name))
  })
  return { name, protocol: "responses", generate }
}

/**
 * Provides a Responses model as the `ModelProvider` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<ModelProvider.ModelProvider> =>
  Layer.sync(ModelProvider.ModelProvider, () => make(options))
