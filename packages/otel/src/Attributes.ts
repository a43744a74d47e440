/**
 * The names jitbox gives its spans' attributes and its metrics. Where OpenTelemetry's semantic
 * conventions name a thing (the GenAI tool-execution conventions: `gen_ai.operation.name`,
 * `gen_ai.tool.name`, `gen_ai.tool.call.id`; `error.type`), their name is used; everything else
 * is under `jitbox.`.
 *
 * @since 0.1.0
 */

/** Span attribute names. @since 0.1.0 @category constants */
export const span = {
  /** Always `execute_tool` on a dispatch span (GenAI semantic conventions). */
  operationName: "gen_ai.operation.name",
  toolName: "gen_ai.tool.name",
  callId: "gen_ai.tool.call.id",
  /** The error's type (`_tag` or class name) when the call did not complete. */
  errorType: "error.type",
  /** `code`, `text`, `management` or `base`. */
  origin: "jitbox.tool.origin",
  /** `completed`, `failed`, `cancelled` or `rejected`. */
  status: "jitbox.call.status",
  parentCallId: "jitbox.call.parent_id",
  depth: "jitbox.call.depth",
  sessionId: "jitbox.session.id",
  /** On a worker's invocation span. */
  workerId: "jitbox.worker.id",
  /** On worker metrics: the worker's pool. */
  workerPool: "jitbox.worker.pool",
  /** On a worker's invocation span: `ok`, `failed` or `cancelled`. */
  outcome: "jitbox.invocation.outcome"
} as const

/** Metric names. @since 0.1.0 @category constants */
export const metric = {
  /** Counter: finished calls, by tool, origin and status. */
  calls: "jitbox.calls",
  /** Histogram, seconds: how long finished calls took, by tool, origin and status. */
  callDuration: "jitbox.call.duration",
  /** Up-down counter: calls dispatched and not finished, by origin. */
  callsInFlight: "jitbox.calls.in_flight",
  /** Up-down counter: invocations a worker runs now, by worker. */
  workerInvocationsInFlight: "jitbox.worker.invocations.in_flight",
  /** Gauge: invocations the session's coordinator lease has left, by session. */
  leaseInvocationsLeft: "jitbox.lease.invocations_left",
  /** Gauge: a worker's concurrency (invocations it runs at once), by worker and pool. */
  workerCapacity: "jitbox.worker.capacity",
  /** Gauge: invocations a worker runs now, by worker and pool. */
  workerRunning: "jitbox.worker.running"
} as const

/** The span names: `execute_tool <tool>` for a dispatch (GenAI conventions), `invoke <tool>` for a worker's invocation. @since 0.1.0 @category constants */
export const spanName = {
  dispatch: (toolName: string) => `execute_tool ${toolName}`,
  invocation: (toolName: string) => `invoke ${toolName}`
} as const
