/**
 * What the model receives of the management tier for an exposure mode and a model protocol:
 * which definitions, which of them are deferred, and the instruction block (EXP-03..08, EXP-12/13).
 * Deferral depends on a provider feature, so it only survives on OpenAI Responses; every other
 * protocol receives every definition the mode exposes. Hiding is the application's decision and
 * applies on every protocol.
 *
 * @since 0.1.0
 */
import * as Guidance from "./Guidance.js"
import type { InspectionToolExposure } from "./InspectionToolExposure.js"
import type { JsonSchema } from "./JsonSchema.js"
import { type ManagementTool, managementTools } from "./ManagementTools.js"

/**
 * @since 0.1.0
 * @category models
 */
export const ModelProtocol = {
  Responses: "responses",
  ChatCompletions: "chat_completions",
  AnthropicMessages: "anthropic_messages"
} as const

/**
 * @since 0.1.0
 * @category models
 */
export type ModelProtocol = typeof ModelProtocol[keyof typeof ModelProtocol]

/**
 * A management tool as exposed in a mode, before any protocol is applied.
 *
 * @since 0.1.0
 * @category models
 */
export type ExposedManagementTool = ManagementTool & { readonly deferLoading: boolean }

/**
 * A tool definition ready for a provider to render.
 *
 * @since 0.1.0
 * @category models
 */
export interface ExposedTool {
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema
  readonly deferLoading: boolean
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ProtocolExposure {
  readonly instructions: string
  readonly tools: ReadonlyArray<ExposedTool>
}

const expose = (tools: ReadonlyArray<ManagementTool>, deferInspection: boolean) =>
  Object.freeze(tools.map((tool): ExposedManagementTool =>
    Object.freeze({ ...tool, deferLoading: deferInspection && tool.tier === "inspection" })
  ))

const exposedByMode: { readonly [K in InspectionToolExposure]: ReadonlyArray<ExposedManagementTool> } = {
  always: expose(managementTools, false),
  deferred: expose(managementTools, true),
  hidden: expose(managementTools.filter((tool) => tool.tier === "control"), false)
}

/**
 * The management definitions a mode exposes: Hidden drops the inspection tier, Deferred marks it
 * `deferLoading`, Always sends every definition unmarked (EXP-03, EXP-05, EXP-06).
 *
 * @since 0.1.0
 * @category constructors
 */
export const exposedManagementTools = (exposure: InspectionToolExposure): ReadonlyArray<ExposedManagementTool> =>
  exposedByMode[exposure]

/**
 * Whether the protocol can hold definitions back until a hosted tool search loads them.
 *
 * @since 0.1.0
 * @category predicates
 */
export const supportsDeferLoading = (protocol: ModelProtocol): boolean => protocol === ModelProtocol.Responses

/**
 * The instruction block and the management definitions for one mode on one protocol. A protocol
 * without deferred loading receives every definition the mode exposes with `deferLoading` false,
 * and its instructions never mention a tool search (EXP-04, EXP-07, EXP-12, EXP-13).
 *
 * @since 0.1.0
 * @category constructors
 */
export const exposureFor = (exposure: InspectionToolExposure, protocol: ModelProtocol): ProtocolExposure => {
  const canDefer = supportsDeferLoading(protocol)
  return {
    instructions: Guidance.instructions(exposure, { mayDefer: canDefer && exposure === "deferred" }),
    tools: exposedManagementTools(exposure).map((tool) => ({
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      deferLoading: canDefer && tool.deferLoading
    }))
  }
}
