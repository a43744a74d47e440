import type { CodeRunner } from "@jitbox/core"
import * as fs from "node:fs"
import type { SandboxRunner } from "../src/index.js"
import { expect } from "vitest"

let versions = 0
let activations = 0
let calls = 0

export const SessionId = "session-1"

/** A code source with a fresh version id and a fresh activation id. */
export const source = (
  language: CodeRunner.CodeSource["language"],
  files: Record<string, string>,
  options: { readonly entrypoint?: string; readonly entryFile?: string; readonly toolName?: string } = {}
): CodeRunner.CodeSource => ({
  sessionId: SessionId,
  activationId: `activation-${++activations}`,
  toolName: options.toolName ?? "tool_under_test",
  versionId: `v${++versions}`,
  language,
  entrypoint: options.entrypoint ?? "main",
  entryFile: options.entryFile ??
    (language === "python"
      ? "__init__.py"
      : language === "bash"
      ? "main.sh"
      : language === "csharp"
      ? "Tool.cs"
      : language === "typescript"
      ? "index.ts"
      : "index.js"),
  files
})

export interface RecordedCall {
  readonly parentCallId: string
  readonly name: string
  readonly args: unknown
}

/** A call host: records each nested call by the parent call id the runner named, and answers with `answer` (default: an echo). */
export const host = (
  options: {
    readonly calls?: Array<RecordedCall>
    readonly answer?: (name: string, args: any, parentCallId: string) => unknown
  } = {}
): CodeRunner.CallHost => ({
  sessionId: SessionId,
  callTool: async (parentCallId, name, args) => {
    options.calls?.push({ parentCallId, name, args })
    return options.answer !== undefined ? options.answer(name, args, parentCallId) : { echoed: name, args }
  }
})

export interface CallOptions {
  readonly callId?: string
  readonly parentCallId?: string | null
  readonly depth?: number
  /** Epoch ms. */
  readonly deadline?: number | null
  readonly signal?: AbortSignal
  readonly toolName?: string
}

/** An invocation of `activationId` with a fresh call id unless one is given. */
export const invocation = (activationId: string, args: unknown, options: CallOptions = {}): CodeRunner.Invocation => ({
  activationId,
  toolName: options.toolName ?? "tool_under_test",
  args,
  context: {
    sessionId: SessionId,
    callId: options.callId ?? `call-${++calls}`,
    parentCallId: options.parentCallId ?? null,
    depth: options.depth ?? 1,
    withinChange: false,
    deadline: options.deadline ?? null
  }
})

/** An activation, as tests use it. */
export interface Activated {
  readonly activationId: string
  readonly metadata: CodeRunner.CodeToolMetadata
  readonly invoke: (args: unknown, options?: CallOptions) => Promise<unknown>
  readonly dispose: () => Promise<void>
}

/** Activates `code` on `runner` with `callHost`, through the runner's own activate/invoke/release. */
export const activate = async (
  runner: SandboxRunner.SandboxRunner,
  code: CodeRunner.CodeSource,
  callHost: CodeRunner.CallHost = host()
): Promise<Activated> => {
  const metadata = await runner.activate(code, callHost)
  return {
    activationId: code.activationId,
    metadata,
    invoke: (args, options = {}) => runner.invoke(invocation(code.activationId, args, options), options.signal),
    dispose: () => runner.release(code.activationId)
  }
}

/**
 * A harness in miniature: tools by name, a table of the calls it runs, and nested calls resolved
 * by the parent's call id, their depth read from that table, as core's harness does.
 */
export class MiniHarness {
  readonly host: CodeRunner.CallHost
  /** Every call made, in order. */
  readonly calls: Array<{ readonly callId: string; readonly parentCallId: string | null; readonly depth: number; readonly name: string }> = []
  private readonly tools = new Map<string, string>()
  private readonly live = new Map<string, number>()
  private count = 0

  constructor(
    readonly runner: SandboxRunner.SandboxRunner,
    readonly bases: Readonly<Record<string, (args: any) => unknown>> = {}
  ) {
    this.host = {
      sessionId: SessionId,
      callTool: (parentCallId, name, args) => {
        const depth = this.live.get(parentCallId)
        if (depth === undefined) return Promise.reject(new Error(`call ${parentCallId} is not running`))
        return this.call(name, args, { parentCallId, depth: depth + 1 })
      }
    }
  }

  async add(name: string, code: CodeRunner.CodeSource): Promise<void> {
    await this.runner.activate({ ...code, toolName: name }, this.host)
    this.tools.set(name, code.activationId)
  }

  async call(name: string, args: unknown, options: CallOptions = {}): Promise<unknown> {
    const callId = options.callId ?? `${name}-${++this.count}`
    const depth = options.depth ?? 1
    this.calls.push({ callId, parentCallId: options.parentCallId ?? null, depth, name })
    const base = this.bases[name]
    if (base !== undefined) return base(args)
    const activationId = this.tools.get(name)
    if (activationId === undefined) throw new Error(`no tool named '${name}'`)
    this.live.set(callId, depth)
    try {
      return await this.runner.invoke(invocation(activationId, args, { ...options, callId, depth, toolName: name }), options.signal)
    } finally {
      this.live.delete(callId)
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

/** Waits until `condition` holds, polling; fails the test after `timeoutMs`. Not a timing assertion: only a bound on waiting. */
export const eventually = async (condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) expect.fail(`still waiting for ${what} after ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 10))
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

/** The marker value (`JITBOX_SANDBOX_CHILD`) every process of one child carries; a tool reads it from its environment. */
export const markerOf = (pid: number): string | undefined => {
  try {
    const environ = fs.readFileSync(`/proc/${pid}/environ`, "utf8")
    return /(?:^|\0)JITBOX_SANDBOX_CHILD=([^\0]*)/.exec(environ)?.[1]
  } catch {
    return undefined
  }
}

/** The runner's live processes, by the child they belong to. */
export const processesByChild = (runner: SandboxRunner.SandboxRunner): Map<string, Array<number>> => {
  const byChild = new Map<string, Array<number>>()
  for (const pid of runner.processes()) {
    const marker = markerOf(pid)
    if (marker === undefined) continue
    byChild.set(marker, [...(byChild.get(marker) ?? []), pid])
  }
  return byChild
}

/** Small limits and short timeouts: the suite runs on 2 cores. */
export const testOptions = {
  shortTimeoutSeconds: 20,
  activationTimeoutSeconds: 20,
  limits: { memoryMiB: 256, cpuSeconds: 20, openFiles: 64, processes: 256, fileSizeMiB: 8, tmpfsMiB: 16 }
} as const
