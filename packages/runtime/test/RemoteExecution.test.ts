/**
 * Code tools on workers in this process (the embedded default), plus what only the in-memory
 * layer makes easy to arrange: a package larger than `max_payload` fetched in chunks, and
 * invocations answered `Busy` by a saturated worker retried until they run.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as MemoryTransport from "../src/MemoryTransport.js"
import { remoteExecutionConformance, setup, track } from "./RemoteExecutionConformance.js"

remoteExecutionConformance("MemoryTransport", () => MemoryTransport.layer())

const bigJs = (bytes: number) =>
  `const padding = ${JSON.stringify("é".repeat(bytes / 2))}
export const big = tool({ description: "Answers its padding's length.", guidelines: "Use in tests." }, async () => padding.length)`

describe("code tools on workers, in this process", () => {
  it.live("a package larger than max_payload is fetched in chunks", () =>
    Effect.gen(function*() {
      const { sessions, worker } = yield* setup(() => MemoryTransport.layer({ maxPayload: 8_192 }))
      const session = sessions.get("s1")
      yield* Effect.promise(() => session.createTool({ entrypoint: "big", language: "javascript", source: bigJs(40_000) }))
      assert.strictEqual(yield* Effect.promise(() => session.callTool("big", {})), 20_000)
      assert.strictEqual(worker.fetches(), 1)
      track(worker)
    }).pipe(Effect.scoped), 60_000)

  it.live("invocations a saturated worker answers Busy are sent again until they run", () =>
    Effect.gen(function*() {
      const { sessions, worker } = yield* setup(() => MemoryTransport.layer(), undefined, { concurrency: 1, backlog: 0 })
      const session = sessions.get("s1")
      yield* Effect.promise(() =>
        session.createTool({
          entrypoint: "pause",
          language: "javascript",
          source: `export const pause = tool({ description: "Pauses.", guidelines: "Use in tests." }, async () => { await new Promise((r) => setTimeout(r, 100)); return "done" })`
        })
      )
      const results = yield* Effect.promise(() => Promise.all([1, 2, 3].map(() => session.callTool("pause", {}))))
      assert.deepStrictEqual(results, ["done", "done", "done"])
      track(worker)
    }).pipe(Effect.scoped), 60_000)
})
