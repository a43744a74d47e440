/**
 * Counts the per-request tokens of the management tier (EXP-10's scope): the control-tool
 * definitions as sent on the wire plus the instruction block, cl100k_base, offline.
 *
 * Deferred definitions (`defer_loading: true`) travel in the request but the provider keeps them
 * out of the model's context until a tool search loads one, so they are not part of the
 * per-request cost; the hosted `tool_search` entry that replaces them is.
 *
 * @since 0.1.0
 */
import { Tiktoken } from "js-tiktoken/lite"
import cl100k_base from "js-tiktoken/ranks/cl100k_base"
import { exposureFor, type ModelProtocol } from "../packages/core/src/Exposure.js"
import type { InspectionToolExposure } from "../packages/core/src/InspectionToolExposure.js"
import { type WireTool, wireTools } from "./wireTools.js"

/** The protocols the benchmark measures, in report order. @since 0.1.0 @category constants */
export const protocols = ["responses", "chat_completions"] as const satisfies ReadonlyArray<ModelProtocol>

/** The modes the benchmark measures, in report order. @since 0.1.0 @category constants */
export const modes = ["always", "deferred", "hidden"] as const satisfies ReadonlyArray<InspectionToolExposure>

/** @since 0.1.0 @category models */
export type TokenTable = { readonly [P in typeof protocols[number]]: { readonly [M in typeof modes[number]]: number } }

let encoder: Tiktoken | undefined

/** cl100k_base tokens of a string; the encoder is built once (about 0.7 s). @since 0.1.0 @category counting */
export const countTokens = (text: string): number => {
  encoder ??= new Tiktoken(cl100k_base)
  return encoder.encode(text).length
}

/** The entries of a rendered `tools` array that reach the model's context. @since 0.1.0 @category counting */
export const inContext = (tools: ReadonlyArray<WireTool>): ReadonlyArray<WireTool> =>
  tools.filter((tool) => tool["defer_loading"] !== true)

/** The request payload of one mode on one protocol, as counted. @since 0.1.0 @category counting */
export const payload = (exposure: InspectionToolExposure, protocol: typeof protocols[number]) => {
  const exposed = exposureFor(exposure, protocol)
  return { instructions: exposed.instructions, tools: wireTools(protocol, exposed.tools) }
}

/** tokens(JSON of the in-context tools) + tokens(instructions). @since 0.1.0 @category counting */
export const exposureTokens = (exposure: InspectionToolExposure, protocol: typeof protocols[number]): number => {
  const { instructions, tools } = payload(exposure, protocol)
  return countTokens(JSON.stringify(inContext(tools))) + countTokens(instructions)
}

/** Every mode on every measured protocol. @since 0.1.0 @category counting */
export const tokenTable = (): TokenTable => {
  const row = (protocol: typeof protocols[number]) => ({
    always: exposureTokens("always", protocol),
    deferred: exposureTokens("deferred", protocol),
    hidden: exposureTokens("hidden", protocol)
  })
  return { responses: row("responses"), chat_completions: row("chat_completions") }
}

/** The reference's figures (D-12), the ceiling to beat. @since 0.1.0 @category constants */
export const referenceTable: TokenTable = {
  responses: { always: 3230, deferred: 2370, hidden: 2080 },
  chat_completions: { always: 3230, deferred: 3250, hidden: 2080 }
}

/** The project's targets on Responses. @since 0.1.0 @category constants */
export const responsesTargets = { always: 1950, deferred: 1450, hidden: 1250 } as const
