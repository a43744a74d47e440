/**
 * The adapters on a remote session: a session host runs in this process on a real nats-server
 * (sessions with the `add` base tool, code tools running in the host), and the adapters reach its
 * sessions through `connect` of @jitbox/nats, as an orchestrator in another process would. The AI
 * SDK's mock model and a LangGraph agent each play the scripted conversation on a session of
 * their own; an abort reaches the host and cancels the call there.
 */
import { connect } from "@jitbox/nats"
import { HumanMessage, ToolMessage } from "@langchain/core/messages"
import { generateText, stepCountIs } from "ai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { useBaseToolHost } from "../../nats/test/fixtures/baseToolHost.js"
import { sessionTools } from "../src/ai.js"
import { sessionToolkit } from "../src/langchain.js"
import { agentGraph } from "./agentGraph.js"
import { add, conversation, create, expectedSeen, namesOf, waitUntil } from "./fixtures.js"
import { scriptedAiModel } from "./scriptedAiModel.js"
import { scriptedChatModel } from "./scriptedChatModel.js"

const namespace = "adapters"
const serverUrl = useBaseToolHost(namespace, [add])
let client: Awaited<ReturnType<typeof connect>> | undefined

beforeAll(async () => {
  client = await connect({ servers: serverUrl(), namespace, timeoutMs: 20_000 })
})
afterAll(async () => {
  await client?.close()
})

/** Leaves a note (the text tool `waiting`) once running, then waits: the host publishes no events here. */
const noteThenWaitSource = `export const slow = tool({
  description: "Answers after a while.",
  guidelines: "Use to wait.",
  parameters: { type: "object", properties: { ms: { type: "number" } }, required: ["ms"] }
}, async ({ ms }) => {
  await harness.callTool("create_tool", { kind: "text", name: "waiting", description: "A note.", source: "# Waiting" })
  await new Promise((resolve) => setTimeout(resolve, ms))
  return "slow"
})`

const remote = (sessionId: string) => client!.session(sessionId)

describe("the adapters on a remote session over NATS", () => {
  it("AI SDK: create → call → fail → compose → reuse, each change offered on the next step", async () => {
    const session = remote("ai")
    const initial = await namesOf(session)
    const toolset = await sessionTools(session, { management: true })
    const { model, seen } = scriptedAiModel(conversation)
    const result = await generateText({ model, tools: toolset.tools, prepareStep: toolset.prepareStep, prompt: "Quadruple 2.", stopWhen: stepCountIs(20) })
    expect(seen).toEqual(expectedSeen(initial))
    expect(result.text).toBe("done")
    expect((await session.profile("double")).calls.map((call) => call.caller_tool_name)).toEqual(expect.arrayContaining(["quadruple"]))
  })

  it("LangGraph: create → call → fail → compose → reuse, each change bound on the next step", async () => {
    const session = remote("langgraph")
    const initial = await namesOf(session)
    const toolkit = await sessionToolkit(session, { management: true })
    const model = scriptedChatModel(conversation)
    const final = await agentGraph(model, toolkit).invoke({ messages: [new HumanMessage("Quadruple 2.")] })
    expect(model.seen).toEqual(expectedSeen(initial))
    expect(final.messages.filter((message) => ToolMessage.isInstance(message) && message.status === "error").map((message) => message.content))
      .toEqual(["RangeError: negative values are not allowed"])
    expect((await session.profile("quadruple")).calls.map((call) => call.call_id)).toEqual(["call_4"])
  })

  it("an abort of the generation cancels the call in the host", async () => {
    const session = remote("cancel")
    await session.callTool("create_tool", create("slow", noteThenWaitSource))
    const toolset = await sessionTools(session)
    const controller = new AbortController()
    const { model } = scriptedAiModel([{ call: "slow", args: { ms: 20_000 } }, { answer: "waited" }])
    const generation = generateText({ model, tools: toolset.tools, prompt: "Wait.", stopWhen: stepCountIs(5), abortSignal: controller.signal })
    const settled = generation.then(() => "resolved", () => "rejected")
    await waitUntil("the slow call runs", async () => (await namesOf(session)).includes("waiting"))
    controller.abort()
    expect(await settled).toBe("rejected")
    await waitUntil("the host's record says cancelled", async () => (await session.profile("slow")).calls.some((call) => call.status === "cancelled"))
  })
})
