import { OpenAIChatCompletions, ProviderError } from "@jitbox/agent"
import { ModelProvider } from "@jitbox/agent"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { firstTurn, instructions, readSourceTool, secondTurn, weatherTool } from "./fixtures.js"
import * as WireServer from "./WireServer.js"

const path = WireServer.chatPath

const provider = (server: WireServer.WireServer, options: Partial<OpenAIChatCompletions.Options> = {}) =>
  OpenAIChatCompletions.make({ model: "gpt-4.1", apiKey: "sk-test", baseURL: `${server.url}/v1`, ...options })

describe("OpenAIChatCompletions", () => {
  it.scopedLive("sends the instructions as the first system message and every tool in full", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.chat.text("Hello."))
      yield* provider(server).generate(firstTurn)

      const [request] = server.requests
      assert.strictEqual(server.requests.length, 1)
      assert.strictEqual(request!.method, "POST")
      assert.strictEqual(request!.headers.authorization, "Bearer sk-test")
      assert.deepStrictEqual(request!.body, {
        model: "gpt-4.1",
        messages: [
          { role: "system", content: instructions },
          { role: "user", content: "What is the weather in Paris and Oslo?" }
        ],
        tools: [
          {
            type: "function",
            function: { name: weatherTool.name, description: weatherTool.description, parameters: weatherTool.parameters }
          },
          {
            type: "function",
            function: {
              name: readSourceTool.name,
              description: readSourceTool.description,
              parameters: readSourceTool.parameters
            }
          }
        ]
      })
      // Chat Completions has no deferred loading: the flag is dropped and no tool_search is added.
      assert.notInclude(JSON.stringify(request!.body), "defer_loading")
      assert.notInclude(JSON.stringify(request!.body), "tool_search")
    }))

  it.scopedLive("omits the tools and the system message when there are none", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.chat.text("Hi."))
      yield* provider(server).generate({ instructions: "", messages: [{ role: "user", content: "Hi" }], tools: [] })
      assert.deepStrictEqual(server.bodies(path)[0], { model: "gpt-4.1", messages: [{ role: "user", content: "Hi" }] })
    }))

  it.scopedLive("parses tool calls and usage back", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(
        path,
        WireServer.chat.toolCalls(
          { id: "call_paris", name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
          { id: "call_oslo", name: "get_weather", arguments: "{\"city\": \"Oslo\"}" }
        )
      )
      const response = yield* provider(server).generate(firstTurn)
      assert.deepStrictEqual(response, {
        message: {
          role: "assistant",
          content: null,
          toolCalls: [
            { id: "call_paris", name: "get_weather", arguments: { city: "Paris" } },
            { id: "call_oslo", name: "get_weather", arguments: { city: "Oslo" } }
          ]
        },
        usage: { inputTokens: 82, outputTokens: 17 }
      })
    }))

  it.scopedLive("feeds the tool results back under the ids of their calls", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.chat.text("Paris is 18 °C; Oslo's station is offline."))
      const response = yield* provider(server).generate(secondTurn)

      assert.deepStrictEqual(server.bodies(path)[0].messages.slice(2), [
        {
          role: "assistant",
          content: "Let me look that up.",
          tool_calls: [
            { id: "call_paris", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } },
            { id: "call_oslo", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Oslo\"}" } }
          ]
        },
        { role: "tool", tool_call_id: "call_paris", content: "{\"celsius\":18}" },
        { role: "tool", tool_call_id: "call_oslo", content: "{\"error\":\"station offline\"}" }
      ])
      assert.deepStrictEqual(response.message, {
        role: "assistant",
        content: "Paris is 18 °C; Oslo's station is offline.",
        toolCalls: []
      })
    }))

  it.scopedLive("keeps unparsable arguments as the raw text with an error, and sends that text back unchanged", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(
        path,
        WireServer.chat.toolCalls({ id: "call_1", name: "get_weather", arguments: "{\"city\": \"Par" }),
        WireServer.chat.text("Sorry.")
      )
      const model = provider(server)
      const { message } = yield* model.generate(firstTurn)
      const [call] = message.toolCalls
      assert.strictEqual(call!.arguments, "{\"city\": \"Par")
      assert.match(call!.argumentsError!, /not valid JSON/)

      yield* model.generate({
        ...firstTurn,
        messages: [
          ...firstTurn.messages,
          message,
          { role: "tool", toolCallId: "call_1", name: "get_weather", content: call!.argumentsError!, isError: true }
        ]
      })
      assert.strictEqual(server.bodies(path)[1].messages[2].tool_calls[0].function.arguments, "{\"city\": \"Par")
    }))

  it.scopedLive("accepts arguments sent as an object and empty arguments, as some compatible servers do", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.json({
        id: "chatcmpl-ollama",
        object: "chat.completion",
        created: 1_764_000_000,
        model: "llama3.1",
        system_fingerprint: "fp_ollama",
        choices: [{
          index: 0,
          message: {
            role: "assistant",
            content: "",
            tool_calls: [
              { id: "call_a", index: 0, type: "function", function: { name: "get_weather", arguments: { city: "Oslo" } } },
              { id: "call_b", index: 1, type: "function", function: { name: "list_tools", arguments: "" } }
            ]
          },
          finish_reason: "tool_calls"
        }],
        usage: { prompt_tokens: 50, completion_tokens: 9, total_tokens: 59 }
      }))
      const model = OpenAIChatCompletions.make({ model: "llama3.1", baseURL: `${server.url}/v1`, apiKey: "ollama" })
      const { message } = yield* model.generate(firstTurn)
      assert.deepStrictEqual(message, {
        role: "assistant",
        content: null,
        toolCalls: [
          { id: "call_a", name: "get_weather", arguments: { city: "Oslo" } },
          { id: "call_b", name: "list_tools", arguments: {} }
        ]
      })
      assert.strictEqual(server.bodies(path)[0].model, "llama3.1")
      assert.strictEqual(server.requests[0]!.headers.authorization, "Bearer ollama")
    }))

  it.scopedLive("merges extraBody without letting it replace the conversation", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.chat.text("ok"))
      yield* provider(server, { extraBody: { temperature: 0.2, messages: [], model: "other" } }).generate(firstTurn)
      const body = server.bodies(path)[0]
      assert.strictEqual(body.temperature, 0.2)
      assert.strictEqual(body.model, "gpt-4.1")
      assert.strictEqual(body.messages.length, 2)
    }))

  it.scopedLive("retries a 429 and then a 500 with the SDK's retries", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(
        path,
        WireServer.openAIError(429, "Rate limit reached for gpt-4.1", { headers: WireServer.retryFast }),
        WireServer.openAIError(500, "The server had an error while processing your request.", {
          headers: WireServer.retryFast
        }),
        WireServer.chat.text("Third time lucky.")
      )
      const response = yield* provider(server).generate(firstTurn)
      assert.strictEqual(response.message.content, "Third time lucky.")
      assert.strictEqual(server.requests.length, 3)
      const [first, second, third] = server.bodies(path)
      assert.deepStrictEqual(second, first)
      assert.deepStrictEqual(third, first)
      assert.strictEqual(server.requests[2]!.headers["x-stainless-retry-count"], "2")
    }))

  it.scopedLive("a 429 that outlasts the retries is RateLimited with the status and the server's message", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      const limited = WireServer.openAIError(429, "Rate limit reached for gpt-4.1 on tokens per min (TPM)", {
        headers: WireServer.retryFast
      })
      server.script(path, limited, limited)
      const error = yield* Effect.flip(provider(server, { maxRetries: 1 }).generate(firstTurn))
      assert.instanceOf(error, ProviderError.ProviderError)
      assert.strictEqual(error.reason, "RateLimited")
      assert.strictEqual(error.status, 429)
      assert.strictEqual(error.provider, "openai")
      assert.strictEqual(error.providerMessage, "Rate limit reached for gpt-4.1 on tokens per min (TPM)")
      assert.strictEqual(server.requests.length, 2)
    }))

  it.scopedLive("a 500 that outlasts the retries is ServerError", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      const failing = WireServer.openAIError(503, "The engine is currently overloaded.", { headers: WireServer.retryFast })
      server.script(path, failing, failing, failing)
      const error = yield* Effect.flip(provider(server).generate(firstTurn))
      assert.strictEqual(error.reason, "ServerError")
      assert.strictEqual(error.status, 503)
      assert.strictEqual(error.providerMessage, "The engine is currently overloaded.")
      assert.strictEqual(server.requests.length, 3)
    }))

  it.scopedLive("a 400 is BadRequest with the server's message and is not retried", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.openAIError(400, "Invalid schema for function 'get_weather': 'nope' is not valid."))
      const error = yield* Effect.flip(provider(server).generate(firstTurn))
      assert.strictEqual(error.reason, "BadRequest")
      assert.strictEqual(error.status, 400)
      assert.strictEqual(error.providerMessage, "Invalid schema for function 'get_weather': 'nope' is not valid.")
      assert.strictEqual(error.message, "openai: BadRequest (HTTP 400): Invalid schema for function 'get_weather': 'nope' is not valid.")
      assert.strictEqual(server.requests.length, 1)
    }))

  it.scopedLive("a 401 is Authentication", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.openAIError(401, "Incorrect API key provided: sk-test.", { type: "invalid_api_key" }))
      const error = yield* Effect.flip(provider(server).generate(firstTurn))
      assert.strictEqual(error.reason, "Authentication")
      assert.strictEqual(error.status, 401)
      assert.strictEqual(error.providerMessage, "Incorrect API key provided: sk-test.")
    }))

  it.scopedLive("a server that never answers is a Timeout", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.hang)
      const error = yield* Effect.flip(provider(server, { timeoutMs: 100, maxRetries: 0 }).generate(firstTurn))
      assert.strictEqual(error.reason, "Timeout")
      assert.strictEqual(error.status, null)
      assert.strictEqual(server.requests.length, 1)
      yield* server.abandoned(1)
    }))

  it.scopedLive("a timed-out attempt is retried", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.hang, WireServer.chat.text("Back."))
      // 400 ms per attempt: ample for the local answer of the second attempt even on a loaded machine.
      const response = yield* provider(server, { timeoutMs: 400, maxRetries: 1 }).generate(firstTurn)
      assert.strictEqual(response.message.content, "Back.")
      assert.strictEqual(server.requests.length, 2)
    }))

  it.scopedLive("an unreachable server is a Connection error", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      // A port that was just free: nothing listens there.
      const closed = yield* Effect.scoped(Effect.map(WireServer.make, (other) => other.url))
      const error = yield* Effect.flip(
        provider(server, { baseURL: `${closed}/v1`, maxRetries: 0 }).generate(firstTurn)
      )
      assert.strictEqual(error.reason, "Connection")
      assert.strictEqual(error.status, null)
      assert.match(error.providerMessage, /ECONNREFUSED/)
    }))

  it.scopedLive("a 200 that is not a chat completion is InvalidResponse", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.json({ object: "chat.completion", choices: [] }))
      const error = yield* Effect.flip(provider(server).generate(firstTurn))
      assert.strictEqual(error.reason, "InvalidResponse")
      assert.match(error.providerMessage, /choices/)
    }))

  it.live("no API key at all is an Authentication error, not a throw", () =>
    Effect.gen(function*() {
      const saved = process.env["OPENAI_API_KEY"]
      delete process.env["OPENAI_API_KEY"]
      const model = OpenAIChatCompletions.make({ model: "gpt-4.1", baseURL: "http://127.0.0.1:9/v1" })
      if (saved !== undefined) process.env["OPENAI_API_KEY"] = saved
      const error = yield* Effect.flip(model.generate(firstTurn))
      assert.strictEqual(error.reason, "Authentication")
      assert.match(error.providerMessage, /OPENAI_API_KEY/)
    }))

  it.scopedLive("the Promise facade resolves with the response and rejects with the ProviderError", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.chat.text("From a promise."), WireServer.openAIError(400, "Bad tools."))
      const model = ModelProvider.toPromise(provider(server))
      assert.strictEqual(model.protocol, "chat_completions")
      const response = yield* Effect.promise(() => model.generate(firstTurn))
      assert.strictEqual(response.message.content, "From a promise.")
      const rejection = yield* Effect.promise(() => model.generate(firstTurn).then(() => undefined, (error: unknown) => error))
      assert.instanceOf(rejection, ProviderError.ProviderError)
      assert.strictEqual((rejection as ProviderError.ProviderError).status, 400)
    }))

  it.scopedLive("aborting the signal of the Promise facade aborts the HTTP request", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.hang)
      const model = ModelProvider.toPromise(provider(server))
      const controller = new AbortController()
      const pending = model.generate(firstTurn, { signal: controller.signal }).then(() => "resolved", () => "rejected")
      yield* server.received(1)
      controller.abort()
      assert.strictEqual(yield* Effect.promise(() => pending), "rejected")
      yield* server.abandoned(1) // the SDK closed the connection: the request itself was aborted
      assert.strictEqual(server.requests.length, 1)
    }))
})
