/**
 * The application API of one session, as Promises: what an application or an orchestrator does
 * with a session besides offering its tools to a model. Two implementations answer it the same
 * way: `Sessions` for a session hosted in this process (direct calls on its harness, no message
 * hop) and `RemoteSession` for one hosted anywhere else (messages over the `Transport`).
 *
 * A change (`createTool`, `updateTool`, `unloadTool`, `loadTool`) resolves only once the toolbox
 * it made is in the session's `SnapshotStore`. A failure is the harness's typed error
 * (`HarnessError.*`, `SnapshotError`, `SandboxError`) or, across processes, a `TransportError`;
 * what a tool's own code threw is the thrown value in process and `ToolFailure` (its type as
 * `name`, its message) across processes.
 *
 * @since 0.1.0
 */
import type { Exposure, JitHarnessProfile, JitHarnessSnapshot, ToolErrorReport } from "@jitbox/core"
import type { CreateToolRequest, SessionDefinitions, ToolAck, UpdateToolRequest } from "@jitbox/core"
import type * as SessionProtocol from "./SessionProtocol.js"

/** @since 0.1.0 @category models */
export interface PageOptions {
  readonly offset?: number | undefined
  /** 1–1,000 (D-16). */
  readonly limit?: number | undefined
}

/** @since 0.1.0 @category models */
export interface CallOptions {
  /** The conversation's tool-call id, recorded as the call's id; a fresh unique id otherwise. */
  readonly callId?: string | undefined
  /** Aborting it cancels the call (its record says `cancelled`). */
  readonly signal?: AbortSignal | undefined
  /** Across processes: how long to wait for the reply (else the client's default). */
  readonly timeoutMs?: number | undefined
}

/** An entry of the catalog. @since 0.1.0 @category models */
export type CatalogEntry = typeof SessionProtocol.CatalogEntry.Type

/** @since 0.1.0 @category models */
export interface SessionApi {
  readonly sessionId: string
  readonly callTool: (name: string, args?: unknown, options?: CallOptions) => Promise<unknown>
  readonly createTool: (request: CreateToolRequest) => Promise<ToolAck>
  readonly updateTool: (request: UpdateToolRequest) => Promise<ToolAck>
  readonly unloadTool: (name: string) => Promise<ToolAck>
  readonly loadTool: (name: string) => Promise<ToolAck>
  /** The complete catalog: base, code and text tools (management tools are never listed). */
  readonly listTools: () => Promise<ReadonlyArray<CatalogEntry>>
  readonly profile: (name?: string, page?: PageOptions) => Promise<JitHarnessProfile.JitHarnessProfile>
  readonly toolErrors: (name?: string, page?: PageOptions) => Promise<ToolErrorReport.ToolErrorReport>
  readonly snapshot: () => Promise<JitHarnessSnapshot.JitHarnessSnapshot>
  /** What to offer a model speaking `protocol` (core's `Session.definitions`): the instruction block and the tools it can call now. */
  readonly definitions: (protocol: Exposure.ModelProtocol) => Promise<SessionDefinitions>
  /** Releases the session's in-memory toolbox (LIFE-06); its stored snapshot stays, and its next use activates it again. */
  readonly forget: () => Promise<void>
}
