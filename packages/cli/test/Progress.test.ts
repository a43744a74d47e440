/**
 * The progress line: drawn in place (carriage return, erase line) on a terminal and erased when
 * it stops; nothing at all written to a stream that is not a terminal; the line never wider than
 * the terminal.
 */
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { Progress } from "../src/index.js"

const collecting = (isTTY: boolean, columns = 80) => {
  const written: Array<string> = []
  return { output: { isTTY, columns, write: (text: string) => written.push(text) }, written }
}

describe("Progress", () => {
  it("on a terminal: each update redraws the line in place, and stopping erases it", () => {
    const { output, written } = collecting(true)
    const progress = Progress.make({ output, enabled: true, intervalMs: 60_000, status: { label: "activating snapshot", total: 4, done: 0 } })
    progress.update({ done: 2, detail: "square" })
    progress.stop()
    progress.update({ done: 3 })
    const text = written.join("")
    expect(progress.enabled).toBe(true)
    expect(text).toContain(`${Progress.ansi.clearLine}⠙ activating snapshot [##########----------] 2/4 50% `)
    expect(text).toMatch(/ square$|square\r/)
    expect(text.endsWith(`${Progress.ansi.clearLine}${Progress.ansi.showCursor}`)).toBe(true)
    expect(text).not.toContain("3/4")
  })

  it("not a terminal: nothing is written", async () => {
    const { output, written } = collecting(false)
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const progress = yield* Progress.scoped({ output, status: { label: "draining" } })
      progress.update({ done: 1, total: 2 })
      expect(progress.enabled).toBe(false)
    })))
    expect(written).toEqual([])
  })

  it("scoped: the line is erased when the scope closes", async () => {
    const { output, written } = collecting(true)
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const progress = yield* Progress.scoped({ output, enabled: true, intervalMs: 60_000, status: { label: "draining w1" } })
      progress.update({ detail: "2 running" })
    })))
    expect(written.at(-1)).toBe(`${Progress.ansi.clearLine}${Progress.ansi.showCursor}`)
  })

  it("the line is cut to the terminal's width and holds no control characters of its own", () => {
    const line = Progress.render({ label: "x".repeat(200), detail: "a\nb\x1b[31m" }, 1500, 0, 40)
    expect(line.length).toBeLessThanOrEqual(39)
    expect(line.endsWith("…")).toBe(true)
    expect(Progress.render({ label: "run", detail: "a\nb\x1b" }, 61_000, 1, 80)).toBe("⠙ run 1m01s a b ")
  })
})
