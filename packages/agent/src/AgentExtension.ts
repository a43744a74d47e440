/**
 * Extensions shape one request of the agent loop: a history extension loads and appends the
 * conversation; a tool extension contributes tool definitions, instructions and the dispatcher
 * for the calls the model makes, for the duration of one request (opened and closed in pairs).
 *
 * @since 0.1.0
 */
import type { BaseTools, JitToolEvent } from "@jitbox/core"
import type { Message, ModelTool, Protocol } from "./ModelProvider.js"

/** A tool the model may call during one request. @since 0.1.0 @category models */
export interface RequestTool extends ModelTool {
  /** `serial` tools run one at a time after the parallel calls of the same response. */
  readonly executionMode: "parallel" | "serial"
  /** Management tools run after every ordinary call of the same response (MGMT-15). */
  readonly management: boolean
  readonly guidelines: string | null
}

/** @since 0.1.0 @category models */
export interface RequestInfo {
  readonly sessionId: string
  readonly protocol: Protocol
  readonly baseTools: BaseTools | undefined
}

/** The tools and instructions of one model turn. @since 0.1.0 @category models */
export interface TurnDefinitions {
  readonly instructions: string
  readonly tools: ReadonlyArray<RequestTool>
}

/** What a tool extension contributes to one request. @since 0.1.0 @category models */
export interface RequestTools {
  /** Asked before every model turn: a tool created in one turn is offered in the next. */
  readonly definitions: () => Promise<TurnDefinitions>
  readonly call: (name: string, args: unknown, options: { readonly callId: string; readonly signal: AbortSignal }) => Promise<unknown>
  /** The session's `jit_tool_*` events during this request, if the extension has any. */
  readonly events?: AsyncIterable<JitToolEvent.JitToolEvent> & { readonly close: () => void }
  readonly close: () => Promise<void>
}

/** @since 0.1.0 @category models */
export interface HistoryStore {
  readonly load: (sessionId: string) => Promise<ReadonlyArray<Message>>
  readonly append: (sessionId: string, messages: ReadonlyArray<Message>) => Promise<void>
}

/** @since 0.1.0 @category models */
export interface AgentExtension {
  readonly name: string
  /** A conversation store: the loop loads history before a run and appends what the run added. */
  readonly history?: HistoryStore
  /** Instructions to add to every request (e.g. tool guidance). */
  readonly instructions?: (tools: ReadonlyArray<RequestTool>) => string | undefined
  /** Contributes the tools of one request; at most one extension may. */
  readonly openRequest?: (request: RequestInfo) => Promise<RequestTools>
}
