/**
 * A `ModelProvider` that answers from a script instead of a network: for tests, examples and the
 * offline demo. The script sees every request and the turn number and returns the assistant
 * message, a plain string for a text-only answer, or an Effect of either (which may fail with a
 * `ProviderError` to rehearse failures).
 *
 * The turn counts every `generate` call of this provider: 0 for the first, then 1, 2, … It is not
 * reset when an agent starts its next run (a `ModelRequest` does not say which run it belongs to),
 * so an agent's second run goes on from where its first stopped, and two agents sharing one
 * provider share its count. (`RunResult.turns` and `maxTurns` are per run, counted from 1.) Make a
 * new provider, or build `layer` again, to start at 0; `fromReplies` takes the replies of every run
 * in one list, in order.
 *
 * @example
 * ```ts
 * const model = ScriptedModel.fromReplies([
 *   { role: "assistant", content: null, toolCalls: [{ id: "call_1", name: "twice", arguments: { n: 21 } }] },
 *   "42"
 * ])
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ModelProvider from "./ModelProvider.js"
import { ProviderError } from "./ProviderError.js"

/**
 * One scripted answer: an assistant message, or its text alone.
 *
 * @since 0.1.0
 * @category models
 */
export type Reply = ModelProvider.AssistantMessage | string

/**
 * `turn` is the number of this `generate` call among all of this provider's calls, from 0, across
 * runs.
 *
 * @since 0.1.0
 * @category models
 */
export type Script = (
  request: ModelProvider.ModelRequest,
  turn: number
) => Reply | Effect.Effect<Reply, ProviderError>

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The provider's name in errors and logs. Default `"scripted"`. */
  readonly name?: string | undefined
}

const toMessage = (reply: Reply): ModelProvider.AssistantMessage =>
  typeof reply === "string" ? { role: "assistant", content: reply, toolCalls: [] } : reply

/**
 * A provider that asks `script` for every answer. Usage is reported as unknown (`null`). The turn
 * count starts at 0 here and is never reset.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (script: Script, options: Options = {}): ModelProvider.ModelProvider => {
  const name = options.name ?? "scripted"
  let turns = 0
  const generate = Effect.fn("ScriptedModel.generate")(function*(request: ModelProvider.ModelRequest) {
    const turn = turns++
    const reply = script(request, turn)
    const resolved: Reply = Effect.isEffect(reply) ? yield* reply : reply
    return { message: toMessage(resolved), usage: { inputTokens: null, outputTokens: null } }
  })
  return { name, protocol: "scripted", generate }
}

/**
 * A provider that gives `replies[turn]` on each turn: the replies of an agent's first run, then
 * those of its second, and so on, since turns count across runs. A turn past the end of the list
 * fails with an `InvalidResponse` error naming the turn, so a loop that asks once too often fails
 * loudly.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromReplies = (replies: ReadonlyArray<Reply>, options: Options = {}): ModelProvider.ModelProvider => {
  const name = options.name ?? "scripted"
  return make((_, turn) => {
    const reply = replies[turn]
    return reply !== undefined ? reply : Effect.fail(
      new ProviderError({
        reason: "InvalidResponse",
        provider: name,
        status: null,
        providerMessage: `the script has ${replies.length} ${replies.length === 1 ? "reply" : "replies"} and no reply for turn ${turn}: ` +
          "turns count every generate call of this provider, across runs"
      })
    )
  }, options)
}

/**
 * Provides a scripted model as the `ModelProvider` service. Each time the layer is built it starts
 * again at turn 0.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (script: Script, options: Options = {}): Layer.Layer<ModelProvider.ModelProvider> =>
  Layer.sync(ModelProvider.ModelProvider, () => make(script, options))
