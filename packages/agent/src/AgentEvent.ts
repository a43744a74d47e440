/**
 * What `agent.stream(prompt)` yields: the run's lifecycle, each assistant message, the runtime's
 * `TOOL_STARTED` / `TOOL_COMPLETED` for every call the model requested, and the harness's CUSTOM
 * `jit_tool_*` events (nested calls included) as they happen.
 *
 * @since 0.1.0
 */
import { JitToolEvent } from "@jitbox/core"
import * as Schema from "effect/Schema"
import { AssistantMessage } from "./ModelProvider.js"

/** @since 0.1.0 @category schemas */
export const RunStarted = Schema.Struct({
  type: Schema.Literal("RUN_STARTED"),
  sessionId: Schema.String,
  runId: Schema.String
})

/** @since 0.1.0 @category schemas */
export const MessageEvent = Schema.Struct({
  type: Schema.Literal("MESSAGE"),
  message: AssistantMessage
})

/** @since 0.1.0 @category schemas */
export const ToolStarted = Schema.Struct({
  type: Schema.Literal("TOOL_STARTED"),
  toolCallId: Schema.String,
  toolName: Schema.String
})

/** @since 0.1.0 @category schemas */
export const ToolCompleted = Schema.Struct({
  type: Schema.Literal("TOOL_COMPLETED"),
  toolCallId: Schema.String,
  toolName: Schema.String,
  success: Schema.Boolean,
  errorType: Schema.NullOr(Schema.String)
})

/** @since 0.1.0 @category schemas */
export const RunFinished = Schema.Struct({
  type: Schema.Literal("RUN_FINISHED"),
  runId: Schema.String,
  content: Schema.NullOr(Schema.String)
})

/** @since 0.1.0 @category schemas */
export const AgentEvent = Schema.Union(
  RunStarted,
  MessageEvent,
  ToolStarted,
  ToolCompleted,
  JitToolEvent.JitToolEvent,
  RunFinished
)

/** @since 0.1.0 @category models */
export type AgentEvent = Schema.Schema.Type<typeof AgentEvent>
