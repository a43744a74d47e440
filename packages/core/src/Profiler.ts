/**
 * Per-harness profiling (PRF-05..08): one record per finished attempt in a bounded window of the
 * newest `callCapacity` records by dispatch order, plus lifetime aggregates that never reset.
 *
 * @since 0.1.0
 */
import * as Paging from "./Paging.js"
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

  add(origin: ToolOrigin, status: ToolCallStatus, durationMs: number, inputChars: number | null, outputChars: number | null) {
    this.callCount++
    this.origin = origin
    switch (status) {
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
    this.durationSum += durationMs
    if (inputChars !== null) {
      this.inputSum += inputChars
      this.inputSamples++
    }
    if (outputChars !== null) {
      this.outputSum += outputChars
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

const origins: ReadonlyArray<ToolOrigin> = ["base", "code", "text", "management", "unknown"]
const statuses: ReadonlyArray<ToolCallStatus> = ["completed", "failed", "cancelled", "rejected"]
const originCode = (origin: ToolOrigin) => origins.indexOf(origin)
const statusCode = (status: ToolCallStatus) => statuses.indexOf(status)

const emptyStats = (toolName: string, origin: ToolOrigin): ToolStats => new Aggregate(toolName, origin).toStats()

/**
 * The call window is stored column-wise in a ring: no object per record and no per-call string
 * kept alive, so a full window costs the garbage collector nothing on the dispatch path. Records
 * stay sorted by dispatch sequence; a parent that finishes after its children is inserted before
 * them, and the record evicted is always the oldest by dispatch.
 *
 * @since 0.1.0
 * @category models
 */
export class Profiler {
  private allocated: number
  private head = 0
  private size = 0
  private seqs: Float64Array
  private durations: Float64Array
  private inputs: Int32Array
  private outputs: Int32Array
  private codes: Uint8Array
  private callIds: Array<string | undefined>
  private toolNames: Array<string>
  private callers: Array<string | null>
  private errorTypes: Array<string | null>
  private readonly aggregates = new Map<string, Aggregate>()

  constructor(
    readonly capacity: number,
    /** The call id of an attempt whose id was generated: derived from its sequence number. */
    private readonly generatedId: (seq: number) => string = (seq) => `call_${seq.toString(36)}`
  ) {
    this.allocated = Math.min(capacity, 256)
    this.seqs = new Float64Array(this.allocated)
    this.durations = new Float64Array(this.allocated)
    this.inputs = new Int32Array(this.allocated)
    this.outputs = new Int32Array(this.allocated)
    this.codes = new Uint8Array(this.allocated)
    this.callIds = new Array(this.allocated)
    this.toolNames = new Array(this.allocated)
    this.callers = new Array(this.allocated)
    this.errorTypes = new Array(this.allocated)
  }

  /** Adds a finished attempt given as a record object. */
  record(record: WindowRecord): void {
    this.add(
      record.seq,
      record.call_id,
      record.tool_name,
      record.origin,
      record.status,
      record.duration_ms,
      record.input_chars,
      record.output_chars,
      record.caller_tool_name,
      record.error_type
    )
  }

  /** Adds a finished attempt. `callId` undefined means the id was generated from `seq`. */
  add(
    seq: number,
    callId: string | undefined,
    toolName: string,
    origin: ToolOrigin,
    status: ToolCallStatus,
    durationMs: number,
    inputChars: number | null,
    outputChars: number | null,
    caller: string | null,
    errorType: string | null
  ): void {
    let aggregate = this.aggregates.get(toolName)
    if (aggregate === undefined) {
      aggregate = new Aggregate(toolName, origin)
      this.aggregates.set(toolName, aggregate)
    }
    aggregate.add(origin, status, durationMs, inputChars, outputChars)

    let at = this.size
    while (at > 0 && this.seqs[this.slot(at - 1)]! > seq) at--
    if (this.size === this.capacity) {
      if (at === 0) return
      this.head = this.slot(1)
      this.size--
      at--
    }
    if (this.size === this.allocated) this.grow()
    for (let i = this.size; i > at; i--) this.move(this.slot(i - 1), this.slot(i))
    const slot = this.slot(at)
    this.seqs[slot] = seq
    this.durations[slot] = durationMs
    this.inputs[slot] = inputChars ?? -1
    this.outputs[slot] = outputChars ?? -1
    this.codes[slot] = (originCode(origin) << 2) | statusCode(status)
    this.callIds[slot] = callId
    this.toolNames[slot] = toolName
    this.callers[slot] = caller
    this.errorTypes[slot] = errorType
    this.size++
  }

  private slot(logical: number): number {
    const physical = this.head + logical
    return physical >= this.allocated ? physical - this.allocated : physical
  }

  private move(from: number, to: number): void {
    this.seqs[to] = this.seqs[from]!
    this.durations[to] = this.durations[from]!
    this.inputs[to] = this.inputs[from]!
    this.outputs[to] = this.outputs[from]!
    this.codes[to] = this.codes[from]!
    this.callIds[to] = this.callIds[from]
    this.toolNames[to] = this.toolNames[from]!
    this.callers[to] = this.callers[from]!
    this.errorTypes[to] = this.errorTypes[from]!
  }

  private grow(): void {
    const allocated = Math.min(this.capacity, this.allocated * 2)
    const order = Array.from({ length: this.size }, (_, i) => this.slot(i))
    const seqs = new Float64Array(allocated)
    const durations = new Float64Array(allocated)
    const inputs = new Int32Array(allocated)
    const outputs = new Int32Array(allocated)
    const codes = new Uint8Array(allocated)
    const callIds = new Array<string | undefined>(allocated)
    const toolNames = new Array<string>(allocated)
    const callers = new Array<string | null>(allocated)
    const errorTypes = new Array<string | null>(allocated)
    order.forEach((from, to) => {
      seqs[to] = this.seqs[from]!
      durations[to] = this.durations[from]!
      inputs[to] = this.inputs[from]!
      outputs[to] = this.outputs[from]!
      codes[to] = this.codes[from]!
      callIds[to] = this.callIds[from]
      toolNames[to] = this.toolNames[from]!
      callers[to] = this.callers[from]!
      errorTypes[to] = this.errorTypes[from]!
    })
    Object.assign(this, { seqs, durations, inputs, outputs, codes, callIds, toolNames, callers, errorTypes })
    this.allocated = allocated
    this.head = 0
  }

  private recordAt(slot: number): ProfileRecord {
    const code = this.codes[slot]!
    const input = this.inputs[slot]!
    const output = this.outputs[slot]!
    return {
      call_id: this.callIds[slot] ?? this.generatedId(this.seqs[slot]!),
      tool_name: this.toolNames[slot]!,
      origin: origins[code >> 2]!,
      status: statuses[code & 3]!,
      duration_ms: this.durations[slot]!,
      input_chars: input < 0 ? null : input,
      output_chars: output < 0 ? null : output,
      caller_tool_name: this.callers[slot]!,
      error_type: this.errorTypes[slot]!
    }
  }

  /** Records in the window, newest dispatch first, optionally for one tool. */
  records(name?: string): Array<ProfileRecord> {
    const out: Array<ProfileRecord> = []
    for (let i = this.size - 1; i >= 0; i--) {
      const slot = this.slot(i)
      if (name === undefined || this.toolNames[slot] === name) out.push(this.recordAt(slot))
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
    Paging.checkOffset(offset, calls.length, `total_calls ${calls.length}`, name)
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
}
