/**
 * Adds each offered tool's guidelines to the instructions. The JIT extension already does this
 * for the tools it offers (OVR-08); this extension is for agents without it.
 *
 * @since 0.1.0
 */
import type { AgentExtension, RequestTool } from "./AgentExtension.js"
import { toolGuidance } from "./JitHarnessExtension.js"

/** @since 0.1.0 @category models */
export class ToolGuidelinesExtension implements AgentExtension {
  readonly name = "ToolGuidelinesExtension"
  readonly instructions = (tools: ReadonlyArray<RequestTool>): string | undefined => toolGuidance(tools) || undefined
}
