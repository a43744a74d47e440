import { ModelProvider, ProviderError } from "@jitbox/agent"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { secondTurn } from "./fixtures.js"

describe("ModelProvider", () => {
  it.effect("a conversation round-trips through JSON with the Message schema", () =>
    Effect.gen(function*() {
      const messages: ReadonlyArray<ModelProvider.Message> = [
        ...secondTurn.messages,
        {
          role: "assistant",
          content: null,
          toolCalls: [{ id: "call_x", name: "get_weather", arguments: "{\"city\": \"Par", argumentsError: "not JSON" }]
        }
      ]
      const Conversation = Schema.Array(ModelProvider.Message)
      const json = JSON.stringify(yield* Schema.encode(Conversation)(messages))
      const decoded = yield* Schema.decodeUnknown(Conversation)(JSON.parse(json))
      assert.deepStrictEqual(decoded, messages)
    }))

  it.effect("the Message schema rejects what is not a message", () =>
    Effect.gen(function*() {
      const decode = Schema.decodeUnknown(ModelProvider.Message)
      yield* Effect.flip(decode({ role: "system", content: "x" }))
      yield* Effect.flip(decode({ role: "assistant", content: "x" }))
      yield* Effect.flip(decode({ role: "tool", toolCallId: "call_1", name: "t", content: "x" }))
    }))

  it.effect("ProviderError crosses a wire through its schema", () =>
    Effect.gen(function*() {
      const error = new ProviderError.ProviderError({
        reason: "BadRequest",
        provider: "openai",
        status: 400,
        providerMessage: "Invalid 'tools[0].function.name'."
      })
      const json = JSON.parse(JSON.stringify(yield* Schema.encode(ProviderError.ProviderError)(error)))
      assert.deepStrictEqual(json, {
        _tag: "ProviderError",
        reason: "BadRequest",
        provider: "openai",
        status: 400,
        providerMessage: "Invalid 'tools[0].function.name'."
      })
      const decoded = yield* Schema.decodeUnknown(ProviderError.ProviderError)(json)
      assert.instanceOf(decoded, ProviderError.ProviderError)
      assert.strictEqual(decoded.message, "openai: BadRequest (HTTP 400): Invalid 'tools[0].function.name'.")
    }))

  it("maps HTTP statuses to reasons", () => {
    const reasons = [400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 529].map((status) =>
      [status, ProviderError.reasonForStatus(status)]
    )
    assert.deepStrictEqual(reasons, [
      [400, "BadRequest"],
      [401, "Authentication"],
      [403, "Authentication"],
      [404, "BadRequest"],
      [408, "Timeout"],
      [409, "BadRequest"],
      [413, "BadRequest"],
      [422, "BadRequest"],
      [429, "RateLimited"],
      [500, "ServerError"],
      [502, "ServerError"],
      [503, "ServerError"],
      [529, "ServerError"]
    ])
  })
})
