/**
 * A LangGraph tool-calling agent over a `SessionToolkit`: the model node refreshes the toolkit and
 * binds what it answers on every step, the tools node runs the calls with the toolkit's tools
 * through the prebuilt `ToolNode`; it loops until the model answers without tool calls.
 */
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph"
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt"
import type { SessionToolkit } from "../src/langchain.js"

export const agentGraph = (model: BaseChatModel, toolkit: SessionToolkit) =>
  new StateGraph(MessagesAnnotation)
    .addNode("agent", async (state) => ({ messages: [await model.bindTools!(await toolkit.refresh()).invoke(state.messages)] }))
    .addNode("tools", (state, config) => new ToolNode(toolkit.tools).invoke(state, config))
    .addEdge(START, "agent")
    .addConditionalEdges("agent", toolsCondition, ["tools", END])
    .addEdge("tools", "agent")
    .compile()
