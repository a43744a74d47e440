/**
 * What the MCP tests share: tool sources, an official MCP client that counts `list_changed`
 * notifications, and waiting for a condition.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { type CallToolResult, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"

export const doubleSource = `export const double = tool({
  description: "Doubles a number.",
  guidelines: "Use to double numbers.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }) => {
  if (value < 0) throw new RangeError("negative values are not allowed")
  return value * 2
})`

export const quadrupleSource = `export const quadruple = tool({
  description: "Quadruples a number by doubling it twice.",
  guidelines: "Use to quadruple numbers.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }) => ({ quadrupled: await harness.callTool("double", { value: await harness.callTool("double", { value }) }) }))`

export const slowSource = `export const slow = tool({
  description: "Answers after a while.",
  guidelines: "Use to wait.",
  parameters: { type: "object", properties: { ms: { type: "number" } }, required: ["ms"] }
}, async ({ ms }) => { await new Promise((resolve) => setTimeout(resolve, ms)); return "slow" })`

/** A code tool that creates a text tool through harness.callTool: a change no client asked for. */
export const makerSource = `export const maker = tool({
  description: "Creates the text tool it is given.",
  guidelines: "Use to leave a note.",
  parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] }
}, async ({ name }) => await harness.callTool("create_tool", { kind: "text", name, description: "A note.", source: "# Note\\nRemember this." }))`

export const create = (entrypoint: string, source: string) => ({ entrypoint, language: "javascript" as const, source })

export interface TestClient {
  readonly client: Client
  /** `notifications/tools/list_changed` received so far. */
  readonly listChanged: () => number
  readonly call: (name: string, args?: Record<string, unknown>) => Promise<CallToolResult>
  readonly toolNames: () => Promise<Array<string>>
}

/** An official MCP client connected over `transport`. */
export const connect = async (transport: Transport): Promise<TestClient> => {
  const client = new Client({ name: "jitbox-test", version: "0.1.0" })
  let changes = 0
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changes++
  })
  await client.connect(transport)
  return {
    client,
    listChanged: () => changes,
    call: async (name, args = {}) => (await client.callTool({ name, arguments: args })) as CallToolResult,
    toolNames: async () => (await client.listTools()).tools.map((tool) => tool.name)
  }
}

/** The text of a result's first content block. */
export const textOf = (result: CallToolResult): string => {
  const first = result.content[0]
  if (first?.type !== "text") throw new Error(`expected text content, got ${JSON.stringify(result)}`)
  return first.text
}

/** Resolves once `check` holds (polling every 20 ms); rejects after `ms`. */
export const waitUntil = async (what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> => {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
