/**
 * The embedded default: one call builds coordinator, workers and sessions on the in-memory
 * transport; a session is admitted, its code runs on a worker subprocess, its events leave on
 * the transport, and closing stops every child.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as Embedded from "../src/Embedded.js"
import * as StreamProtocol from "../src/StreamProtocol.js"
import * as Subject from "../src/Subject.js"
import { add, twiceSource } from "../../core/test/fixtures.js"

const alive = (pid: number): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"
  } catch {
    return false
  }
}

describe("Embedded", () => {
  it.live("one call: an admitted session runs a TypeScript tool on a worker that composes a base tool; its events are on the transport", () =>
    Effect.gen(function*() {
      const runtime = yield* Embedded.make({ harness: { tools: [add], policy: { allowedLanguages: ["JavaScript"] } } })
      const events: Array<string> = []
      const stream = yield* runtime.transport.subscribe(Subject.allEvents(runtime.prefix))
      yield* Effect.forkScoped(Stream.runForEach(stream, (message) => Effect.sync(() => events.push(...StreamProtocol.decodeEvents(message.data).map((event) => `${message.subject} ${event.name}`)))))
      const session = runtime.sessions.get("s1")
      yield* Effect.promise(() => session.createTool({ entrypoint: "twice", source: twiceSource }))
      assert.strictEqual(yield* Effect.promise(() => session.callTool("twice", { value: 21 })), 42)
      assert.strictEqual(runtime.workers[0]!.fetches(), 1, "the code ran on the worker")
      const profile = yield* Effect.promise(() => session.profile("add"))
      assert.strictEqual(profile.calls.at(-1)?.caller_tool_name, "twice")
      assert.isAtLeast(runtime.coordinator.requests(), 2, "admitted, and the lease checked by the worker")
      for (let i = 0; i < 100 && !events.includes(`${runtime.prefix}.events.s1 jit_tool_completed`); i++) {
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
      }
      assert.include(events, `${runtime.prefix}.events.s1 jit_tool_completed`)
    }).pipe(Effect.scoped), 60_000)

  it.live("start/close, the Promise face: without consent no code runs; closing leaves no child process", () =>
    Effect.promise(async () => {
      const refusing = await Embedded.start({ namespace: "noconsent", deploymentConsent: false, harness: { policy: { allowedLanguages: ["JavaScript"] } } })
      const error = await refusing.sessions.get("s1").createTool({ entrypoint: "twice", source: twiceSource }).then(() => undefined, (e: unknown) => e)
      assert.strictEqual((error as { reason?: string }).reason, "ConsentRequired", String(error))
      await refusing.close()

      const runtime = await Embedded.start({ harness: { tools: [add], policy: { allowedLanguages: ["JavaScript"] } }, workers: 2 })
      const session = runtime.sessions.get("s1")
      await session.createTool({ entrypoint: "twice", source: twiceSource })
      assert.deepStrictEqual(await Promise.all([1, 2, 3, 4].map((value) => session.callTool("twice", { value }))), [2, 4, 6, 8])
      const pids = runtime.workers.flatMap((worker) => worker.processes())
      assert.isAbove(pids.length, 0)
      await runtime.close()
      await runtime.close()
      const deadline = Date.now() + 5_000
      while (pids.some(alive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
      assert.isFalse(pids.some(alive), "every worker child is gone")
    }), 60_000)
})
