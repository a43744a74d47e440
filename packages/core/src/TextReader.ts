/**
 * The reader a loaded text tool is callable as (D-14, TXT-04/05/08): `offset` (default 0) and
 * `max_chars` (default 2,000, 1–4,000) return one exact, budgeted page of the workflow. Reading
 * never runs anything (TXT-06).
 *
 * @since 0.1.0
 */
import type { JsonSchema } from "./JsonSchema.js"
import * as Paging from "./Paging.js"
import * as Validator from "./Validator.js"

/** @since 0.1.0 @category constants */
export const parameters: JsonSchema = {
  type: "object",
  properties: {
    offset: { type: "integer", minimum: 0 },
    max_chars: { type: "integer", minimum: 1, maximum: 4000 }
  }
}

/** @since 0.1.0 @category constants */
export const guidelines = "Read the relevant steps, then carry them out with the available tools; follow next_offset for more."

/** Compiled on the first validation, so that loading the package compiles nothing. */
let compiled: Validator.Validate | undefined

/** @since 0.1.0 @category validation */
export const validate: Validator.Validate = (args) => (compiled ??= Validator.compile(parameters, "draft-07"))(args)

/** @since 0.1.0 @category reading */
export const read = (
  name: string,
  body: Paging.PageableText,
  args: { readonly offset?: number; readonly max_chars?: number }
): Paging.TextPage => Paging.page(body, args.offset ?? 0, args.max_chars ?? 2_000, (page) => page, name)
