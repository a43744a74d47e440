/**
 * A local session (`JitHarness`) as LangChain tools: a LangGraph agent whose model node binds the
 * refreshed toolkit on every step plays the scripted conversation (create a tool, call it, see it
 * fail as an error `ToolMessage`, compose a second tool from it, reuse it), each new tool bound on
 * the very next step; management tools only when asked; bare invocations; an abort of the graph
 * cancels the running call.
 */
import { HumanMessage, ToolMessage } from "@langchain/core/messages"
import { describe, expect, it } from "vitest"
import { ToolSession } from "../src/index.js"
import { sessionToolkit, ToolCallFailed } from "../src/langchain.js"
import { agentGraph } from "./agentGraph.js"
import { conversation, create, expectedSeen, namesOf, slowSource, useHarnesses, waitUntil, watchStart } from "./fixtures.js"
import { scriptedChatModel } from "./scriptedChatModel.js"

const harness = useHarnesses()

describe("@jitbox/adapters/langchain on a local session", () => {
  it("a LangGraph agent: create → call → fail → compose → reuse, each change bound on the next step", async () => {
    const session = harness("lc_conversation")
    const initial = await namesOf(session)
    const toolkit = await sessionToolkit(session, { management: true })
    const model = scriptedChatModel(conversation)
    const final = await agentGraph(model, toolkit).invoke({ messages: [new HumanMessage("Quadruple 2.")] })
    expect(model.seen).toEqual(expectedSeen(initial))
    expect(final.messages.at(-1)?.content).toBe("done")
    const failed = final.messages.find((message) => ToolMessage.isInstance(message) && message.status === "error")
    expect(failed).toMatchObject({ name: "double", tool_call_id: "call_2", content: "RangeError: negative values are not allowed" })
    expect(session.profile("double").calls.map((call) => call.caller_tool_name)).toEqual(expect.arrayContaining(["quadruple"]))
    expect(session.profile("quadruple").calls.map((call) => call.call_id)).toEqual(["call_4"])
  })

  it("offers the management tools and the instruction block only when asked", async () => {
    const session = harness("lc_management")
    const plain = await sessionToolkit(session)
    expect(plain.getTools().map((tool) => tool.name)).toEqual(["add"])
    expect(plain.instructions).toBe("")
    const managed = await sessionToolkit(session, { management: true })
    expect(managed.getTools().map((tool) => tool.name)).toEqual(await namesOf(session))
    expect(managed.instructions).toBe((await session.definitions(ToolSession.protocol)).instructions)
  })

  it("a tool invoked with a tool call answers a ToolMessage (error status on failure); with bare arguments it answers text or throws", async () => {
    const session = harness("lc_invoke")
    const toolkit = await sessionToolkit(session, { management: true })
    const createTool = toolkit.tools.find((tool) => tool.name === "create_tool")!
    const created = await createTool.invoke({ id: "call_create", name: "create_tool", args: create("slow", slowSource), type: "tool_call" })
    expect(created).toBeInstanceOf(ToolMessage)
    expect(created).toMatchObject({ status: "success", tool_call_id: "call_create", content: `{"name":"slow","status":"loaded"}` })
    const [addTool] = await toolkit.refresh()
    expect(addTool?.name).toBe("add")
    expect(await addTool!.invoke({ left: 1, right: 2 })).toBe("3")
    const unloaded = await toolkit.tools.find((tool) => tool.name === "unload_tool")!.invoke({ id: "call_unload", name: "unload_tool", args: { name: "missing" }, type: "tool_call" })
    expect(unloaded).toMatchObject({ status: "error", tool_call_id: "call_unload" })
    expect(String((unloaded as ToolMessage).content)).toMatch(/^ToolNotFound: /)
    const slow = toolkit.tools.find((tool) => tool.name === "slow")!
    await session.callTool("unload_tool", { name: "slow" })
    await expect(slow.invoke({ ms: 1 })).rejects.toBeInstanceOf(ToolCallFailed)
    expect((await toolkit.refresh()).map((tool) => tool.name)).not.toContain("slow")
  })

  it("an abort of the graph cancels the running call", async () => {
    const session = harness("lc_cancel")
    await session.callTool("create_tool", create("slow", slowSource))
    const toolkit = await sessionToolkit(session)
    const slow = watchStart(session, "slow")
    const controller = new AbortController()
    const model = scriptedChatModel([{ call: "slow", args: { ms: 20_000 } }, { answer: "waited" }])
    const run = agentGraph(model, toolkit).invoke({ messages: [new HumanMessage("Wait.")] }, { signal: controller.signal })
    const settled = run.then(() => "resolved", () => "rejected")
    await waitUntil("the slow call starts", slow.started)
    controller.abort()
    slow.stop()
    expect(await settled).toBe("rejected")
    await waitUntil("the record says cancelled", () => session.profile("slow").calls.some((call) => call.status === "cancelled"))
  })
})
