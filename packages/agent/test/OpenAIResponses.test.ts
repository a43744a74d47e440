import { ModelProvider, OpenAIResponses } from "@jitbox/agent"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { firstTurn, instructions, readSourceTool, secondTurn, weatherTool } from "./fixtures.js"
import * as WireServer from "./WireServer.js"

const path = WireServer.responsesPath

const provider = (server: WireServer.WireServer, options: Partial<OpenAIResponses.Options> = {}) =>
  OpenAIResponses.make({ model: "gpt-5.4", apiKey: "sk-test", baseURL: `${server.url}/v1`, ...options })

describe("OpenAIResponses", () => {
  it.scopedLive("sends instructions in their own field, defers only the deferred tools and adds tool_search", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.responses.text("Hello."))
      yield* provider(server).generate(firstTurn)

      assert.strictEqual(server.requests.length, 1)
      assert.strictEqual(server.requests[0]!.headers.authorization, "Bearer sk-test")
      assert.deepStrictEqual(server.bodies(path)[0], {
        model: "gpt-5.4",
        instructions,
        input: [{ type: "message", role: "user", content: "What is the weather in Paris and Oslo?" }],
        tools: [
          {
            type: "function",
            name: weatherTool.name,
            description: weatherTool.description,
            parameters: weatherTool.parameters,
            strict: false
          },
          {
            type: "function",
            name: readSourceTool.name,
            description: readSourceTool.description,
            parameters: readSourceTool.parameters,
            strict: false,
            defer_loading: true
          },
          { type: "tool_search" }
        ]
      })
    }))

  it.scopedLive("sends neither defer_loading nor tool_search when no tool is deferred", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.responses.text("Hello."))
      yield* provider(server).generate({ ...firstTurn, tools: [weatherTool, { ...readSourceTool, deferLoading: false }] })
      const body = server.bodies(path)[0]
      assert.deepStrictEqual(body.tools.map((tool: { name?: string; type: string }) => tool.name ?? tool.type), [
        "get_weather",
        "read_tool_source"
      ])
      assert.notInclude(JSON.stringify(body), "defer_loading")
      assert.notInclude(JSON.stringify(body), "tool_search")
    }))

  it.scopedLive("omits instructions and tools when there are none", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.responses.text("Hi."))
      yield* provider(server).generate({ instructions: "", messages: [{ role: "user", content: "Hi" }], tools: [] })
      assert.deepStrictEqual(server.bodies(path)[0], {
        model: "gpt-5.4",
        input: [{ type: "message", role: "user", content: "Hi" }]
      })
    }))

  it.scopedLive("parses function_call items back, with call_id as the id, and skips reasoning and tool search items", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(
        path,
        WireServer.responses.response([
          WireServer.responses.reasoning(),
          WireServer.responses.toolSearchCall("read source"),
          WireServer.responses.message("Checking both cities."),
          WireServer.responses.functionCall({ id: "call_paris", name: "get_weather", arguments: "{\"city\":\"Paris\"}" }),
          WireServer.responses.functionCall({ id: "call_oslo", name: "get_weather", arguments: "{\"city\":\"Oslo\"}" })
        ], { usage: { input: 120, output: 44 } })
      )
      const response = yield* provider(server).generate(firstTurn)
      assert.deepStrictEqual(response, {
        message: {
          role: "assistant",
          content: "Checking both cities.",
          toolCalls: [
            { id: "call_paris", name: "get_weather", arguments: { city: "Paris" } },
            { id: "call_oslo", name: "get_weather", arguments: { city: "Oslo" } }
          ]
        },
        usage: { inputTokens: 120, outputTokens: 44 }
      })
    }))

  it.scopedLive("feeds the calls and their outputs back as function_call and function_call_output items", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.responses.text("Paris is 18 °C; Oslo's station is offline."))
      const response = yield* provider(server).generate(secondTurn)
      assert.deepStrictEqual(server.bodies(path)[0].input, [
        { type: "message", role: "user", content: "What is the weather in Paris and Oslo?" },
        { type: "message", role: "assistant", content: "Let me look that up." },
        { type: "function_call", call_id: "call_paris", name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
        { type: "function_call", call_id: "call_oslo", name: "get_weather", arguments: "{\"city\":\"Oslo\"}" },
        { type: "function_call_output", call_id: "call_paris", output: "{\"celsius\":18}" },
        { type: "function_call_output", call_id: "call_oslo", output: "{\"error\":\"station offline\"}" }
      ])
      assert.strictEqual(response.message.content, "Paris is 18 °C; Oslo's station is offline.")
      assert.deepStrictEqual(response.message.toolCalls, [])
    }))

  it.scopedLive("keeps unparsable arguments as the raw text with an error", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.responses.functionCalls({ id: "call_1", name: "get_weather", arguments: "city=Paris" }))
      const { message } = yield* provider(server).generate(firstTurn)
      assert.strictEqual(message.toolCalls[0]!.arguments, "city=Paris")
      assert.match(message.toolCalls[0]!.argumentsError!, /not valid JSON/)
    }))

  it.scopedLive("a response with status failed is a ServerError with the response's message", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(
        path,
        WireServer.responses.response([], {
          status: "failed",
          error: { code: "server_error", message: "The model failed to generate a response." }
        })
      )
      const error = yield* Effect.flip(provider(server).generate(firstTurn))
      assert.strictEqual(error.reason, "ServerError")
      assert.strictEqual(error.providerMessage, "The model failed to generate a response.")
    }))

  it.scopedLive("retries a 429 and then a 500 with the SDK's retries", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(
        path,
        WireServer.openAIError(429, "Rate limit reached for gpt-5.4", { headers: WireServer.retryFast }),
        WireServer.openAIError(500, "The server had an error while processing your request.", {
          headers: WireServer.retryFast
        }),
        WireServer.responses.text("Third time lucky.")
      )
      const response = yield* provider(server).generate(firstTurn)
      assert.strictEqual(response.message.content, "Third time lucky.")
      assert.strictEqual(server.requests.length, 3)
      assert.deepStrictEqual(server.bodies(path)[2], server.bodies(path)[0])
    }))

  it.scopedLive("a 429 that outlasts the retries is RateLimited", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      const limited = WireServer.openAIError(429, "Rate limit reached for gpt-5.4", { headers: WireServer.retryFast })
      server.script(path, limited, limited, limited)
      const error = yield* Effect.flip(provider(server).generate(firstTurn))
      assert.strictEqual(error.reason, "RateLimited")
      assert.strictEqual(error.status, 429)
      assert.strictEqual(error.providerMessage, "Rate limit reached for gpt-5.4")
      assert.strictEqual(server.requests.length, 3)
    }))

  it.scopedLive("a 400 is BadRequest with the server's message and is not retried", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.openAIError(400, "Tool search is not supported with this model."))
      const error = yield* Effect.flip(provider(server).generate(firstTurn))
      assert.strictEqual(error.reason, "BadRequest")
      assert.strictEqual(error.status, 400)
      assert.strictEqual(error.providerMessage, "Tool search is not supported with this model.")
      assert.strictEqual(server.requests.length, 1)
    }))

  it.scopedLive("a server that never answers is a Timeout", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.hang)
      const error = yield* Effect.flip(provider(server, { timeoutMs: 100, maxRetries: 0 }).generate(firstTurn))
      assert.strictEqual(error.reason, "Timeout")
      assert.strictEqual(error.status, null)
    }))

  it.scopedLive("layer provides the provider as the ModelProvider service", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.responses.text("Through a layer."))
      const layer = OpenAIResponses.layer({ model: "gpt-5.4", apiKey: "sk-test", baseURL: `${server.url}/v1`, name: "primary" })
      const model = yield* Effect.provide(ModelProvider.ModelProvider, layer)
      assert.strictEqual(model.name, "primary")
      assert.strictEqual(model.protocol, "responses")
      assert.strictEqual((yield* model.generate(firstTurn)).message.content, "Through a layer.")
    }))
})
