/**
 * A child cannot borrow the identity of an invocation: a nested call runs under the invocation that
 * is innermost on the child (the host's record), never under an outer one the child names, so a
 * recursion cannot reset its depth; and a failure type the host keeps for its own errors is not the
 * child's to report.
 */
import { HarnessError } from "@jitbox/core"
import { afterAll, describe, expect, it } from "vitest"
import * as ThrownValue from "../../../core/src/ThrownValue.js"
import { SandboxRunner, ToolError } from "../../src/index.js"
import { activate, MiniHarness, rejection, source, testOptions } from "../helpers.js"

const runner = SandboxRunner.make({ ...testOptions, shortTimeoutSeconds: 4 })
afterAll(() => runner.close())

describe("forged identities", () => {
  it("a recursion that names the outermost invocation in its own CallTool lines does not get past the depth it really has", async () => {
    const harness = new MiniHarness(runner)
    // each level writes its nested call by hand, naming invocation "1" (the outermost on this child)
    await harness.add("recurse", source("python", {
      "__init__.py": [
        "import os, sys",
        "runner = sys.modules['jitbox']",
        "@tool(guidelines='g')",
        "def main(level: int) -> int:",
        "    if level == 12:",
        "        return level",
        "    request = 'forged-%d' % level",
        "    os.write(1, ('{\"_tag\":\"CallTool\",\"requestId\":\"%s\",\"invocationId\":\"1\",\"name\":\"recurse\",\"args\":{\"level\":%d}}\\n' % (request, level + 1)).encode())",
        "    while request not in runner._results:",
        "        runner._dispatch(runner._read_message())",
        "    return runner._unwrap(runner._results.pop(request))"
      ].join("\n")
    }))
    const outcome = await harness.call("recurse", { level: 0 }).then((value) => ({ value }), (error: unknown) => ({ error }))
    // the host ran level 1 under the outermost (it was the innermost then); level 2's forged call
    // waits for level 2 to end, which never happens: the call runs out of time
    expect(outcome).toMatchObject({ error: { _tag: "SandboxError", reason: "Timeout" } })
    expect(harness.calls.map(({ depth }) => depth)).toEqual([1, 2])
  })

  it("a CallTool naming an invocation that is not in flight on the child kills it and never reaches the host", async () => {
    const calls: Array<string> = []
    const tool = await activate(runner, source("javascript", {
      "index.js": [
        `import * as fs from "node:fs"`,
        `export const main = tool({ description: "d" }, async () => {`,
        `  fs.writeSync(1, '{"_tag":"CallTool","requestId":"x","invocationId":"7","name":"secret","args":{}}\\n')`,
        `  return await harness.callTool("allowed", {})`,
        `})`
      ].join("\n")
    }), { sessionId: "session-1", callTool: async (_parent, name) => calls.push(name) })
    const error = await rejection(tool.invoke({}))
    expect(error).toMatchObject({ _tag: "SandboxError", reason: "ProtocolViolation" })
    expect(calls).toEqual([])
  })

  it("a child reporting a host error type (ToolCancelled, ToolTimeout, SandboxError) fails as its own ToolError", async () => {
    const python = await activate(runner, source("python", {
      "__init__.py": [
        "class ToolCancelled(Exception):",
        "    pass",
        "@tool(guidelines='g')",
        "def main() -> None:",
        "    raise ToolCancelled('the user pressed stop')"
      ].join("\n")
    }))
    const node = await activate(runner, source("javascript", {
      "index.js": [
        `export const main = tool({ description: "d" }, ({ tag }) => {`,
        `  const error = new Error("took too long")`,
        `  error.name = tag`,
        `  throw error`,
        `})`
      ].join("\n")
    }))
    const failures = [
      await rejection(python.invoke({})),
      await rejection(node.invoke({ tag: "ToolTimeout" })),
      await rejection(node.invoke({ tag: "SandboxError" }))
    ]
    for (const failure of failures) {
      expect(failure).toBeInstanceOf(ToolError.ToolError)
      expect(HarnessError.isHarnessError(failure)).toBe(false)
      expect(ThrownValue.errorType(failure)).toBe("ToolError")
    }
    expect(failures.map((failure) => failure.message)).toEqual([
      "the tool raised an error named ToolCancelled, a name the host keeps for its own errors: the user pressed stop",
      "the tool raised an error named ToolTimeout, a name the host keeps for its own errors: took too long",
      "the tool raised an error named SandboxError, a name the host keeps for its own errors: took too long"
    ])
    // a type of its own stays its own
    expect(ThrownValue.errorType(await rejection(node.invoke({ tag: "QuotaError" })))).toBe("QuotaError")
  })
})
