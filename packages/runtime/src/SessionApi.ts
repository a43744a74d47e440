/**
 * The application API of one session, as Promises: what an application or an orchestrator does
 * with a session besides offering its tools to a model. Its methods are derived from the session
 * protocol's table (`SessionProtocol.manage`), so the two implementations answer it the same way:
 * `Sessions` for a session hosted in this process (the actor's own handlers, no message hop) and
 * `RemoteSession` for one hosted anywhere else (the same operations as messages over the
 * `Transport`).
 *
 * A change (`createTool`, `updateTool`, `unloadTool`, `loadTool`) resolves only once the toolbox
 * it made is in the session's `SnapshotStore`. A failure is the harness's typed error
 * (`HarnessError.*`, `SnapshotError`, `SandboxError`) or, across processes, a `TransportError`;
 * what a tool's own code threw is the thrown value in process and `ToolFailure` (its type as
 * `name`, its message) across processes.
 *
 * @since 0.1.0
 */
import type { ToolCatalog } from "@jitbox/core"
import type * as SessionProtocol from "./SessionProtocol.js"

/** @since 0.1.0 @category models */
export type PageOptions = SessionProtocol.PageOptions

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
export type CatalogEntry = ToolCatalog.CatalogEntry

/**
 * `callTool` (the hot path, hand-written on both ends) and the operations of
 * `SessionProtocol.manage`: `createTool`, `updateTool`, `unloadTool`, `loadTool`, `listTools`,
 * `profile`, `toolErrors`, `snapshot`, `definitions`, `forget`.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionApi extends SessionProtocol.ManageFacade {
  readonly sessionId: string
  readonly callTool: (name: string, args?: unknown, options?: CallOptions) => Promise<unknown>
}
