/**
 * Lengths and slices in Unicode code points (D-04): the reference counts characters as Python
 * does, and a page must never split a surrogate pair.
 *
 * @since 0.1.0
 */

const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff
const isLowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff

/**
 * Code points in `text`, counting at most `cap` (a result equal to `cap` means "at least").
 *
 * @since 0.1.0
 * @category measuring
 */
export const count = (text: string, cap = Number.POSITIVE_INFINITY): number => {
  const length = text.length
  let points = 0
  for (let i = 0; i < length && points < cap; i++) {
    if (isHighSurrogate(text.charCodeAt(i)) && i + 1 < length && isLowSurrogate(text.charCodeAt(i + 1))) i++
    points++
  }
  return points
}

/**
 * The UTF-16 index at which code point number `points` starts (or `text.length` past the end).
 *
 * @since 0.1.0
 * @category measuring
 */
export const unitIndex = (text: string, points: number, fromUnit = 0): number => {
  const length = text.length
  let i = fromUnit
  for (let seen = 0; seen < points && i < length; seen++) {
    i += isHighSurrogate(text.charCodeAt(i)) && i + 1 < length && isLowSurrogate(text.charCodeAt(i + 1)) ? 2 : 1
  }
  return i
}

/**
 * `count` code points of `text` starting at code point `offset`.
 *
 * @since 0.1.0
 * @category slicing
 */
export const slice = (text: string, offset: number, count: number): string => {
  const start = unitIndex(text, offset)
  return text.slice(start, unitIndex(text, count, start))
}

/**
 * The first `limit` code points of `text`, and whether anything was cut.
 *
 * @since 0.1.0
 * @category slicing
 */
export const preview = (text: string, limit: number): { readonly text: string; readonly truncated: boolean } => {
  if (text.length <= limit) return { text, truncated: false }
  const end = unitIndex(text, limit)
  return end >= text.length ? { text, truncated: false } : { text: text.slice(0, end), truncated: true }
}
