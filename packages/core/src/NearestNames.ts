/**
 * The names nearest to a misspelt one, for a `ToolNotFound` that says "did you mean …": by edit
 * distance (insertions, deletions, substitutions and swaps of two neighbours, case ignored), only
 * those close enough to be a slip (at most a third of the name's length, and at least 2, apart),
 * nearest first, at most three.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 @category constants */
export const maxSuggestions = 3

/** The optimal string alignment distance of `a` and `b`. @since 0.1.0 @category measures */
export const distance = (a: string, b: string): number => {
  const rows = a.length + 1
  const columns = b.length + 1
  const d: Array<Array<number>> = Array.from({ length: rows }, (_, i) => Array.from({ length: columns }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < columns; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1)
      d[i]![j] = best
    }
  }
  return d[rows - 1]![columns - 1]!
}

/**
 * The at most three `candidates` nearest to `name` (ties by name), within slip distance.
 *
 * @since 0.1.0
 * @category constructors
 */
export const nearest = (name: string, candidates: Iterable<string>): Array<string> => {
  const wanted = name.toLowerCase()
  const limit = Math.max(2, Math.floor(name.length / 3))
  const scored: Array<{ readonly candidate: string; readonly distance: number }> = []
  for (const candidate of candidates) {
    // a length apart beyond the limit cannot be within it: skip the table
    if (candidate === name || Math.abs(candidate.length - name.length) > limit) continue
    const apart = distance(wanted, candidate.toLowerCase())
    if (apart <= limit) scored.push({ candidate, distance: apart })
  }
  scored.sort((x, y) => x.distance - y.distance || (x.candidate < y.candidate ? -1 : x.candidate > y.candidate ? 1 : 0))
  return scored.slice(0, maxSuggestions).map((entry) => entry.candidate)
}
