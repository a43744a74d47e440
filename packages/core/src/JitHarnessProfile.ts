/**
 * The profiling report (PRF-03..05, PRF-16): call records and lifetime aggregates, as an effect
 * Schema so a report exports to JSON and imports back with validation only (it never activates
 * anything or seeds a harness's measurements, PRF-17).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** @since 0.1.0 @category schemas */
export const ToolOrigin = Schema.Literal("base", "code", "text", "management", "unknown")

/** @since 0.1.0 @category schemas */
export const ToolCallStatus = Schema.Literal("completed", "failed", "cancelled", "rejected")

const Count = Schema.NonNegativeInt
const Measure = Schema.NullOr(Schema.NonNegativeInt)

/** One finished attempt (PRF-05). Sizes are code points capped at 8,000; `null` means not measured. @since 0.1.0 @category schemas */
export const ProfileRecord = Schema.Struct({
  call_id: Schema.String,
  tool_name: Schema.String,
  origin: ToolOrigin,
  status: ToolCallStatus,
  duration_ms: Schema.NonNegative,
  input_chars: Measure,
  output_chars: Measure,
  caller_tool_name: Schema.NullOr(Schema.String),
  error_type: Schema.NullOr(Schema.String)
})

/** @since 0.1.0 @category models */
export interface ProfileRecord extends Schema.Schema.Type<typeof ProfileRecord> {}

/** Lifetime aggregates of one tool (PRF-04, PRF-06); averages are `null` over zero samples. @since 0.1.0 @category schemas */
export const ToolStats = Schema.Struct({
  tool_name: Schema.String,
  origin: ToolOrigin,
  call_count: Count,
  completed_count: Count,
  failed_count: Count,
  cancelled_count: Count,
  rejected_count: Count,
  average_duration_ms: Schema.NullOr(Schema.NonNegative),
  average_input_chars: Schema.NullOr(Schema.NonNegative),
  average_output_chars: Schema.NullOr(Schema.NonNegative)
})

/** @since 0.1.0 @category models */
export interface ToolStats extends Schema.Schema.Type<typeof ToolStats> {}

/** A page of call records (newest first) plus the aggregates of every tool it covers. @since 0.1.0 @category schemas */
export const JitHarnessProfile = Schema.Struct({
  stats: Schema.Array(ToolStats),
  calls: Schema.Array(ProfileRecord),
  total_calls: Count,
  offset: Count,
  next_offset: Schema.NullOr(Count),
  call_capacity: Schema.Int.pipe(Schema.positive())
})

/** @since 0.1.0 @category models */
export interface JitHarnessProfile extends Schema.Schema.Type<typeof JitHarnessProfile> {}

/** @since 0.1.0 @category codecs */
export const toJson = (report: JitHarnessProfile): string => JSON.stringify(Schema.encodeSync(JitHarnessProfile)(report))

/** Validates only; fails with a `ParseError` naming the offending field. @since 0.1.0 @category codecs */
export const fromJson = Schema.decodeUnknown(Schema.parseJson(JitHarnessProfile))

/** @since 0.1.0 @category codecs */
export const fromJsonSync = Schema.decodeUnknownSync(Schema.parseJson(JitHarnessProfile))
