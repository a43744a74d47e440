/**
 * The direct-call floor of a code tool: its package, as the snapshot holds it, activated on a code
 * runner in this process and invoked through core's `CodeRunner` seam with no harness in between.
 * No lookup, validation, budget, lease, profiling record, event, transport or worker: what is left
 * is the runner itself (the trusted in-process runner for a plain harness, a sandbox runner's warm
 * child for a runtime whose tools run in the sandbox). A nested `harness.callTool` of a composing
 * tool goes straight to the named tool of the same snapshot on the same runner, the same way.
 *
 * @since 0.1.0
 */
import { CodePackage, type CodeRunner, HarnessError, type JitHarnessSnapshot } from "@jitbox/core"

/** @since 0.1.0 @category models */
export interface DirectCall {
  /** Invokes the snapshot's tool `name` with `args` on the runner. */
  readonly call: (name: string, args: unknown) => Promise<unknown>
  /** Releases every activation made. */
  readonly release: () => Promise<void>
}

let activations = 0

/**
 * Activates, on first use, each tool of `snapshot` that is called.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (snapshot: JitHarnessSnapshot.JitHarnessSnapshot, runner: CodeRunner.CodeRunnerShape): DirectCall => {
  const sessionId = `bench_direct_${process.pid}`
  const records = new Map(snapshot.tools.map((record) => [record.name, record]))
  const activated = new Map<string, Promise<string>>()
  let calls = 0

  const host: CodeRunner.CallHost = {
    sessionId,
    callTool: (parentCallId, name, args) => invoke(name, args, parentCallId, depthOf.get(parentCallId) ?? 1)
  }
  /** Depth of each live call, so a nested call's context says how deep it is. */
  const depthOf = new Map<string, number>()

  const activation = (name: string): Promise<string> => {
    const existing = activated.get(name)
    if (existing !== undefined) return existing
    const record = records.get(name)
    if (record === undefined) return Promise.reject(new HarnessError.ToolNotFound({ name }))
    const entryFile = CodePackage.entryFile(record.language)
    const files = { ...record.files, [entryFile]: record.source }
    const activationId = `bench_direct_${process.pid}_${++activations}`
    const started = runner.activate({
      sessionId,
      activationId,
      toolName: record.name,
      versionId: CodePackage.versionId({ kind: "code", language: record.language, entrypoint: record.entrypoint, files }),
      language: record.language,
      entrypoint: record.entrypoint,
      entryFile,
      files
    }, host).then(() => activationId)
    activated.set(name, started)
    return started
  }

  const invoke = async (name: string, args: unknown, parentCallId: string | null, depth: number): Promise<unknown> => {
    const activationId = await activation(name)
    const callId = `c${++calls}`
    depthOf.set(callId, depth + (parentCallId === null ? 0 : 1))
    try {
      return await runner.invoke({
        activationId,
        toolName: name,
        args,
        context: { sessionId, callId, parentCallId, depth: depthOf.get(callId)!, withinChange: false, deadline: null }
      }, undefined)
    } finally {
      depthOf.delete(callId)
    }
  }

  return {
    call: (name, args) => invoke(name, args, null, 1),
    release: async () => {
      const ids = await Promise.allSettled(activated.values())
      await Promise.all(ids.flatMap((id) => id.status === "fulfilled" ? [runner.release(id.value)] : []))
    }
  }
}
