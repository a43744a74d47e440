import { AnthropicMessages, ProviderError } from "@jitbox/agent"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { firstTurn, instructions, readSourceTool, secondTurn, weatherTool } from "./fixtures.js"
import * as WireServer from "./WireServer.js"

const path = WireServer.messagesPath

const provider = (server: WireServer.WireServer, options: Partial<AnthropicMessages.Options> = {}) =>
  AnthropicMessages.make({ model: "claude-sonnet-5-5", apiKey: "sk-ant-test", baseURL: server.url, ...options })

describe("AnthropicMessages", () => {
  it.scopedLive("sends the instructions as system and every tool with its input_schema", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.anthropic.text("Hello."))
      yield* provider(server).generate(firstTurn)

      assert.strictEqual(server.requests.length, 1)
      const { headers } = server.requests[0]!
      // SDK 1.x sends the API key as a bearer token (0.x sent it as x-api-key).
      assert.strictEqual(headers.authorization, "Bearer sk-ant-test")
      assert.match(String(headers["anthropic-version"]), /^\d{4}-\d{2}-\d{2}$/)
      assert.deepStrictEqual(server.bodies(path)[0], {
        model: "claude-sonnet-5-5",
        max_tokens: 4096,
        system: instructions,
        messages: [{ role: "user", content: "What is the weather in Paris and Oslo?" }],
        tools: [
          { name: weatherTool.name, description: weatherTool.description, input_schema: weatherTool.parameters },
          { name: readSourceTool.name, description: readSourceTool.description, input_schema: readSourceTool.parameters }
        ]
      })
      assert.notInclude(JSON.stringify(server.bodies(path)[0]), "defer_loading")
      assert.notInclude(JSON.stringify(server.bodies(path)[0]), "tool_search")
    }))

  it.scopedLive("parses tool_use blocks back and counts cached input tokens as input", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(
        path,
        WireServer.anthropic.message([
          WireServer.anthropic.textBlock("Let me look that up."),
          WireServer.anthropic.toolUseBlock("toolu_01paris", "get_weather", { city: "Paris" }),
          WireServer.anthropic.toolUseBlock("toolu_01oslo", "get_weather", { city: "Oslo" })
        ], { usage: { input: 300, output: 80, cacheRead: 1000 } })
      )
      const response = yield* provider(server).generate(firstTurn)
      assert.deepStrictEqual(response, {
        message: {
          role: "assistant",
          content: "Let me look that up.",
          toolCalls: [
            { id: "toolu_01paris", name: "get_weather", arguments: { city: "Paris" } },
            { id: "toolu_01oslo", name: "get_weather", arguments: { city: "Oslo" } }
          ]
        },
        usage: { inputTokens: 1300, outputTokens: 80 }
      })
    }))

  it.scopedLive("feeds results back as tool_result blocks with tool_use_id and is_error, in one user turn", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.anthropic.text("Paris is 18 °C; Oslo's station is offline."))
      const response = yield* provider(server).generate(secondTurn)
      assert.deepStrictEqual(server.bodies(path)[0].messages, [
        { role: "user", content: "What is the weather in Paris and Oslo?" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Let me look that up." },
            { type: "tool_use", id: "call_paris", name: "get_weather", input: { city: "Paris" } },
            { type: "tool_use", id: "call_oslo", name: "get_weather", input: { city: "Oslo" } }
          ]
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "call_paris", content: "{\"celsius\":18}", is_error: false },
            { type: "tool_result", tool_use_id: "call_oslo", content: "{\"error\":\"station offline\"}", is_error: true }
          ]
        }
      ])
      assert.deepStrictEqual(response.message, {
        role: "assistant",
        content: "Paris is 18 °C; Oslo's station is offline.",
        toolCalls: []
      })
    }))

  it.scopedLive("puts a user message that follows tool results in the same user turn, after them", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.anthropic.text("ok"))
      yield* provider(server).generate({
        ...secondTurn,
        messages: [
          ...secondTurn.messages.slice(0, 3),
          { role: "user", content: "Also, use Celsius." }
        ]
      })
      assert.deepStrictEqual(server.bodies(path)[0].messages[2], {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "call_paris", content: "{\"celsius\":18}", is_error: false },
          { type: "text", text: "Also, use Celsius." }
        ]
      })
    }))

  it.scopedLive("sends maxTokens as max_tokens and merges extraBody", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.anthropic.text("ok"))
      yield* provider(server, { maxTokens: 1024, extraBody: { temperature: 0 } }).generate({
        instructions: "",
        messages: [{ role: "user", content: "Hi" }],
        tools: []
      })
      assert.deepStrictEqual(server.bodies(path)[0], {
        model: "claude-sonnet-5-5",
        max_tokens: 1024,
        temperature: 0,
        messages: [{ role: "user", content: "Hi" }]
      })
    }))

  it.scopedLive("retries a 429 and then a 529 overload with the SDK's retries", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(
        path,
        WireServer.anthropicError(429, "Number of request tokens has exceeded your per-minute rate limit", {
          headers: WireServer.retryFast
        }),
        WireServer.anthropicError(529, "Overloaded", { headers: WireServer.retryFast }),
        WireServer.anthropic.text("Third time lucky.")
      )
      const response = yield* provider(server).generate(firstTurn)
      assert.strictEqual(response.message.content, "Third time lucky.")
      assert.strictEqual(server.requests.length, 3)
      assert.deepStrictEqual(server.bodies(path)[2], server.bodies(path)[0])
    }))

  it.scopedLive("a 500 that outlasts the retries is ServerError with the error body's message", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      const failing = WireServer.anthropicError(500, "Internal server error", { headers: WireServer.retryFast })
      server.script(path, failing, failing, failing)
      const error = yield* Effect.flip(provider(server).generate(firstTurn))
      assert.instanceOf(error, ProviderError.ProviderError)
      assert.strictEqual(error.reason, "ServerError")
      assert.strictEqual(error.status, 500)
      assert.strictEqual(error.provider, "anthropic")
      assert.strictEqual(error.providerMessage, "Internal server error")
      assert.strictEqual(server.requests.length, 3)
    }))

  it.scopedLive("a 400 is BadRequest with the server's message and is not retried", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(
        path,
        WireServer.anthropicError(
          400,
          "messages.1.content.0: unexpected `tool_use_id` found in `tool_result` blocks: call_x"
        )
      )
      const error = yield* Effect.flip(provider(server).generate(firstTurn))
      assert.strictEqual(error.reason, "BadRequest")
      assert.strictEqual(error.status, 400)
      assert.strictEqual(
        error.providerMessage,
        "messages.1.content.0: unexpected `tool_use_id` found in `tool_result` blocks: call_x"
      )
      assert.strictEqual(server.requests.length, 1)
    }))

  it.scopedLive("a 401 is Authentication", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.anthropicError(401, "invalid x-api-key"))
      const error = yield* Effect.flip(provider(server).generate(firstTurn))
      assert.strictEqual(error.reason, "Authentication")
      assert.strictEqual(error.status, 401)
      assert.strictEqual(error.providerMessage, "invalid x-api-key")
    }))

  it.scopedLive("a server that never answers is a Timeout", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, WireServer.hang)
      const error = yield* Effect.flip(provider(server, { timeoutMs: 100, maxRetries: 0 }).generate(firstTurn))
      assert.strictEqual(error.reason, "Timeout")
      assert.strictEqual(error.status, null)
      assert.strictEqual(server.requests.length, 1)
    }))

  it.scopedLive("no credentials at all is an Authentication error, and nothing is sent", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      const saved = { key: process.env["ANTHROPIC_API_KEY"], token: process.env["ANTHROPIC_AUTH_TOKEN"] }
      delete process.env["ANTHROPIC_API_KEY"]
      delete process.env["ANTHROPIC_AUTH_TOKEN"]
      const model = AnthropicMessages.make({ model: "claude-sonnet-5-5", baseURL: server.url, maxRetries: 0 })
      const error = yield* Effect.flip(model.generate(firstTurn)).pipe(
        Effect.ensuring(Effect.sync(() => {
          if (saved.key !== undefined) process.env["ANTHROPIC_API_KEY"] = saved.key
          if (saved.token !== undefined) process.env["ANTHROPIC_AUTH_TOKEN"] = saved.token
        }))
      )
      assert.strictEqual(error.reason, "Authentication")
      assert.strictEqual(server.requests.length, 0)
    }))

  it.scopedLive("a 200 that is not a message (an HTML proxy page) is InvalidResponse", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(path, {
        _tag: "Text",
        status: 200,
        contentType: "text/html",
        body: "<html><body>Welcome to the captive portal</body></html>"
      })
      const error = yield* Effect.flip(provider(server).generate(firstTurn))
      assert.strictEqual(error.reason, "InvalidResponse")
      assert.strictEqual(error.status, null)
    }))
})
