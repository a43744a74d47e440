/**
 * A host process for UnhandledRejections.test.ts, run with `--unhandled-rejections=strict`: it
 * runs hostile children through a SandboxRunner and prints one JSON line of what each call ended
 * with. Any promise in the sandbox that rejected unhandled would end this process first.
 */
import type { CodeRunner } from "@jitbox/core"
import { SandboxRunner } from "@jitbox/sandbox"

const runner = SandboxRunner.make({ shortTimeoutSeconds: 10, activationTimeoutSeconds: 20, maximumRuntimeEnvironments: 2 })
let ids = 0
const tools = new Map<string, string>()

const host: CodeRunner.CallHost = {
  sessionId: "hostile",
  callTool: (parentCallId, name, args) => {
    if (name === "throws") throw new Error("a host that throws synchronously")
    if (name === "deep") {
      let value: unknown = []
      for (let i = 0; i < 10_000; i++) value = [value]
      return Promise.resolve(value)
    }
    return call(name, args, parentCallId)
  }
}

const call = (name: string, args: unknown, parentCallId: string | null = null): Promise<unknown> =>
  runner.invoke({
    activationId: tools.get(name)!,
    toolName: name,
    args,
    context: { sessionId: "hostile", callId: `c${++ids}`, parentCallId, depth: parentCallId === null ? 1 : 2, withinChange: false, deadline: null }
  }, undefined)

const add = async (name: string, language: CodeRunner.CodeSource["language"], files: Record<string, string>, entryFile: string) => {
  const activationId = `a${++ids}`
  await runner.activate({ sessionId: "hostile", activationId, toolName: name, versionId: `v${ids}`, language, entrypoint: "main", entryFile, files }, host)
  tools.set(name, activationId)
}

const outcome = (promise: Promise<unknown>): Promise<string> =>
  promise.then(
    (value) => `value ${JSON.stringify(value).slice(0, 60)}`,
    (error: { _tag?: string; reason?: string; name?: string }) => `${error._tag ?? error.name}${error.reason !== undefined ? ` ${error.reason}` : ""}`
  )

await add("brackets", "bash", { "main.sh": `printf '%.0s[' {1..5000}; printf '%.0s]' {1..5000}; echo\n` }, "main.sh")
await add("caller", "python", {
  "__init__.py": "@tool(guidelines='g')\ndef main(name: str) -> object:\n    return harness.call_tool_sync(name)\n"
}, "__init__.py")
await add("liar", "javascript", {
  "index.js": [
    `import * as fs from "node:fs"`,
    `export const main = tool({ description: "d" }, async ({ line, then }) => {`,
    `  if (line) fs.writeSync(1, line + "\\n")`,
    `  if (then === "exit") process.exit(3)`,
    `  if (then === "call") return await harness.callTool("deep", {})`,
    `  return new Promise(() => {})`,
    `})`
  ].join("\n")
}, "index.js")

const results: Record<string, string> = {}
results.nestedBrackets = await outcome(call("caller", { name: "brackets" }))
results.nestedDeepAnswer = await outcome(call("caller", { name: "deep" }))
results.nestedHostThrows = await outcome(call("caller", { name: "throws" }))
results.deepResult = await outcome(call("liar", { line: `{"_tag":"Result","invocationId":"1","value":${"[".repeat(20_000)}${"]".repeat(20_000)}}` }))
results.forgedId = await outcome(call("liar", { line: `{"_tag":"CallTool","requestId":"f","invocationId":"99","name":"deep","args":{}}` }))
results.garbage = await outcome(call("liar", { line: "{not json" }))
results.exitDuringNestedCall = await outcome(call("liar", { line: `{"_tag":"CallTool","requestId":"g","invocationId":"1","name":"deep","args":{}}`, then: "exit" }))
results.deepArguments = await outcome(call("liar", { nested: JSON.parse("[".repeat(5_000) + "]".repeat(5_000)) }))
await runner.close()
process.stdout.write(JSON.stringify(results) + "\n")
