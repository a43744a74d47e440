import { describe, expect, it } from "vitest"
import fc from "fast-check"
import * as CodePoints from "../src/CodePoints.js"
import * as JsonLength from "../src/JsonLength.js"

const expected = (value: unknown, cap: number): number | null => {
  try {
    const json = JSON.stringify(value)
    return json === undefined ? null : Math.min(cap, CodePoints.count(json))
  } catch {
    return null
  }
}

describe("JsonLength (MEAS-01/02/07)", () => {
  it("equals the code points of JSON.stringify, capped, for arbitrary values", () => {
    fc.assert(
      fc.property(
        fc.anything({
          withBoxedValues: true,
          withNullPrototype: true,
          withSparseArray: true,
          withDate: true,
          withMap: true,
          withSet: true,
          withTypedArray: true,
          withBigInt: true
        }),
        (value) => {
          expect(JsonLength.measure(value, 1e9)).toBe(expected(value, 1e9))
        }
      ),
      { numRuns: 3_000 }
    )
  })

  it("stops counting at the cap (a reported cap means at least that many)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 1, max: 300 }), (value, cap) => {
        expect(JsonLength.measure(value, cap)).toBe(expected(value, cap))
      }),
      { numRuns: 3_000 }
    )
  })

  it("counts escapes, astral characters and lone surrogates as JSON.stringify writes them", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.string({ unit: "grapheme" }), (a, b) => {
        const value = { [a]: b, list: [a, b, null, undefined, () => 1] }
        expect(JsonLength.measure(value, 1_000_000)).toBe(expected(value, 1_000_000))
      }),
      { numRuns: 2_000 }
    )
  })

  it("honours toJSON on plain objects, class instances and dates", () => {
    for (const value of [{ toJSON: () => "x" }, { a: { toJSON: () => undefined } }, new Date(0), [new Date(0)]]) {
      expect(JsonLength.measure(value, 8_000)).toBe(expected(value, 8_000))
    }
  })

  it("is null where JSON.stringify gives nothing or throws", () => {
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    expect(JsonLength.measure(undefined, 8_000)).toBeNull()
    expect(JsonLength.measure(() => 1, 8_000)).toBeNull()
    expect(JsonLength.measure(10n, 8_000)).toBeNull()
    expect(JsonLength.measure(cycle, 8_000)).toBeNull()
  })

  it("stops at the cap", () => {
    expect(JsonLength.measure("x".repeat(20_000), 8_000)).toBe(8_000)
    expect(JsonLength.measure(Array.from({ length: 10_000 }, () => 1), 8_000)).toBe(8_000)
  })
})
