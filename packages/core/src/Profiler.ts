/**
 * Per-harness profiling (PRF-05..08): one record per finished attempt in a bounded window of the
 * newest `callCapacity` records by dispatch order, plus lifetime aggregates that never reset.
 *
 * @since 0.1.0
 */
import type { JitHarnessProfile, ProfileRecord, ToolStats } from "./JitHarnessProfile.js"
import type { ToolCallStatus, ToolOrigin } from "./ToolOrigin.js"

/** A record plus its dispatch sequence number, which orders the window. @since 0.1.0 @category models */
export interface WindowRecord extends ProfileRecord {
  readonly seq: number
}

class Aggregate {
  callCount = 0
  completed = 0
  failed = 0
  cancelled = 0
  rejected = 0
  durationSum = 0
  inputSum = 0
  inputSamples = 0
  outputSum = 0
  outputSamples = 0
  constructor(readonly toolName: string, public origin: ToolOrigin) {}

  add(record: ProfileRecord) {
    this.callCount++
    this.origin = record.origin
    switch (record.status) {
      case "completed":
        this.completed++
        break
      case "failed":
        this.failed++
        break
      case "cancelled":
        this.cancelled++
        break
      case "rejected":
        this.rejected++
        break
    }
    this.durationSum += record.duration_ms
    if (record.input_chars !== null) {
      this.inputSum += record.input_chars
      this.inputSamples++
    }
    if (record.output_chars !== null) {
      this.outputSum += record.output_chars
      this.outputSamples++
    }
  }

  toStats(): ToolStats {
    return {
      tool_name: this.toolName,
      origin: this.origin,
      call_count: this.callCount,
      completed_count: this.completed,
      failed_count: this.failed,
      cancelled_count: this.cancelled,
      rejected_count: this.rejected,
      average_duration_ms: this.callCount === 0 ? null : this.durationSum / this.callCount,
      average_input_chars: this.inputSamples === 0 ? null : this.inputSum / this.inputSamples,
      average_output_chars: this.outputSamples === 0 ? null : this.outputSum / this.outputSamples
    }
  }
}

const toRecord = (record: WindowRecord): ProfileRecord => ({
  call_id: record.call_id,
  tool_name: record.tool_name,
  origin: record.origin,
  status: record.status,
  duration_ms: record.duration_ms,
  input_chars: record.input_chars,
  output_chars: record.output_chars,
  caller_tool_name: record.caller_tool_name,
  error_type: record.error_type
})

const emptyStats = (toolName: string, origin: ToolOrigin): ToolStats => new Aggregate(toolName, origin).toStats()

/** @since 0.1.0 @category models */
export class Profiler {
  private window: Array<WindowRecord> = []
  private head = 0
  private readonly aggregates = new Map<string, Aggregate>()

  constructor(readonly capacity: number) {}

  /** Adds a finished attempt. Cheap: one insertion near the end of the window. */
  record(record: WindowRecord): void {
    const window = this.window
    let at = window.length
    while (at > this.head && window[at - 1]!.seq > record.seq) at--
    if (at === window.length) window.push(record)
    else window.splice(at, 0, record)
    if (window.length - this.head > this.capacity) {
      this.head++
      if (this.head > 1024 && this.head * 2 > window.length) {
        this.window = window.slice(this.head)
        this.head = 0
      }
    }
    let aggregate = this.aggregates.get(record.tool_name)
    if (aggregate === undefined) {
      aggregate = new Aggregate(record.tool_name, record.origin)
      this.aggregates.set(record.tool_name, aggregate)
    }
    aggregate.add(record)
  }

  /** Records in the window, newest dispatch first, optionally for one tool. */
  records(name?: string): Array<ProfileRecord> {
    const out: Array<ProfileRecord> = []
    for (let i = this.window.length - 1; i >= this.head; i--) {
      const record = this.window[i]!
      if (name === undefined || record.tool_name === name) out.push(toRecord(record))
    }
    return out
  }

  /** Lifetime aggregates of one tool; zero counts and `null` averages if it never finished a call. */
  stats(name: string, origin: ToolOrigin = "unknown"): ToolStats {
    return this.aggregates.get(name)?.toStats() ?? emptyStats(name, origin)
  }

  /** Lifetime aggregates of every tool that finished at least one call, in first-seen order. */
  allStats(): Array<ToolStats> {
    return Array.from(this.aggregates.values(), (aggregate) => aggregate.toStats())
  }

  report(name: string | undefined, offset: number, limit: number, origin?: ToolOrigin): JitHarnessProfile {
    const calls = this.records(name)
    const end = Math.min(calls.length, offset + limit)
    return {
      stats: name === undefined ? this.allStats() : [this.stats(name, origin)],
      calls: calls.slice(offset, end),
      total_calls: calls.length,
      offset,
      next_offset: end < calls.length ? end : null,
      call_capacity: this.capacity
    }
  }

  statusCount(name: string, status: ToolCallStatus): number {
    const stats = this.stats(name)
    return status === "completed"
      ? stats.completed_count
      : status === "failed"
      ? stats.failed_count
      : status === "cancelled"
      ? stats.cancelled_count
      : stats.rejected_count
  }
}
