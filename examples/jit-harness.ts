/**
 * The offline example (EX-01..10, D-25): a scripted model builds `twice`, calls it on 21, checks
 * its own profiling, and a new session reuses the saved toolbox. Then `exerciseLifecycle` checks
 * the invariants the reference names. Embedded transport, a temporary directory, no network.
 * Prints exactly four lines, or fails with a non-zero exit code.
 *
 * Run: pnpm demo
 */
import { readFile, rm, mkdtemp } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { HarnessError, JitHarness, JitHarnessSnapshot, tool } from "@jitbox/core"
import {
  createAgent,
  InMemoryMessageAccumulator,
  JitHarnessExtension,
  type ModelProvider,
  ScriptedModel
} from "@jitbox/agent"
import { Embedded } from "@jitbox/runtime"

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

const twiceSource = `export const twice = tool({
  description: "Add the same integer twice.",
  guidelines: "Use to add an integer to itself.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }) => await harness.callTool("add", { left: value, right: value }))
`

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new Error(`check failed: ${what}`)
}

/**
 * The scripted model: it reads the conversation since the last user message and decides the next
 * step the way a model would, through ordinary tool calls.
 */
const BuilderModel = (): ModelProvider.ModelProvider =>
  ScriptedModel.make((request) => {
    const lastUser = request.messages.map((m) => m.role).lastIndexOf("user")
    const prompt = request.messages[lastUser]
    const since = request.messages.slice(lastUser + 1)
    const results = since.filter((m): m is ModelProvider.ToolMessage => m.role === "tool")
    const last = results[results.length - 1]
    const call = (name: string, args: unknown) => ({
      role: "assistant" as const,
      content: null,
      toolCalls: [{ id: `call_${name}_${since.length}`, name, arguments: args }]
    })
    const offered = new Set(request.tools.map((t) => t.name))
    if (last === undefined) {
      if (prompt?.role === "user" && prompt.content === "Build and use twice." && !offered.has("twice")) {
        return call("create_tool", { entrypoint: "twice", source: twiceSource })
      }
      return call("twice", { value: 21 })
    }
    if (last.isError) return `tool ${last.name} failed: ${last.content}`
    if (last.name === "create_tool") return call("twice", { value: 21 })
    if (last.name === "twice") {
      return offered.has("inspect_tool_stats") && prompt?.role === "user" && prompt.content === "Build and use twice."
        ? call("inspect_tool_stats", { name: "twice" })
        : last.content
    }
    const answer = results.find((m) => m.name === "twice")
    return answer?.content ?? "no answer"
  })

const failsWith = async (promise: Promise<unknown>, tag: string): Promise<any> => {
  try {
    await promise
  } catch (error) {
    check((error as { _tag?: string })._tag === tag, `expected ${tag}, got ${String(error)}`)
    return error
  }
  throw new Error(`check failed: expected ${tag}, but the call succeeded`)
}

