/**
 * `@jitbox/adapters`: what the orchestrator adapters share. The adapters themselves are the
 * subpaths `@jitbox/adapters/ai` (Vercel AI SDK) and `@jitbox/adapters/langchain` (LangChain,
 * LangGraph), so that each library is needed only by those who import its adapter.
 *
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as LiveTools from "./LiveTools.js"

/**
 * @since 0.1.0
 */
export * as ToolOutput from "./ToolOutput.js"

/**
 * @since 0.1.0
 */
export * as ToolSession from "./ToolSession.js"
