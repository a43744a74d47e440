/**
 * The distributed example: one namespace over NATS, in four processes besides a nats-server.
 *
 * - a coordinator and two workers, each a `jitbox` command (`packages/cli`), the workers with
 *   `--log-invocations` so they say what they ran;
 * - this process: the agent's session host (`Sessions` of @jitbox/runtime with a
 *   `RemoteCodeRunner`, so code tools run on the workers) and the agent, driven by a scripted model,
 *   with the base tool `add` living here.
 *
 * The model builds `double` in Python (it calls `add`) and `quadruple` in TypeScript (it calls
 * `double` twice), then calls `quadruple(21)`. So a call crosses processes three ways: the agent
 * calls `quadruple` on a worker, `quadruple` calls `double` on a worker (the session in this
 * process dispatches it), and `double` calls `add` back here. The coordinator admits the agent's
 * session under the host's profile. The example prints which worker ran what and the session's
 * profile totals, checks every result, stops the processes with SIGTERM (each must exit 0) and
 * exits non-zero if any check failed.
 *
 * Run: pnpm demo:distributed
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { HarnessError, tool } from "@jitbox/core"
import { createAgent, InMemoryMessageAccumulator, JitHarnessExtension, type ModelProvider, ScriptedModel } from "@jitbox/agent"
import { NatsConnection, NatsTransport } from "@jitbox/nats"
import { Ids, RemoteCodeRunner, Sessions, SnapshotStore, Subject } from "@jitbox/runtime"
import * as Context from "effect/Context"
import { NatsServer } from "@jitbox/testing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { jitbox, type JitboxProcess } from "./jitboxProcess.js"

const namespace = "demo"
const workerIds = ["worker-a", "worker-b"] as const

const add = tool({
  name: "add",
  description: "Add two integers.",
  guidelines: "Use for integer addition.",
  parameters: {
    type: "object",
    properties: { left: { type: "integer" }, right: { type: "integer" } },
    required: ["left", "right"]
  }
}, ({ left, right }: { left: number; right: number }) => left + right)

const doubleSource = `@tool(guidelines="Use to double an integer.")
def double(value: int) -> int:
    """Double an integer with the add tool."""
    return harness.call_tool_sync("add", left=value, right=value)
`

const quadrupleSource = `export const quadruple = tool({
  description: "Multiply an integer by four.",
  guidelines: "Use to quadruple an integer.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }: { value: number }) => {
  const twice = await harness.callTool("double", { value })
  return await harness.callTool("double", { value: twice })
})
`

const failures: Array<string> = []
function check(condition: unknown, what: string): void {
  if (!condition) failures.push(what)
}

/** The scripted model: builds `double`, then `quadruple`, calls `quadruple(21)` and answers with its result. */
const builder = (): ModelProvider.ModelProvider =>
  ScriptedModel.make((request) => {
    const last = request.messages[request.messages.length - 1]
    const call = (id: string, name: string, args: unknown) => ({
      role: "assistant" as const,
      content: null,
      toolCalls: [{ id, name, arguments: args }]
    })
    if (last?.role !== "tool") return call("call_double", "create_tool", { entrypoint: "double", language: "python", source: doubleSource })
    if (last.isError) return `${last.name} failed: ${last.content}`
    if (last.toolCallId === "call_double") {
      return call("call_quadruple", "create_tool", { entrypoint: "quadruple", language: "typescript", source: quadrupleSource })
    }
    if (last.toolCallId === "call_quadruple") return call("call_use", "quadruple", { value: 21 })
    return `quadruple(21) = ${last.content}`
  })

/** `worker-a ran: quadruple, double` for each worker, from its invocation lines. */
const ranBy = (worker: JitboxProcess): Array<string> =>
  worker.lines.flatMap((line) => {
    const match = /^invocation worker=(\S+) session=(\S+) tool=(\S+) call=\S+ outcome=(\S+)$/.exec(line)
    return match === null ? [] : [`${match[3]}${match[4] === "ok" ? "" : ` (${match[4]})`}`]
  })

