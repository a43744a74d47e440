/**
 * The per-harness LRU of distinct errors (ERR-01..22): keyed by (tool, error type, complete
 * message), a repeat moves its entry to the front, the least recent is evicted, reads never
 * refresh recency, and an evicted error that returns starts again at one occurrence.
 *
 * @since 0.1.0
 */
import * as CodePoints from "./CodePoints.js"
import * as Paging from "./Paging.js"
import type { ToolErrorRecord, ToolErrorReport } from "./ToolErrorReport.js"

/** What dispatch knows of one failed or rejected attempt. @since 0.1.0 @category models */
export interface Occurrence {
  readonly toolName: string
  readonly errorType: string
  readonly status: "failed" | "rejected"
  readonly message: string | null
  readonly callId: string
  readonly callerToolName: string | null
}

interface Entry {
  readonly toolName: string
  readonly errorType: string
  readonly status: "failed" | "rejected"
  readonly message: string | null
  readonly truncated: boolean
  occurrences: number
  lastOccurredAt: number
  lastCallId: string
  callerToolName: string | null
}

const toRecord = (entry: Entry): ToolErrorRecord => ({
  tool_name: entry.toolName,
  error_type: entry.errorType,
  status: entry.status,
  message: entry.message,
  message_truncated: entry.truncated,
  occurrences: entry.occurrences,
  last_occurred_at: new Date(entry.lastOccurredAt).toISOString(),
  last_call_id: entry.lastCallId,
  caller_tool_name: entry.callerToolName
})

/** @since 0.1.0 @category models */
export class ErrorCache {
  /** Insertion order is recency order: the last entry is the most recent. */
  private readonly entries = new Map<string, Entry>()

  constructor(readonly capacity: number, readonly messageChars: number) {}

  add(occurrence: Occurrence): void {
    const key = `${occurrence.toolName}\u0000${occurrence.errorType}\u0000${
      occurrence.message === null ? "\u0001" : `\u0002${occurrence.message}`
    }`
    const now = Date.now()
    const existing = this.entries.get(key)
    if (existing !== undefined) {
      this.entries.delete(key)
      existing.occurrences++
      existing.lastOccurredAt = now
      existing.lastCallId = occurrence.callId
      existing.callerToolName = occurrence.callerToolName
      this.entries.set(key, existing)
      return
    }
    const kept = occurrence.message === null ? null : CodePoints.preview(occurrence.message, this.messageChars)
    this.entries.set(key, {
      toolName: occurrence.toolName,
      errorType: occurrence.errorType,
      status: occurrence.status,
      message: kept === null ? null : kept.text,
      truncated: kept !== null && kept.truncated,
      occurrences: 1,
      lastOccurredAt: now,
      lastCallId: occurrence.callId,
      callerToolName: occurrence.callerToolName
    })
    if (this.entries.size > this.capacity) {
      this.entries.delete(this.entries.keys().next().value!)
    }
  }

  get size(): number {
    return this.entries.size
  }

  /** Retained errors, newest occurrence first, optionally for one tool. Never changes recency. */
  records(name?: string): Array<ToolErrorRecord> {
    const out: Array<ToolErrorRecord> = []
    const all = Array.from(this.entries.values())
    for (let i = all.length - 1; i >= 0; i--) {
      const entry = all[i]!
      if (name === undefined || entry.toolName === name) out.push(toRecord(entry))
    }
    return out
  }

  report(name: string | undefined, offset: number, limit: number): ToolErrorReport {
    const matches = this.records(name)
    Paging.checkOffset(offset, matches.length, `total_matches ${matches.length}`, name)
    const end = Math.min(matches.length, offset + limit)
    return {
      errors: matches.slice(offset, end),
      capacity: this.capacity,
      retained_errors: this.entries.size,
      total_matches: matches.length,
      offset,
      next_offset: end < matches.length ? end : null
    }
  }
}
