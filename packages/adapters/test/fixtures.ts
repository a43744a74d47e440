/**
 * What the adapter tests share: the scripted conversation both libraries' fake models play (the
 * model creates `double`, calls it, sees it fail, creates `quadruple` that composes `double`, and
 * reuses it), what the model saw on each step, and the base tool of the sessions.
 */
import { JitHarness, tool } from "@jitbox/core"
import { afterEach } from "vitest"
import { create, doubleSource, quadrupleSource } from "../../mcp/test/fixtures.js"
import { ToolSession } from "../src/index.js"

export { create, slowSource, waitUntil } from "../../mcp/test/fixtures.js"

/** A base tool every test session has. */
export const add = tool({
  name: "add",
  description: "Add two numbers.",
  guidelines: "Use to add.",
  parameters: { type: "object", properties: { left: { type: "number" }, right: { type: "number" } }, required: ["left", "right"] }
}, ({ left, right }: { left: number; right: number }) => left + right)

/** Makes harnesses with `add` for the test file, released after each test. */
export const useHarnesses = (): (sessionId: string) => JitHarness => {
  const made: Array<JitHarness> = []
  afterEach(async () => {
    await Promise.all(made.splice(0).map((harness) => harness.release()))
  })
  return (sessionId) => {
    const harness = new JitHarness({ sessionId, tools: [add] })
    made.push(harness)
    return harness
  }
}

/** The names of the tools a session offers, the management tools included. */
export const namesOf = async (session: ToolSession.ToolSession): Promise<Array<string>> =>
  (await session.definitions(ToolSession.protocol)).tools.map((tool) => tool.name)

/** Whether a call of `name` has started in `harness`, as its events say; `stop` stops following them. */
export const watchStart = (harness: JitHarness, name: string): { readonly started: () => boolean; readonly stop: () => void } => {
  let started = false
  const stop = harness.events.listen((event) => {
    if (event.name === "jit_tool_started" && event.payload.tool_name === name) started = true
  })
  return { started: () => started, stop }
}

/** One model turn: a tool call, or the final answer. */
export type Step =
  | { readonly call: string; readonly args: Record<string, unknown> }
  | { readonly answer: string }

/** The result of the previous call as the model read it. */
export interface Observed {
  readonly name: string
  readonly text: string
  readonly isError: boolean
}

/** What the model was offered (sorted by name) and read on one step. */
export interface Seen {
  readonly offered: ReadonlyArray<string>
  readonly observed: Observed | undefined
}

/** create → call → fail → compose → reuse. */
export const conversation: ReadonlyArray<Step> = [
  { call: "create_tool", args: create("double", doubleSource) },
  { call: "double", args: { value: 21 } },
  { call: "double", args: { value: -2 } },
  { call: "create_tool", args: create("quadruple", quadrupleSource) },
  { call: "quadruple", args: { value: 2 } },
  { call: "add", args: { left: 40, right: 2 } },
  { answer: "done" }
]

/** What the model must have seen on each step of `conversation`, given the tools it started with. */
export const expectedSeen = (initial: ReadonlyArray<string>): ReadonlyArray<Seen> => {
  const withDouble = [...initial, "double"].sort()
  const withBoth = [...withDouble, "quadruple"].sort()
  return [
    { offered: [...initial].sort(), observed: undefined },
    { offered: withDouble, observed: { name: "create_tool", text: `{"name":"double","status":"loaded"}`, isError: false } },
    { offered: withDouble, observed: { name: "double", text: "42", isError: false } },
    { offered: withDouble, observed: { name: "double", text: "RangeError: negative values are not allowed", isError: true } },
    { offered: withBoth, observed: { name: "create_tool", text: `{"name":"quadruple","status":"loaded"}`, isError: false } },
    { offered: withBoth, observed: { name: "quadruple", text: `{"quadrupled":8}`, isError: false } },
    { offered: withBoth, observed: { name: "add", text: "42", isError: false } }
  ]
}
