/**
 * The model-facing response budget (BUD-01): every query response is at most 8,000 code points
 * of compact JSON, escapes and punctuation included.
 *
 * @since 0.1.0
 */
import * as CodePoints from "./CodePoints.js"

/** @since 0.1.0 @category constants */
export const maxChars = 8_000

/** Code points of the compact JSON of `value`. @since 0.1.0 @category measuring */
export const measure = (value: unknown): number => CodePoints.count(JSON.stringify(value))

/** @since 0.1.0 @category predicates */
export const fits = (value: unknown): boolean => measure(value) <= maxChars

/**
 * Code points that `text` takes once escaped inside a JSON string, without the quotes.
 *
 * @since 0.1.0
 * @category measuring
 */
export const escapedLength = (text: string): number => CodePoints.count(JSON.stringify(text)) - 2

/**
 * The longest prefix (in code points, at most `maxPoints`) of `text` whose JSON-escaped form takes at
 * most `room` code points.
 *
 * @since 0.1.0
 * @category measuring
 */
export const prefixFitting = (text: string, maxPoints: number, room: number): number => {
  let used = 0
  let points = 0
  let i = 0
  while (points < maxPoints && i < text.length) {
    const unit = text.charCodeAt(i)
    const width = unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length &&
        text.charCodeAt(i + 1) >= 0xdc00 && text.charCodeAt(i + 1) <= 0xdfff
      ? 2
      : 1
    const cost = escapedCost(unit, width)
    if (used + cost > room) break
    used += cost
    points++
    i += width
  }
  return points
}

const escapedCost = (unit: number, width: number): number => {
  if (width === 2) return 1
  if (unit === 0x22 || unit === 0x5c) return 2
  if (unit < 0x20) return unit === 0x08 || unit === 0x09 || unit === 0x0a || unit === 0x0c || unit === 0x0d ? 2 : 6
  if (unit >= 0xd800 && unit <= 0xdfff) return 6
  return 1
}
