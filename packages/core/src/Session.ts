/**
 * A session as an agent loop (or an MCP server, or an orchestrator in another process) talks to
 * it: call a tool, read the definitions and instructions to offer the model, bind a request's base
 * tools for its duration, follow the events. `JitHarness` is the in-process session; the runtime
 * provides one that lives in another process. Members that may cross a process answer promises.
 *
 * @since 0.1.0
 */
import type { EventFeed } from "./EventFeed.js"
import type { ModelProtocol } from "./Exposure.js"
import type { JsonSchema } from "./JsonSchema.js"
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

/** A tool to offer the model, with what the loop needs to schedule its calls. @since 0.1.0 @category models */
export interface SessionTool {
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema
  /** Offered with `defer_loading` (Responses in Deferred mode): the model finds it through tool search. */
  readonly deferLoading: boolean
  readonly executionMode: "parallel" | "serial"
  /** A management or asynchronous-operation tool: its calls run after the others of a response, in order (MGMT-15). */
  readonly management: boolean
  readonly guidelines: string | null
}

/** What to offer the model on one turn. @since 0.1.0 @category models */
export interface SessionDefinitions {
  /** The harness's instruction block for the exposure mode and protocol. */
  readonly instructions: string
  /** Code, text and base tools the model can call now, then the exposed management tools. */
  readonly tools: ReadonlyArray<SessionTool>
}

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