const main = async () => {
  const server = await NatsServer.start()
  const directory = await mkdtemp(join(tmpdir(), "jitbox-distributed-"))
  const processes: Array<JitboxProcess> = []
  const scope = Effect.runSync(Scope.make())
  try {
    const profiles = join(directory, "profiles.json")
    await writeFile(profiles, JSON.stringify({
      profiles: [{ name: "standard", policy: { allowedLanguages: ["JavaScript", "Python"], maximumInvocations: 200 } }]
    }))
    const env = { JITBOX_SERVER: server.url, JITBOX_NAMESPACE: namespace }
    const coordinator = jitbox("coordinator", ["coordinator", "--profiles", profiles], env)
    const workers = workerIds.map((id) => jitbox(id, ["worker", "--id", id, "--log-invocations", "--grace-ms", "2000"], env))
    processes.push(coordinator, ...workers)
    await Promise.all(processes.map((process_) => process_.ready))
    console.log(`nats-server ${server.url}; namespace '${namespace}': coordinator, ${workerIds.join(" and ")} ready`)

    // The agent's session host, in this process: code runs on the workers, `add` runs here.
    const prefix = Subject.prefix(Ids.namespace(namespace))
    const context = await Effect.runPromise(
      Layer.buildWithScope(
        Layer.provideMerge(
          RemoteCodeRunner.layer({ prefix }),
          Layer.merge(NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer({ servers: server.url, name: "jitbox-demo-agent" }))), SnapshotStore.layerMemory())
        ),
        scope
      )
    )
    // Each session is admitted by the coordinator under the host's profile when it activates; the
    // workers run its code only because the coordinator confirms the lease it carries.
    const sessions = await Effect.runPromise(
      Sessions.make({
        prefix,
        harness: { codeExecution: "sandboxed", policy: { allowedLanguages: ["JavaScript", "Python"] } },
        admission: { profile: "standard", deploymentConsent: true },
        activation: false
      }).pipe(Effect.provide(context), Scope.extend(scope))
    )
    await sessions.get("agent").ready
    const lease = sessions.leases.get("agent")
    check(lease !== undefined, "the coordinator admits the agent's session with a lease")
    console.log(`coordinator admitted session 'agent' under profile 'standard' (lease ${lease?.leaseId()})`)

    const agent = await createAgent(builder(), {
      config: { sessionId: "agent" },
      tools: [add],
      extensions: [new InMemoryMessageAccumulator(), JitHarnessExtension.fromSessions(sessions)]
    })
    const result = await agent.run("Build quadruple from a Python double and use it on 21.")
    console.log(`agent answer: ${result.content}`)
    check(result.content === "quadruple(21) = 84", "the agent answers quadruple(21) = 84")

    const profile = await sessions.get("agent").profile()
    const stats = new Map(profile.stats.map((stat) => [stat.tool_name, stat]))
    for (const name of ["quadruple", "double", "add"]) {
      const stat = stats.get(name)
      const callers = [...new Set(profile.calls.filter((call) => call.tool_name === name).map((call) => call.caller_tool_name ?? "the agent"))]
      console.log(`profile ${name} (${stat?.origin}): ${stat?.completed_count ?? 0}/${stat?.call_count ?? 0} calls completed, called by ${callers.join(", ")}`)
    }
    check(stats.get("quadruple")?.completed_count === 1, "quadruple completed once")
    check(stats.get("double")?.completed_count === 2, "double completed twice")
    check(stats.get("add")?.completed_count === 2, "add completed twice, in this process")
    check(profile.calls.filter((call) => call.tool_name === "add").every((call) => call.caller_tool_name === "double"), "add was called by double")
    check(profile.calls.filter((call) => call.tool_name === "double").every((call) => call.caller_tool_name === "quadruple"), "double was called by quadruple")

    // The agent's session ends first: its lease goes back to the coordinator, which confirms it.
    await sessions.forget("agent")
    // Stop the jitbox processes: each drains and exits 0 on SIGTERM.
    for (const process_ of processes) process_.child.kill("SIGTERM")
    const codes = await Promise.all(processes.map((process_) => process_.exited))
    for (const worker of workers) console.log(`${worker.name} ran: ${ranBy(worker).join(", ") || "nothing"}`)
    const ran = workers.flatMap(ranBy).sort()
    check(JSON.stringify(ran) === JSON.stringify(["double", "double", "quadruple"]), "the workers ran quadruple once and double twice")
    console.log(`stopped: ${processes.map((process_, index) => `${process_.name} exit ${codes[index]}`).join(", ")}`)
    check(codes.every((code) => code === 0), "every jitbox process exits 0 on SIGTERM")
    check(processes.every((process_) => process_.lines.at(-1)?.startsWith("stopped ")), "every jitbox process says it stopped")
  } finally {
    for (const process_ of processes) if (process_.child.exitCode === null && process_.child.signalCode === null) process_.child.kill("SIGKILL")
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await server.close()
    await rm(directory, { recursive: true, force: true })
  }
  if (failures.length > 0) throw new Error(`checks failed:\n- ${failures.join("\n- ")}`)
  console.log("distributed checks passed: tools composed across processes, every process stopped cleanly")
}

main().catch((error: unknown) => {
  console.error(error instanceof HarnessError.ToolRejected ? `${error._tag}: ${error.message}` : error)
  process.exitCode = 1
})
