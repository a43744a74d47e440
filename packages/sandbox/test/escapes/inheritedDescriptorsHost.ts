/**
 * A host process for InheritedDescriptors.test.ts, which starts it with extra descriptors open.
 * Its one argument is JSON: `{ held, runs: [{ options, tools: [{ name, source }] }] }`. It reports
 * whether it holds each descriptor of `held` without close-on-exec (what a child would inherit),
 * then runs every tool once in a SandboxRunner made with its run's options, and prints
 * `{ held, results }` as JSON, `results` by run index and tool name. Standalone: no vitest here.
 */
import type { CodeRunner } from "@jitbox/core"
import * as fs from "node:fs"
import { type SandboxConfig, SandboxRunner } from "../../src/index.js"

interface Input {
  readonly held: ReadonlyArray<number>
  readonly runs: ReadonlyArray<{
    readonly options: SandboxConfig.SandboxOptions
    readonly tools: ReadonlyArray<{ readonly name: string; readonly source: CodeRunner.CodeSource }>
  }>
}

const input = JSON.parse(process.argv[2]!) as Input

const withoutCloseOnExec = (fd: number): boolean => {
  try {
    const flags = /^flags:\s*([0-7]+)/m.exec(fs.readFileSync(`/proc/self/fdinfo/${fd}`, "latin1"))?.[1]
    return flags !== undefined && (parseInt(flags, 8) & 0o2000000) === 0
  } catch {
    return false
  }
}
const held = Object.fromEntries(input.held.map((fd) => [fd, withoutCloseOnExec(fd)]))

const callHost: CodeRunner.CallHost = {
  sessionId: "session-1",
  callTool: () => Promise.reject(new Error("no nested calls here"))
}

const results: Array<Record<string, unknown>> = []
for (const run of input.runs) {
  const runner = SandboxRunner.make(run.options)
  const byTool: Record<string, unknown> = {}
  try {
    for (const { name, source } of run.tools) {
      await runner.activate(source, callHost)
      byTool[name] = await runner.invoke({
        activationId: source.activationId,
        toolName: source.toolName,
        args: {},
        context: {
          sessionId: callHost.sessionId,
          callId: `${source.activationId}-call`,
          parentCallId: null,
          depth: 1,
          withinChange: false,
          deadline: null
        }
      }, undefined)
      await runner.release(source.activationId)
    }
  } finally {
    await runner.close()
  }
  results.push(byTool)
}
process.stdout.write(JSON.stringify({ held, results }))
