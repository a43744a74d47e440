/**
 * The raw floor with jitbox's isolation discipline, on real sandboxed raw children: every request
 * is answered, spread over the children, and no child ever holds two at once. The children run a
 * loop that answers each line a few milliseconds later and reports how many lines it held when
 * that one arrived, so a child given a second request before answering the first says so (as the
 * pipelining child, given the same load, does).
 */
import { ExclusiveChildren, RawEcho } from "@jitbox/bench"
import * as Effect from "effect/Effect"
import { expect, it } from "vitest"

const countingLoop = `const tag = Math.random().toString(36).slice(2)
let b = ""
let open = 0
process.stdin.setEncoding("utf8")
process.stdin.on("data", (c) => {
  b += c
  let i
  while ((i = b.indexOf("\\n")) !== -1) {
    const m = JSON.parse(b.slice(0, i))
    b = b.slice(i + 1)
    const atOnce = ++open
    setTimeout(() => {
      open--
      process.stdout.write(JSON.stringify({ id: m.id, value: { args: m.args, atOnce, tag } }) + "\\n")
    }, 3)
  }
})
`

interface Answer {
  readonly value: { readonly args: { readonly i: number }; readonly atOnce: number; readonly tag: string }
}

const burst = (roundTrip: (args: string) => Promise<string>, calls: number) =>
  Promise.all(Array.from({ length: calls }, (_, i) => roundTrip(JSON.stringify({ i })).then((line) => JSON.parse(line) as Answer)))

it("answers every request, over all its children, never two at once on one child", async () => {
  const answers = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const children = yield* ExclusiveChildren.make(2, countingLoop)
    expect(children.children).toBe(2)
    return yield* Effect.promise(() => burst(children.roundTrip, 40))
  })))
  expect(answers.map((answer) => answer.value.args.i)).toEqual(Array.from({ length: 40 }, (_, i) => i))
  expect(new Set(answers.map((answer) => answer.value.tag)).size).toBe(2)
  expect(Math.max(...answers.map((answer) => answer.value.atOnce))).toBe(1)
}, 60_000)

it("the count sees sharing: one pipelining child given the same burst holds several at once", async () => {
  const answers = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const child = yield* RawEcho.launch(countingLoop)
    return yield* Effect.promise(() => burst(child.roundTrip, 40))
  })))
  expect(answers.map((answer) => answer.value.args.i)).toEqual(Array.from({ length: 40 }, (_, i) => i))
  expect(Math.max(...answers.map((answer) => answer.value.atOnce))).toBeGreaterThan(1)
}, 60_000)
