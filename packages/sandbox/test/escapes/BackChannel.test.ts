/**
 * The back channel (a child's nested calls and what it prints) is bounded: nested calls only from
 * an invocation in flight, a bounded number of them in all and at once, a bounded backlog of answers
 * a child does not read, and a bounded amount printed while idle. Past a bound the child is killed
 * and its invocation fails with a typed error; the next call gets a fresh child.
 */
import { afterAll, describe, expect, it } from "vitest"
import { type SandboxConfig, SandboxRunner } from "../../src/index.js"
import { activate, eventually, rejection, source, testOptions } from "../helpers.js"

const runners: Array<SandboxRunner.SandboxRunner> = []
const makeRunner = (options: SandboxConfig.SandboxOptions = {}) => {
  const runner = SandboxRunner.make({ ...testOptions, ...options })
  runners.push(runner)
  return runner
}
afterAll(() => Promise.all(runners.map((runner) => runner.close())))

/** A Python tool that counts its calls in module state, so a fresh child answers 1 again. */
const counting = (afterReturn: string) =>
  source("python", {
    "__init__.py": [
      "import os, threading, time",
      "calls = 0",
      "def later():",
      "    time.sleep(0.2)",
      ...afterReturn.split("\n").map((line) => `    ${line}`),
      "@tool(guidelines='g')",
      "def main() -> int:",
      "    global calls",
      "    calls += 1",
      "    if calls == 1:",
      "        threading.Thread(target=later, daemon=True).start()",
      "    return calls"
    ].join("\n")
  })

describe("the back channel", () => {
  it("a child that sends nested calls and never reads their answers is killed past the unread bound (LimitExceeded)", async () => {
    // the timeout and the CPU limit are far off: on a loaded machine handling 400 calls must not
    // outlast them while the child waits
    const runner = makeRunner({ shortTimeoutSeconds: 90, limits: { ...testOptions.limits, cpuSeconds: 120 } })
    const answer = "x".repeat(200_000)
    const heapBefore = process.memoryUsage().heapUsed
    const tool = await activate(runner, source("javascript", {
      "index.js": [
        `import * as fs from "node:fs"`,
        // stdout is a non-blocking pipe: retry a write the full pipe refuses
        `const put = (line) => { for (;;) { try { return fs.writeSync(1, line) } catch (e) { if (e.code !== "EAGAIN") throw e } } }`,
        `export const main = tool({ description: "d" }, () => {`,
        // the first invocation of a fresh child is "1"; a synchronous loop never lets the child read
        `  for (let i = 0; i < 400; i++) put('{"_tag":"CallTool","requestId":"r' + i + '","invocationId":"1","name":"big","args":{}}\\n')`,
        // blocked without spinning (a spinning child takes a whole CPU from the host handling its calls)
        `  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 120000)`,
        `  return "finished"`,
        `})`
      ].join("\n")
    }), { sessionId: "session-1", callTool: async () => answer })
    const error = await rejection(tool.invoke({}))
    expect(error).toMatchObject({ _tag: "SandboxError", reason: "LimitExceeded" })
    expect(error.message).toMatch(/bytes of the host's messages unread/)
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(200 * 1024 * 1024)
  }, 120_000)

  it("a nested call sent while the child is idle kills the child; the next call gets a fresh one", async () => {
    const runner = makeRunner()
    const seen: Array<string> = []
    const tool = await activate(
      runner,
      counting(`os.write(1, b'{"_tag":"CallTool","requestId":"late","invocationId":"1","name":"after","args":{}}\\n')`),
      { sessionId: "session-1", callTool: async (_parent, name) => seen.push(name) }
    )
    expect(await tool.invoke({})).toBe(1)
    const first = runner.processes()
    await eventually(() => runner.processes().every((pid) => !first.includes(pid)), "the child that called while idle to be killed")
    expect(await tool.invoke({})).toBe(1)
    expect(seen).toEqual([])
  })

  it("printing while idle counts against maxLogBytes: past it the child is killed", async () => {
    const runner = makeRunner({ maxLogBytes: 64 * 1024 })
    const tool = await activate(runner, counting(`for _ in range(100000):\n    print('x' * 1000)`))
    expect(await tool.invoke({})).toBe(1)
    const first = runner.processes()
    await eventually(() => runner.processes().every((pid) => !first.includes(pid)), "the child printing while idle to be killed")
    expect(await tool.invoke({})).toBe(1)
  })

  it("nested calls are bounded per invocation in flight (refused to the tool) and in number (the child is killed)", async () => {
    const runner = makeRunner({ maxNestedCallsInFlight: 2, maxNestedCalls: 5 })
    const slow = { sessionId: "session-1", callTool: () => new Promise((resolve) => setTimeout(() => resolve(1), 300)) }
    const tool = await activate(runner, source("javascript", {
      "index.js": [
        `export const main = tool({ description: "d" }, async ({ together, after }) => {`,
        `  const outcomes = await Promise.all(Array.from({ length: together }, () => harness.callTool("n", {}).then(() => "ok", (e) => e.name + ": " + e.message)))`,
        `  for (let i = 0; i < after; i++) await harness.callTool("n", {})`,
        `  return outcomes`,
        `})`
      ].join("\n")
    }), slow)
    expect(await tool.invoke({ together: 3, after: 0 })).toEqual(["ok", "ok", "SandboxError: more than 2 nested calls of one invocation at once"])
    const error = await rejection(tool.invoke({ together: 1, after: 5 }))
    expect(error).toMatchObject({ _tag: "SandboxError", reason: "LimitExceeded" })
    expect(error.message).toMatch(/made more than 5 nested calls/)
  })
})
