/**
 * A host process for EventLoop.test.ts: nothing but its sandboxed calls keeps it alive. It makes
 * two calls to a tool that answers after a while (the second in the child the first warmed), prints
 * each answer, and does not close the runner: it must stay alive while a call is in flight and exit
 * on its own once its children are idle.
 */
import { SandboxRunner } from "@jitbox/sandbox"

const runner = SandboxRunner.make({ maximumRuntimeEnvironments: 1 })
const sessionId = "event-loop"
await runner.activate({
  sessionId,
  activationId: "a1",
  toolName: "later",
  versionId: "v1",
  language: "javascript",
  entrypoint: "main",
  entryFile: "index.js",
  files: { "index.js": `export const main = tool({ description: "d" }, (args) => new Promise((resolve) => setTimeout(() => resolve(args.n), 300)))\n` }
}, { sessionId, callTool: () => Promise.reject(new Error("no nested calls here")) })

const call = (n: number) =>
  runner.invoke({
    activationId: "a1",
    toolName: "later",
    args: { n },
    context: { sessionId, callId: `c${n}`, parentCallId: null, depth: 1, withinChange: false, deadline: null }
  }, undefined)

process.stdout.write(`${await call(1)}\n`)
process.stdout.write(`${await call(2)}\n`)
