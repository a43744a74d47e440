import type { CodeRunner } from "@jitbox/core"
import type { SandboxRunner } from "../src/index.js"
import { expect } from "vitest"

let versions = 0

/** A code source with a fresh version id. */
export const source = (
  language: CodeRunner.CodeSource["language"],
  files: Record<string, string>,
  options: { readonly entrypoint?: string; readonly entryFile?: string; readonly toolName?: string } = {}
): CodeRunner.CodeSource => ({
  toolName: options.toolName ?? "tool_under_test",
  versionId: `v${++versions}`,
  language,
  entrypoint: options.entrypoint ?? "main",
  entryFile: options.entryFile ??
    (language === "python" ? "__init__.py" : language === "bash" ? "main.sh" : language === "typescript" ? "index.ts" : "index.js"),
  files
})

export interface RecordedCall {
  readonly parentCallId: string
  readonly depth: number
  readonly name: string
  readonly args: unknown
}

/** A real invocation context: `callTool` records the call and answers with `answer`. */
export const context = (
  options: {
    readonly callId?: string
    readonly depth?: number
    readonly signal?: AbortSignal
    readonly calls?: Array<RecordedCall>
    readonly answer?: (name: string, args: unknown) => unknown
  } = {}
): CodeRunner.InvocationContext => {
  const callId = options.callId ?? "call-1"
  const depth = options.depth ?? 0
  return {
    callId,
    toolName: "tool_under_test",
    depth,
    signal: options.signal,
    callTool: async (name, args) => {
      options.calls?.push({ parentCallId: callId, depth, name, args })
      return options.answer !== undefined ? options.answer(name, args) : { echoed: name, args }
    }
  }
}

/** Rejection of `promise`, failing the test if it resolves. */
export const rejection = async (promise: Promise<unknown>): Promise<any> => {
  try {
    const value = await promise
    expect.fail(`expected a rejection, got ${JSON.stringify(value)}`)
  } catch (error) {
    return error
  }
}

/** Waits until the runner has no process left (pid namespaces die a little after bwrap). */
export const settleProcesses = async (runner: SandboxRunner.SandboxRunner, expected = 0, timeoutMs = 3_000) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (runner.processes().length <= expected) return runner.processes().length
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return runner.processes().length
}

/** Small limits and short timeouts: the suite runs on 2 cores. */
export const testOptions = {
  shortTimeoutSeconds: 20,
  activationTimeoutSeconds: 20,
  limits: { memoryMiB: 256, cpuSeconds: 20, openFiles: 64, processes: 256, fileSizeMiB: 8, tmpfsMiB: 16 }
} as const
