/**
 * ScriptedModel's `turn` counts every `generate` call of the provider: it is not reset when an
 * agent starts its next run (a `ModelRequest` does not say which run it belongs to), unlike
 * `RunResult.turns`, which counts one run's model turns from 1. `fromReplies` therefore takes the
 * replies of every run in one list, in order, and says so when it runs out.
 */
import { createAgent, ScriptedModel } from "@jitbox/agent"
import { describe, expect, it } from "vitest"
import { add, calls, rejection } from "./agentFixtures.js"

describe("ScriptedModel turns across the runs of an agent", () => {
  it("the turn goes on counting in the second run; RunResult.turns counts per run", async () => {
    const seen: Array<number> = []
    const model = ScriptedModel.make((_, turn) => {
      seen.push(turn)
      return turn === 0 ? calls(["c1", "add", { left: 1, right: 2 }]) : `answer of turn ${turn}`
    })
    const agent = await createAgent(model, { config: { sessionId: "runs" }, tools: [add] })
    const first = await agent.run("First.")
    const second = await agent.run("Second.")
    expect(seen).toEqual([0, 1, 2])
    expect([first.turns, second.turns]).toEqual([2, 1])
    expect(second.content).toBe("answer of turn 2")
  })

  it("fromReplies takes the replies of every run in one list, in order", async () => {
    const model = ScriptedModel.fromReplies([
      calls(["c1", "add", { left: 20, right: 22 }]), // run 1, turn 0
      "The sum is 42.", // run 1, turn 1
      "Hello again." // run 2, turn 2
    ])
    const agent = await createAgent(model, { config: { sessionId: "runs" }, tools: [add] })
    expect((await agent.run("Add 20 and 22.")).content).toBe("The sum is 42.")
    expect((await agent.run("Hi.")).content).toBe("Hello again.")
  })

  it("a run past the end of fromReplies fails saying that turns count across runs", async () => {
    const agent = await createAgent(ScriptedModel.fromReplies(["only one"]), { config: { sessionId: "runs" } })
    expect((await agent.run("First.")).content).toBe("only one")
    const error = await rejection(agent.run("Second."))
    expect(error.reason).toBe("InvalidResponse")
    expect(error.providerMessage).toBe(
      "the script has 1 reply and no reply for turn 1: turns count every generate call of this provider, across runs"
    )
  })
})
