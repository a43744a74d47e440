/**
 * A worker's warm pool fits its work: sized from its `concurrency` (`Worker.sandboxPool`), one tool
 * runs as many invocations at once as the worker does, and once warm, calls of a tool, alone or
 * composed one and two deep, start no sandboxed child (`childrenStarted`).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as MemoryTransport from "../src/MemoryTransport.js"
import * as Worker from "../src/Worker.js"
import { setup, track } from "./RemoteExecutionConformance.js"

/** The session's own policy (no coordinator admits it): JavaScript, and room for eight calls at once. */
const policy = { allowedLanguages: ["JavaScript"], maximumConcurrentInvocations: 8, maximumInvocations: 6_400, requireRootCoordinator: false }

/** Answers when it started and ended by its own clock, after holding its child for `ms`. */
const spanJs = `export const span = tool({
  description: "Holds its child a while.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { ms: { type: "number" } }, required: ["ms"] }
}, async ({ ms }) => {
  const start = Date.now()
  await new Promise((resolve) => setTimeout(resolve, ms))
  return { start, end: Date.now() }
})`

/** `link<i>` calls `link<i+1>` until `depth` is spent, the last holding its chain for `hold` ms, and answers how deep it went. */
const linkJs = (i: number) => `export const link${i} = tool({
  description: "A link of a chain.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { depth: { type: "integer" }, hold: { type: "number" } }, required: ["depth", "hold"] }
}, async ({ depth, hold }) => {
  if (depth > 0) return 1 + await harness.callTool("link${i + 1}", { depth: depth - 1, hold })
  await new Promise((resolve) => setTimeout(resolve, hold))
  return 0
})`

const workerOptions = { requireAdmission: false, concurrency: 4 }

describe("a worker's warm pool", () => {
  it("is sized from concurrency unless the sandbox options size it", () => {
    assert.deepStrictEqual(Worker.sandboxPool(4), { childrenPerActivation: 4, warmChildren: 16 })
    assert.deepStrictEqual(Worker.sandboxPool(3, { warmChildren: 6 }), { childrenPerActivation: 3, warmChildren: 6 })
    assert.deepStrictEqual(Worker.sandboxPool(4, { maximumRuntimeEnvironments: 2 }), { maximumRuntimeEnvironments: 2 })
  })

  it.live("one tool runs the worker's whole concurrency at once: four slow calls overlap", () =>
    Effect.gen(function*() {
      const { sessions, worker } = yield* setup(() => MemoryTransport.layer(), policy, workerOptions, null)
      const session = sessions.get("s1")
      yield* Effect.promise(() => session.createTool({ entrypoint: "span", language: "javascript", source: spanJs }))
      const spans = (yield* Effect.promise(() => Promise.all([1, 2, 3, 4].map(() => session.callTool("span", { ms: 1_500 }))))) as Array<{ start: number; end: number }>
      // every call started before any ended: all four held a child at the same time
      const lastStart = Math.max(...spans.map((span) => span.start))
      const firstEnd = Math.min(...spans.map((span) => span.end))
      assert.isBelow(lastStart, firstEnd, JSON.stringify(spans))
      track(worker)
    }).pipe(Effect.scoped), 60_000)

  it.live("once warm, calls start no child: alone, composed one and two deep, sequential and four at once", () =>
    Effect.gen(function*() {
      const { sessions, worker } = yield* setup(() => MemoryTransport.layer(), policy, workerOptions, null)
      const session = sessions.get("s1")
      for (const i of [2, 1, 0]) {
        yield* Effect.promise(() => session.createTool({ entrypoint: `link${i}`, language: "javascript", source: linkJs(i) }))
      }
      const call = (depth: number) => Effect.promise(() => session.callTool("link0", { depth, hold: 0 }))
      const together = (depth: number, hold = 0) => Effect.promise(() => Promise.all([1, 2, 3, 4].map(() => session.callTool("link0", { depth, hold }))))
      // warming up, four chains two deep hold their twelve children at once: no later call needs more
      yield* together(2, 1_000)
      const warm = worker.childrenStarted()
      let calls = 0
      for (const depth of [0, 1, 2]) {
        for (let i = 0; i < 10; i++, calls++) assert.strictEqual(yield* call(depth), depth)
        for (let round = 0; round < 5; round++, calls += 4) assert.deepStrictEqual(yield* together(depth), [depth, depth, depth, depth])
      }
      assert.strictEqual(worker.childrenStarted() - warm, 0, `children started over ${calls} calls once warm (${warm} to warm up)`)
      track(worker)
    }).pipe(Effect.scoped), 120_000)
})
