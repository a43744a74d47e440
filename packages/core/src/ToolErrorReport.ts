/**
 * The recent-error report (ERR-09, ERR-21, ERR-23), as an effect Schema: an export decodes back
 * with validation only. A record's status can only be `failed` or `rejected` (STS-06).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** @since 0.1.0 @category schemas */
export const ToolErrorRecord = Schema.Struct({
  tool_name: Schema.String,
  error_type: Schema.String,
  status: Schema.Literal("failed", "rejected"),
  message: Schema.NullOr(Schema.String),
  message_truncated: Schema.Boolean,
  occurrences: Schema.Int.pipe(Schema.positive()),
  last_occurred_at: Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/)),
  last_call_id: Schema.String,
  caller_tool_name: Schema.NullOr(Schema.String)
})

/** @since 0.1.0 @category models */
export interface ToolErrorRecord extends Schema.Schema.Type<typeof ToolErrorRecord> {}

/** @since 0.1.0 @category schemas */
export const ToolErrorReport = Schema.Struct({
  errors: Schema.Array(ToolErrorRecord),
  capacity: Schema.Int.pipe(Schema.positive()),
  retained_errors: Schema.NonNegativeInt,
  total_matches: Schema.NonNegativeInt,
  offset: Schema.NonNegativeInt,
  next_offset: Schema.NullOr(Schema.NonNegativeInt)
})

/** @since 0.1.0 @category models */
export interface ToolErrorReport extends Schema.Schema.Type<typeof ToolErrorReport> {}

/** @since 0.1.0 @category codecs */
export const toJson = (report: ToolErrorReport): string => JSON.stringify(Schema.encodeSync(ToolErrorReport)(report))

/** Validates only; fails with a `ParseError` naming the offending field. @since 0.1.0 @category codecs */
export const fromJson = Schema.decodeUnknown(Schema.parseJson(ToolErrorReport))

/** @since 0.1.0 @category codecs */
export const fromJsonSync = Schema.decodeUnknownSync(Schema.parseJson(ToolErrorReport))

/** Builds one record, validating it (a `completed` or `cancelled` status is rejected). @since 0.1.0 @category constructors */
export const makeRecord = Schema.decodeUnknownSync(ToolErrorRecord)
