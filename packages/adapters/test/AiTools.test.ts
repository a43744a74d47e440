/**
 * A local session (`JitHarness`) as Vercel AI SDK tools, driven by the SDK's own mock model
 * through `generateText`: the scripted conversation creates a tool, calls it, sees it fail as a
 * tool-error, composes a second tool from it and reuses it, each new tool offered on the very next
 * step; management tools only when asked; a tool unloaded is gone; an abort cancels the call.
 */
import { generateText, stepCountIs, tool, jsonSchema } from "ai"
import { describe, expect, it } from "vitest"
import { sessionTools, ToolCallFailed } from "../src/ai.js"
import { ToolSession } from "../src/index.js"
import { conversation, create, expectedSeen, namesOf, slowSource, useHarnesses, waitUntil, watchStart } from "./fixtures.js"
import { scriptedAiModel } from "./scriptedAiModel.js"

const harness = useHarnesses()

describe("@jitbox/adapters/ai on a local session", () => {
  it("create → call → fail → compose → reuse, each change offered on the next step", async () => {
    const session = harness("ai_conversation")
    const initial = await namesOf(session)
    const toolset = await sessionTools(session, { management: true })
    const { model, seen } = scriptedAiModel(conversation)
    const result = await generateText({
      model,
      tools: toolset.tools,
      prepareStep: toolset.prepareStep,
      system: toolset.instructions(),
      prompt: "Quadruple 2.",
      stopWhen: stepCountIs(20)
    })
    expect(seen).toEqual(expectedSeen(initial))
    expect(result.text).toBe("done")
    const failed = result.steps[2]!.content.find((part) => part.type === "tool-error")
    expect(failed).toMatchObject({ toolName: "double", toolCallId: "call_2" })
    expect((failed as { error: unknown }).error).toBeInstanceOf(ToolCallFailed)
    expect(session.profile("double").calls.map((call) => call.caller_tool_name)).toEqual(expect.arrayContaining(["quadruple"]))
    expect(session.profile("quadruple").calls.map((call) => call.call_id)).toEqual(["call_4"])
  })

  it("offers the management tools and the instruction block only when asked", async () => {
    const session = harness("ai_management")
    const plain = await sessionTools(session)
    expect(Object.keys(plain.tools)).toEqual(["add"])
    expect(plain.instructions()).toBe("")
    const managed = await sessionTools(session, { management: true })
    expect(Object.keys(managed.tools).sort()).toEqual((await namesOf(session)).sort())
    expect(Object.keys(managed.tools)).toContain("create_tool")
    expect(managed.instructions()).toBe((await session.definitions(ToolSession.protocol)).instructions)
  })

  it("refresh follows the toolbox: an unloaded tool is gone, tools of one's own are kept", async () => {
    const session = harness("ai_refresh")
    await session.callTool("create_tool", create("slow", slowSource))
    const toolset = await sessionTools(session)
    toolset.tools["mine"] = tool({ description: "Mine.", inputSchema: jsonSchema({ type: "object" }), execute: async () => "mine" })
    expect(Object.keys(toolset.tools).sort()).toEqual(["add", "mine", "slow"])
    await session.callTool("unload_tool", { name: "slow" })
    expect(await toolset.refresh()).toEqual(["add"])
    expect(Object.keys(toolset.tools).sort()).toEqual(["add", "mine"])
  })

  it("an abort of the generation cancels the running call", async () => {
    const session = harness("ai_cancel")
    await session.callTool("create_tool", create("slow", slowSource))
    const toolset = await sessionTools(session)
    const controller = new AbortController()
    const { model } = scriptedAiModel([{ call: "slow", args: { ms: 20_000 } }, { answer: "waited" }])
    const slow = watchStart(session, "slow")
    const generation = generateText({ model, tools: toolset.tools, prepareStep: toolset.prepareStep, prompt: "Wait.", stopWhen: stepCountIs(5), abortSignal: controller.signal })
    const settled = generation.then(() => "resolved", () => "rejected")
    await waitUntil("the slow call starts", slow.started)
    controller.abort()
    slow.stop()
    expect(await settled).toBe("rejected")
    await waitUntil("the record says cancelled", () => session.profile("slow").calls.some((call) => call.status === "cancelled"))
  })
})
