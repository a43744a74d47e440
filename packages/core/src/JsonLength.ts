/**
 * The length in code points of `JSON.stringify(value)`, computed without building the string and
 * stopping once it passes a cap. Measuring every call's input and output this way costs a small
 * fraction of serialising it, which matters on the dispatch path (MEAS-01/02/07).
 *
 * Values it cannot reason about cheaply (anything with `toJSON`, boxed primitives, very deep
 * nesting) fall back to `JSON.stringify` itself, so the result is always exact.
 *
 * @since 0.1.0
 */
import * as CodePoints from "./CodePoints.js"

const hasOwn = Object.prototype.hasOwnProperty

/** Code points of `text` once written as a JSON string, quotes included, counting past `cap` no further. */
const stringLength = (text: string, cap: number): number => {
  let n = 2
  const length = text.length
  for (let i = 0; i < length; i++) {
    const unit = text.charCodeAt(i)
    if (unit >= 0x20 && unit !== 0x22 && unit !== 0x5c && (unit < 0xd800 || unit > 0xdfff)) {
      n++
    } else if (unit === 0x22 || unit === 0x5c || unit === 0x08 || unit === 0x09 || unit === 0x0a || unit === 0x0c || unit === 0x0d) {
      n += 2
    } else if (unit < 0x20) {
      n += 6
    } else if (unit <= 0xdbff && i + 1 < length && text.charCodeAt(i + 1) >= 0xdc00 && text.charCodeAt(i + 1) <= 0xdfff) {
      n++
      i++
    } else {
      n += 6
    }
    if (n > cap) return n
  }
  return n
}

const powersOfTen = [10, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15]

const numberLength = (n: number): number => {
  if (Number.isInteger(n) && n > -1e15 && n < 1e15) {
    const magnitude = n < 0 ? -n : n
    let digits = 1
    while (magnitude >= powersOfTen[digits - 1]!) digits++
    return n < 0 ? digits + 1 : digits
  }
  if (n !== n || n === Infinity || n === -Infinity) return 4
  return String(n).length
}

const exact = (value: unknown, cap: number): number => {
  const json = JSON.stringify(value)
  return json === undefined ? -1 : CodePoints.count(json, cap + 1)
}

/** -1 stands for "omitted" (undefined, functions, symbols), as JSON.stringify skips them. */
const walk = (value: unknown, cap: number, depth: number): number => {
  switch (typeof value) {
    case "string":
      return stringLength(value, cap)
    case "number":
      return numberLength(value)
    case "boolean":
      return value ? 4 : 5
    case "undefined":
    case "function":
    case "symbol":
      return -1
    case "bigint":
      throw new TypeError("BigInt value can't be serialized in JSON")
  }
  if (value === null) return 4
  const object = value as Record<string, unknown>
  if (depth > 32) return exact(value, cap)
  const prototype = Object.getPrototypeOf(value)
  if (prototype === Object.prototype || prototype === Array.prototype || prototype === null) {
    // Looking up a missing `toJSON` through Object.prototype is slow, so ask the object itself.
    if (hasOwn.call(object, "toJSON") && typeof object.toJSON === "function") return exact(value, cap)
  } else if (
    typeof object.toJSON === "function" || value instanceof Number || value instanceof String || value instanceof Boolean
  ) {
    return exact(value, cap)
  }
  if (Array.isArray(value)) {
    let n = 2
    for (let i = 0; i < value.length; i++) {
      const item = walk(value[i], cap, depth + 1)
      n += (i === 0 ? 0 : 1) + (item < 0 ? 4 : item)
      if (n > cap) return n
    }
    return n
  }
  let n = 2
  let first = true
  for (const key in object) {
    if (!hasOwn.call(object, key)) continue
    const item = walk(object[key], cap, depth + 1)
    if (item < 0) continue
    n += (first ? 0 : 1) + stringLength(key, cap) + 1 + item
    first = false
    if (n > cap) return n
  }
  return n
}

/**
 * Code points of `JSON.stringify(value)`, at most `cap`; `null` when JSON.stringify would return
 * `undefined` or throw (a BigInt, a cycle).
 *
 * @since 0.1.0
 * @category measuring
 */
export const measure = (value: unknown, cap: number): number | null => {
  try {
    const n = walk(value, cap, 0)
    return n < 0 ? null : n > cap ? cap : n
  } catch {
    return null
  }
}
