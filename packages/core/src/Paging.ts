/**
 * Exact, budgeted pages of a text (BUD-05..09, D-04..D-06): every page is a verbatim fragment,
 * pages concatenate to the original, and the whole response stays within the budget.
 *
 * @since 0.1.0
 */
import * as CodePoints from "./CodePoints.js"
import * as ContentId from "./ContentId.js"
import { InvalidToolRequest } from "./HarnessError.js"
import * as ResponseBudget from "./ResponseBudget.js"

/** @since 0.1.0 @category models */
export interface TextPage {
  readonly content: string
  readonly offset: number
  readonly next_offset: number | null
  readonly total_chars: number
  readonly content_id: string
}

/** A text to page, with its measurements computed once. @since 0.1.0 @category models */
export interface PageableText {
  readonly text: string
  readonly totalChars: number
  readonly contentId: string
}

/** @since 0.1.0 @category constructors */
export const pageable = (text: string): PageableText => ({
  text,
  totalChars: CodePoints.count(text),
  contentId: ContentId.of(text)
})

/**
 * The page of at most `maxChars` code points at `offset`, shortened further so that
 * `envelope(page)` stays within the response budget.
 *
 * @since 0.1.0
 * @category paging
 */
export const page = <R>(
  source: PageableText,
  offset: number,
  maxChars: number,
  envelope: (page: TextPage) => R,
  name?: string
): R => {
  const total = source.totalChars
  if (offset > total) {
    throw new InvalidToolRequest({
      ...(name === undefined ? {} : { name }),
      reason: "OffsetOutOfRange",
      detail: `offset ${offset} is past the end (total_chars ${total})`
    })
  }
  const wanted = Math.min(maxChars, total - offset)
  const empty = envelope({ content: "", offset, next_offset: null, total_chars: total, content_id: source.contentId })
  const overhead = ResponseBudget.measure(empty) + Math.max(0, String(total).length - 4)
  const start = CodePoints.unitIndex(source.text, offset)
  const rest = source.text.slice(start)
  const taken = Math.max(
    Math.min(wanted, 1),
    ResponseBudget.prefixFitting(rest, wanted, ResponseBudget.maxChars - overhead)
  )
  const content = CodePoints.slice(rest, 0, taken)
  const next = offset + taken
  return envelope({
    content,
    offset,
    next_offset: next < total ? next : null,
    total_chars: total,
    content_id: source.contentId
  })
}

/**
 * The one rule of every paged answer: an offset at the end (`total`) answers an empty page, an
 * offset past it is an `InvalidToolRequest` `OffsetOutOfRange` whose detail names `counted`.
 *
 * @since 0.1.0
 * @category paging
 */
export const checkOffset = (offset: number, total: number, counted: string, name?: string): void => {
  if (offset <= total) return
  throw new InvalidToolRequest({
    ...(name === undefined ? {} : { name }),
    reason: "OffsetOutOfRange",
    detail: `offset ${offset} is past the end (${counted})`
  })
}

/**
 * A page of list items: at most `limit` items from `offset`, dropping items from the end until
 * `envelope(items, nextOffset)` fits the response budget (at least one item is always kept).
 * One rule for every paged answer, text or list: an offset at the end answers an empty page, an
 * offset past it is an `OffsetOutOfRange` error.
 *
 * @since 0.1.0
 * @category paging
 */
export const pageItems = <A, R>(
  items: ReadonlyArray<A>,
  offset: number,
  limit: number,
  envelope: (items: ReadonlyArray<A>, nextOffset: number | null) => R,
  name?: string
): R => {
  checkOffset(offset, items.length, `${items.length} items`, name)
  const chosen = items.slice(offset, offset + limit)
  const build = (n: number) => {
    const end = offset + n
    return envelope(chosen.slice(0, n), end < items.length ? end : null)
  }
  const all = build(chosen.length)
  if (chosen.length <= 1 || ResponseBudget.fits(all)) return all
  let low = 1
  let high = chosen.length - 1
  while (low < high) {
    const mid = (low + high + 1) >> 1
    if (ResponseBudget.fits(build(mid))) low = mid
    else high = mid - 1
  }
  return build(low)
}