const exerciseLifecycle = async (path: string): Promise<void> => {
  const harness = new JitHarness({ sessionId: "pipeline", tools: [add] })

  // A synchronous → asynchronous → base-tool pipeline of three code tools.
  await harness.createTool({
    entrypoint: "parse_number",
    source: `export const parse_number = tool({
  description: "Parse an integer from text; null when the text holds none.",
  guidelines: "Use before arithmetic on user text.",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }
}, ({ text }) => (text.trim() === "" ? null : Number.parseInt(text, 10)))`
  })
  await harness.createTool({ entrypoint: "twice", source: twiceSource })
  await harness.createTool({
    entrypoint: "pipeline",
    source: `import { describe } from "./steps/describe"
export const pipeline = tool({
  description: "Parse a number from text and double it.",
  guidelines: "Use to double a number written as text.",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }
}, async ({ text }) => {
  const value = await harness.callTool("parse_number", { text })
  return value === null ? describe(null) : describe(await harness.callTool("twice", { value }))
})`,
    files: { "steps/describe.ts": `export const describe = (n: number | null): string => n === null ? "empty" : \`doubled: \${n}\`` }
  })
  check((await harness.callTool("pipeline", { text: " 21 " })) === "doubled: 42", "pipeline doubles 21")

  // Empty inputs: an empty string, and an empty argument object for a tool without parameters.
  check((await harness.callTool("pipeline", { text: "" })) === "empty", "pipeline on an empty string")
  await harness.createTool({
    entrypoint: "ping",
    source: `export const ping = tool({ description: "Answer pong.", guidelines: "Use to check liveness." }, () => "pong")`
  })
  check((await harness.callTool("ping", {})) === "pong", "a tool without parameters takes {}")

  // An update that does not compile leaves the previous version answering.
  const failed = await failsWith(harness.updateTool({ name: "twice", source: "export const twice = tool({" }), "PackageError")
  check(failed.reason === "CompileError", "the failed update is a compile error")
  check((await harness.callTool("twice", { value: 5 })) === 10, "the old twice still answers")

  // Unloading a dependency makes its caller fail explicitly; loading it restores the caller.
  await harness.unloadTool("twice")
  const rejected = await failsWith(harness.callTool("pipeline", { text: "4" }), "ToolRejected")
  check(rejected.reason === "Unloaded" && String(rejected.message).includes("twice"), "the rejection names twice")
  await harness.loadTool("twice")
  check((await harness.callTool("pipeline", { text: "4" })) === "doubled: 8", "loading twice restores the pipeline")

  // A text workflow: saved, unloaded, restored and read page by page.
  const workflow = `# Double a number\n\n${"1. Parse the number with parse_number; 2. double it with twice. 🧮\n".repeat(60)}`
  await harness.createTool({ kind: "text", name: "double_workflow", description: "How to double a number.", source: workflow })
  await harness.unloadTool("double_workflow")
  await harness.save(path)
  const fileBefore = await readFile(path, "utf8")
  const snapshot = await JitHarnessSnapshot.load(path)
  check(snapshot.format_version === 2 && snapshot.unloaded_tools.includes("double_workflow"), "the snapshot keeps the package and the unload mark")

  // Two sessions from one snapshot diverge without touching each other or the file.
  const sessions = new JitHarnessExtension(snapshot)
  const first = sessions.getHarness("first")
  const second = sessions.getHarness("second")
  await first.ready
  await second.ready
  first.bindBaseTools([add])
  second.bindBaseTools([add])
  await first.updateTool({ name: "twice", source: twiceSource.replace("left: value, right: value", "left: value, right: value + 1") })
  check((await first.callTool("twice", { value: 21 })) === 43, "the first session uses its update")
  check((await second.callTool("twice", { value: 21 })) === 42, "the second session is untouched")
  check((await readFile(path, "utf8")) === fileBefore, "the snapshot file is untouched")

  await failsWith(second.callTool("double_workflow", {}), "ToolRejected")
  await second.loadTool("double_workflow")
  let text = ""
  let offset: number | null = 0
  let pages = 0
  const ids = new Set<string>()
  while (offset !== null) {
    const page = await second.callTool("double_workflow", { offset, max_chars: 700 }) as {
      content: string
      next_offset: number | null
      content_id: string
    }
    text += page.content
    ids.add(page.content_id)
    offset = page.next_offset
    pages++
  }
  check(text === workflow && pages > 1 && ids.size === 1, "the workflow reads back exactly, page by page")

  // Profiling totals and the nested add record; the dependency error is kept.
  const stats = harness.profileStats("twice")
  check(stats.completed_count === 3 && stats.rejected_count === 1, "twice: three completed calls, one rejected while unloaded")
  check(harness.profileStats("pipeline").rejected_count === 0 && harness.profileStats("pipeline").failed_count === 1, "the pipeline failed once")
  const nested = harness.profile("add").calls
  check(nested.length === 3 && nested.every((call) => call.caller_tool_name === "twice"), "every add call was composed by twice")
  const errors = harness.toolErrors("twice")
  check(
    errors.errors.some((e) => e.error_type === "ToolRejected" && e.message?.includes("unloaded") && e.caller_tool_name === "pipeline"),
    "the unloaded-dependency error is retained with its caller"
  )
  await Promise.all([harness.release(), sessions.forgetSession("first"), sessions.forgetSession("second")])
}

const main = async () => {
  const runtime = await Embedded.start({ namespace: "example", harness: { policy: { allowedLanguages: ["JavaScript"] } } })
  try {
    await runOn(runtime)
  } finally {
    await runtime.close()
  }
  console.log("JIT tool created and reused: 42")
  console.log("JIT invariants checked: composition, failed update, unload, snapshot isolation")
  console.log("JIT profiling checked: per-tool totals and nested call records")
  console.log("JIT diagnostics checked: recent dependency error retained")
}

const runOn = async (runtime: Embedded.EmbeddedRuntime) => {
  const jit = JitHarnessExtension.fromSessions(runtime.sessions)
  const builder = runtime.sessions.get("builder")
  const client = await createAgent(BuilderModel(), {
    config: { sessionId: "builder" },
    tools: [add],
    extensions: [new InMemoryMessageAccumulator(), jit]
  })
  check((await client.run("Build and use twice.")).content === "42", "the first run answers 42")
  check(runtime.workers[0]!.fetches() === 1, "twice ran on the embedded worker")
  const measurements = await builder.profile()
  check(measurements.stats.find((stat) => stat.tool_name === "twice")?.completed_count === 1, "twice completed once")
  check(measurements.calls.find((call) => call.tool_name === "add")?.caller_tool_name === "twice", "add was called by twice")
  check(measurements.stats.some((stat) => stat.tool_name === "inspect_tool_stats"), "the model inspected profiling")

  const directory = await mkdtemp(join(tmpdir(), "jitbox-example-"))
  try {
    const path = join(directory, "harness.json")
    await JitHarnessSnapshot.save(await builder.snapshot(), path)
    const reused = new JitHarnessExtension(await JitHarnessSnapshot.load(path))
    const other = await createAgent(BuilderModel(), {
      config: { sessionId: "reused" },
      tools: [add],
      extensions: [new InMemoryMessageAccumulator(), reused]
    })
    check((await other.run("Use the saved twice tool.")).content === "42", "the reused session answers 42")
    await exerciseLifecycle(join(directory, "pipeline.json"))
    await Promise.all([jit.forgetSession("builder"), reused.forgetSession("reused")])
  } finally {
    await rm(directory, { recursive: true, force: true })
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof HarnessError.ToolRejected ? `${error._tag}: ${error.message}` : error)
  process.exitCode = 1
})
