/**
 * What the MCP server needs of a jitbox session, wherever it lives: core's `Session` (a
 * `JitHarness`, a runtime `LocalSession`) fits as it is, and so does the runtime's `RemoteSession`
 * (it answers `definitions` over the wire and has no `ready`: it is ready when it answers). Its
 * events come separately, as an `EventSource`, because an in-process feed and a remote one are
 * followed differently (`listen` answers the stop function at once, or once subscribed).
 *
 * @since 0.1.0
 */
import type { JitToolEvent, SessionShape as Session } from "@jitbox/core"

/** @since 0.1.0 @category models */
export interface ServedSession {
  readonly sessionId: string
  /** Resolves when the toolbox is ready (a snapshot activated); absent: ready now. */
  readonly ready?: Promise<void> | undefined
  readonly callTool: Session["callTool"]
  readonly definitions: Session["definitions"]
}

/** Stops following events. @since 0.1.0 @category models */
export type StopListening = () => unknown

/**
 * Calls `listener` with each of the session's events until the answered function is called.
 *
 * @since 0.1.0
 * @category models
 */
export type EventSource = (listener: (event: JitToolEvent.JitToolEvent) => void) => StopListening | Promise<StopListening>

/**
 * The events of an in-process session (`JitHarness`, `LocalSession`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const eventsOf = (session: Pick<Session, "events">): EventSource => (listener) => session.events.listen(listener)

/**
 * A session with its events and what closing it means (releasing a harness, forgetting a remote
 * session): what the HTTP server opens for each MCP session.
 *
 * @since 0.1.0
 * @category models
 */
export interface OpenedSession {
  readonly session: ServedSession
  readonly events?: EventSource | undefined
  readonly close: () => Promise<void>
}
