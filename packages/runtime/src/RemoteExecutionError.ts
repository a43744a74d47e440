/**
 * A call whose outcome cannot be known: the worker running a code invocation stopped sending
 * heartbeats (it died, or lost its connection), or the session host running a remote call died. The message layer worked (so
 * it is not a `TransportError`) and the tool did not fail on its own (so it is not a
 * `ToolFailure`): the invocation may have run in part, and it is not sent again.
 *
 * - `WorkerLost`: no heartbeat for the call within the session's `heartbeatMisses` intervals.
 * - `HostLost`: the session host running a remote call died; the host that serves the session
 *   now does not run it (a `RemoteSession` asks after calls it has waited on for 2 s, every second).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** @since 0.1.0 @category models */
export const RemoteExecutionErrorReason = Schema.Literal("WorkerLost", "HostLost")

/** @since 0.1.0 @category models */
export type RemoteExecutionErrorReason = typeof RemoteExecutionErrorReason.Type

/** @since 0.1.0 @category errors */
export class RemoteExecutionError extends Schema.TaggedError<RemoteExecutionError>()("RemoteExecutionError", {
  reason: RemoteExecutionErrorReason,
  /** The invocation subject the call was sent on. */
  subject: Schema.String,
  /** The tool and the call id of the invocation. */
  toolName: Schema.String,
  callId: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.reason}: '${this.toolName}' (call ${this.callId}) on ${this.subject}: ${this.detail}`
  }
}

/** @since 0.1.0 @category refinements */
export const isRemoteExecutionError = (u: unknown): u is RemoteExecutionError =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "RemoteExecutionError"
