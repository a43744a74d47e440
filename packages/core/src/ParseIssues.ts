/**
 * What a schema refused, as one line for an error's `detail`: `path: message` per issue, the
 * path dotted (`request.parameters`) or a label for the value itself. An optional field's union
 * with `undefined` echoes every mistake as "Expected undefined, actual …"; those echoes are
 * dropped when something more informative was said.
 *
 * @since 0.1.0
 */
import * as ParseResult from "effect/ParseResult"

/** @since 0.1.0 @category models */
export interface DescribeOptions {
  /** What the value itself is called when an issue has no path (default `(root)`). */
  readonly root?: string | undefined
  /** Every issue, joined with `; ` (default: the first only). */
  readonly all?: boolean | undefined
  /** At most this many characters, ending with `…` when cut (default 500). */
  readonly limit?: number | undefined
}

/**
 * The issues of `error`, without the echoes of optional fields.
 *
 * @since 0.1.0
 * @category formatting
 */
export const issues = (error: ParseResult.ParseError): ReadonlyArray<ParseResult.ArrayFormatterIssue> => {
  const all = ParseResult.ArrayFormatter.formatErrorSync(error)
  const informative = all.filter((issue) => !issue.message.startsWith("Expected undefined, actual "))
  return informative.length > 0 ? informative : all
}

/**
 * `error` as one line.
 *
 * @since 0.1.0
 * @category formatting
 */
export const describe = (error: ParseResult.ParseError, options: DescribeOptions = {}): string => {
  const found = issues(error)
  const root = options.root ?? "(root)"
  const lines = (options.all === true ? found : found.slice(0, 1)).map((issue) =>
    `${issue.path.length === 0 ? root : issue.path.map(String).join(".")}: ${issue.message}`
  )
  const text = lines.length === 0 ? error.message : lines.join("; ")
  const limit = options.limit ?? 500
  return text.length > limit ? `${text.slice(0, limit)}…` : text
}
