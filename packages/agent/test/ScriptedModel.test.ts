import { ModelProvider, ProviderError, ScriptedModel } from "@jitbox/agent"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { firstTurn, secondTurn } from "./fixtures.js"

describe("ScriptedModel", () => {
  it.effect("hands the script each request with a turn number starting at 0", () =>
    Effect.gen(function*() {
      const seen: Array<[number, number]> = []
      const model = ScriptedModel.make((request, turn) => {
        seen.push([turn, request.messages.length])
        return turn === 0
          ? { role: "assistant", content: null, toolCalls: [{ id: "call_1", name: "get_weather", arguments: { city: "Oslo" } }] }
          : "Done."
      })
      assert.strictEqual(model.protocol, "scripted")
      assert.strictEqual(model.name, "scripted")
      const first = yield* model.generate(firstTurn)
      const second = yield* model.generate(secondTurn)
      assert.deepStrictEqual(seen, [[0, 1], [1, 4]])
      assert.deepStrictEqual(first, {
        message: {
          role: "assistant",
          content: null,
          toolCalls: [{ id: "call_1", name: "get_weather", arguments: { city: "Oslo" } }]
        },
        usage: { inputTokens: null, outputTokens: null }
      })
      assert.deepStrictEqual(second.message, { role: "assistant", content: "Done.", toolCalls: [] })
    }))

  it.effect("counts a turn when the call runs, not when the Effect is built", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make((_, turn) => `turn ${turn}`)
      const call = model.generate(firstTurn)
      const again = model.generate(firstTurn)
      assert.strictEqual((yield* again).message.content, "turn 0")
      assert.strictEqual((yield* call).message.content, "turn 1")
      assert.strictEqual((yield* call).message.content, "turn 2")
    }))

  it.effect("an Effect script can fail with a ProviderError", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.make(() =>
        Effect.fail(new ProviderError.ProviderError({ reason: "RateLimited", provider: "scripted", status: 429, providerMessage: "slow down" }))
      )
      const error = yield* Effect.flip(model.generate(firstTurn))
      assert.strictEqual(error.reason, "RateLimited")
      assert.strictEqual(error.status, 429)
    }))

  it.effect("fromReplies answers in order and fails loudly past the end", () =>
    Effect.gen(function*() {
      const model = ScriptedModel.fromReplies(["one", "two"], { name: "script-a" })
      assert.strictEqual((yield* model.generate(firstTurn)).message.content, "one")
      assert.strictEqual((yield* model.generate(firstTurn)).message.content, "two")
      const error = yield* Effect.flip(model.generate(firstTurn))
      assert.strictEqual(error.reason, "InvalidResponse")
      assert.strictEqual(error.provider, "script-a")
      assert.strictEqual(error.providerMessage, "the script has 2 replies and no reply for turn 2: turns count every generate call of this provider, across runs")
    }))

  it.effect("layer provides the ModelProvider service, starting at turn 0 each time it is built", () =>
    Effect.gen(function*() {
      const layer = ScriptedModel.layer((_, turn) => `turn ${turn}`)
      const ask = Effect.flatMap(ModelProvider.ModelProvider, (model) => model.generate(firstTurn))
      assert.strictEqual((yield* Effect.provide(ask, layer)).message.content, "turn 0")
      assert.strictEqual((yield* Effect.provide(ask, layer)).message.content, "turn 0")
    }))

  it.live("the Promise facade works without a network", () =>
    Effect.gen(function*() {
      const model = ModelProvider.toPromise(ScriptedModel.fromReplies(["42"]))
      const response = yield* Effect.promise(() => model.generate(firstTurn))
      assert.strictEqual(response.message.content, "42")
      const rejection = yield* Effect.promise(() => model.generate(firstTurn).then(() => null, (error: unknown) => error))
      assert.instanceOf(rejection, ProviderError.ProviderError)
    }))

})
