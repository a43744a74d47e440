/**
 * `@jitbox/adapters/langchain`: a jitbox session as LangChain and LangGraph tools (needs
 * `@langchain/core`, 1.x).
 *
 * @since 0.1.0
 */
export { langChainTool, SessionToolkit, sessionToolkit } from "./LangChainToolkit.js"
export { ToolCallFailed } from "./ToolOutput.js"
export type { ToolSession, ToolSessionOptions } from "./ToolSession.js"
