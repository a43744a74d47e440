/**
 * A session as an agent loop (or an MCP server, or an orchestrator in another process) talks to
 * it: call a tool, read the definitions and instructions to offer the model, bind a request's base
 * tools for its duration, follow the events. `JitHarness` is the in-process session; the runtime
 * provides one that lives in another process. Members that may cross a process answer promises.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { EventFeed } from "./EventFeed.js"
import type { ModelProtocol } from "./Exposure.js"
import type { ToolDefinition } from "./Tool.js"

/** Application base tools: a list of named definitions or a record keyed by name. @since 0.1.0 @category models */
export type BaseTools = ReadonlyArray<ToolDefinition> | Readonly<Record<string, ToolDefinition>>

/** @since 0.1.0 @category models */
export interface CallOptions {
  /** The conversation's tool-call id; a fresh unique id otherwise. */
  readonly callId?: string | undefined
  /** Aborting it cancels the call: the record says `cancelled` and the handler's signal fires. */
  readonly signal?: AbortSignal | undefined
}

/**
 * A tool to offer the model, with what the loop needs to schedule its calls; snake_case when
 * encoded (`defer_loading`, `execution_mode`), as the wire spells it.
 *
 * - `deferLoading`: offered with `defer_loading` (Responses in Deferred mode): the model finds it through tool search;
 * - `management`: a management or asynchronous-operation tool: its calls run after the others of a response, in order (MGMT-15).
 *
 * @since 0.1.0
 * @category schemas
 */
export const SessionTool = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  parameters: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  deferLoading: Schema.propertySignature(Schema.Boolean).pipe(Schema.fromKey("defer_loading")),
  executionMode: Schema.propertySignature(Schema.Literal("parallel", "serial")).pipe(Schema.fromKey("execution_mode")),
  management: Schema.Boolean,
  guidelines: Schema.NullOr(Schema.String)
})

/** @since 0.1.0 @category models */
export type SessionTool = typeof SessionTool.Type

/**
 * What to offer the model on one turn: the harness's instruction block for the exposure mode and
 * protocol, and the code, text and base tools the model can call now, then the exposed
 * management tools.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SessionDefinitions = Schema.Struct({ instructions: Schema.String, tools: Schema.Array(SessionTool) })

/** @since 0.1.0 @category models */
export type SessionDefinitions = typeof SessionDefinitions.Type

/** @since 0.1.0 @category models */
export interface Session {
  readonly sessionId: string
  /** Resolves when the session's toolbox is ready (a snapshot activated); rejects if it cannot be. */
  readonly ready: Promise<void>
  readonly callTool: (name: string, args?: unknown, options?: CallOptions) => Promise<unknown>
  readonly definitions: (protocol: ModelProtocol) => SessionDefinitions | Promise<SessionDefinitions>
  /** Binds one request's base tools until `detach`; one request at a time (LIFE-01..05). */
  readonly attach: (request: object, tools?: BaseTools) => void | Promise<void>
  readonly detach: (request: object) => void | Promise<void>
  readonly events: Pick<EventFeed, "subscribe" | "listen" | "stream">
}
