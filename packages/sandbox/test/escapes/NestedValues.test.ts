/**
 * Values nested too deeply to encode cross the protocol in neither direction: a value a few
 * thousand levels deep (a few kilobytes of JSON) overflows recursive encoders, and once crashed the
 * host from a nested call's answer. Each direction refuses it with a typed error of that invocation.
 */
import { afterAll, describe, expect, it } from "vitest"
import { Protocol, SandboxRunner } from "../../src/index.js"
import { activate, MiniHarness, rejection, source, testOptions } from "../helpers.js"

const runner = SandboxRunner.make(testOptions)
afterAll(() => runner.close())

const deep = (levels: number): unknown => {
  let value: unknown = []
  for (let i = 1; i < levels; i++) value = [value]
  return value
}

describe("values nested deeper than the protocol allows", () => {
  it("a Bash tool printing [ 5,000 deep, called by a Python tool, fails the Python call with a typed error; the host lives on", async () => {
    const harness = new MiniHarness(runner)
    await harness.add("brackets", source("bash", { "main.sh": `printf '%.0s[' {1..5000}; printf '%.0s]' {1..5000}; echo\n` }))
    await harness.add("caller", source("python", {
      "__init__.py": [
        "@tool(guidelines='g')",
        "def main() -> str:",
        "    try:",
        "        harness.call_tool_sync('brackets')",
        "    except harness.ToolCallError as error:",
        "        return '%s: %s' % (type(error).__name__, error)",
        "    return 'no error'"
      ].join("\n")
    }))
    const outcome = await harness.call("caller", {}) as string
    expect(outcome).toMatch(/^SandboxError: .*nested deeper than 128 levels/)
    expect(await harness.call("caller", {})).toBe(outcome)
  })

  it("a result line nested too deeply is OutputTooLarge; the same child answers the next call", async () => {
    const tool = await activate(runner, source("javascript", {
      "index.js": [
        `import * as fs from "node:fs"`,
        `let calls = 0`,
        `export const main = tool({ description: "d" }, ({ id }) => {`,
        `  calls++`,
        `  if (id === undefined) return calls`,
        `  fs.writeSync(1, '{"_tag":"Result","invocationId":"' + id + '","value":' + "[".repeat(3000) + "]".repeat(3000) + "}\\n")`,
        `  return new Promise(() => {})`,
        `})`
      ].join("\n")
    }))
    // the first invocation of a fresh child is "1"
    const error = await rejection(tool.invoke({ id: "1" }))
    expect(error).toMatchObject({ _tag: "SandboxError", reason: "OutputTooLarge" })
    expect(error.message).toMatch(/nested deeper than 128 levels/)
    expect(await tool.invoke({})).toBe(2)
  })

  it("arguments nested too deeply are refused before they are sent (InputTooLarge), to a call and to a nested call", async () => {
    const calls: Array<string> = []
    const tool = await activate(runner, source("javascript", {
      "index.js": [
        `export const main = tool({ description: "d" }, async ({ levels }) => {`,
        `  let value = []`,
        `  for (let i = 1; i < levels; i++) value = [value]`,
        `  try { await harness.callTool("other", { value }); return "sent" } catch (e) { return e.name + ": " + e.message }`,
        `})`
      ].join("\n")
    }), { sessionId: "session-1", callTool: async (_parent, name) => { calls.push(name); return null } })
    expect(await tool.invoke({ levels: 10 })).toBe("sent")
    expect(await tool.invoke({ levels: 200 })).toMatch(/^SandboxError: the arguments of 'other' are nested deeper than 128 levels/)
    expect(calls).toEqual(["other"])
    const error = await rejection(tool.invoke({ levels: 1, padding: deep(200) }))
    expect(error).toMatchObject({ _tag: "SandboxError", reason: "InputTooLarge" })
    expect(Protocol.MaxNestingDepth).toBe(128)
  })

  it("a nested call's answer nested too deeply reaches the tool as a typed error, not a crash", async () => {
    const tool = await activate(runner, source("python", {
      "__init__.py": [
        "@tool(guidelines='g')",
        "def main() -> str:",
        "    try:",
        "        harness.call_tool_sync('deep')",
        "    except harness.ToolCallError as error:",
        "        return '%s: %s' % (type(error).__name__, error)",
        "    return 'no error'"
      ].join("\n")
    }), { sessionId: "session-1", callTool: async () => deep(5_000) })
    expect(await tool.invoke({})).toMatch(/^SandboxError: the result of 'deep' is nested deeper than 128 levels/)
  })
})
