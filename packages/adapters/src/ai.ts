/**
 * `@jitbox/adapters/ai`: a jitbox session as Vercel AI SDK tools (needs the `ai` package, 6.x).
 *
 * @since 0.1.0
 */
export { aiTool, sessionTools, type SessionToolSet } from "./AiTools.js"
export { ToolCallFailed } from "./ToolOutput.js"
export type { ToolSession, ToolSessionOptions } from "./ToolSession.js"
