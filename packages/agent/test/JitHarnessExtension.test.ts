/**
 * The JIT extension's sessions: one harness per session id until it is forgotten (LIFE-06,
 * LIFE-09), activation of its snapshot on a session's first request with a copy per session
 * (SNAP-03, SNAP-13), and the request lifecycle it drives through attach and detach (LIFE-01,
 * LIFE-03, LIFE-07).
 */
import { createAgent, InMemoryMessageAccumulator, JitHarnessExtension, ScriptedModel } from "@jitbox/agent"
import { HarnessError, InspectionToolExposure, type JitHarness, JitHarnessSnapshot, ManagementTools, Sessions, tool } from "@jitbox/core"
import { mkdtemp, readFile, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { activations, add, calls, counterSource, recording, rejection, twiceSource } from "./agentFixtures.js"

let keys = 0
const freshKey = () => `__jitbox_extension_test_${process.pid}_${++keys}`

const snapshotWith = (...tools: ReadonlyArray<readonly [name: string, source: string]>): JitHarnessSnapshot.JitHarnessSnapshot => ({
  format_version: 1,
  tools: tools.map(([name, source]) => ({ name, language: "typescript" as const, entrypoint: name, source })),
  text_tools: [],
  base_tools: ["add"],
  unloaded_tools: []
})

/** Calls `name` with `args`, then answers with the last tool result. */
const callThenAnswer = (id: string, name: string, args: unknown) =>
  recording([calls([id, name, args]), (request) => (request.messages.at(-1) as { content: string }).content])

const extensions: Array<JitHarnessExtension> = []
const track = (extension: JitHarnessExtension) => {
  extensions.push(extension)
  return extension
}
let directory: string
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), "jitbox-extension-test-"))
})
afterEach(async () => {
  for (const extension of extensions.splice(0)) {
    for (const session of ["a", "b", "s"]) await extension.forgetSession(session)
  }
  await rm(directory, { recursive: true, force: true })
})

describe("sessions (LIFE-06, LIFE-09)", () => {
  it("LIFE-09 getHarness returns one harness per session id, and its state lasts across requests", async () => {
    const jit = track(new JitHarnessExtension())
    expect(jit.getHarness("a")).toBe(jit.getHarness("a"))
    expect(jit.getHarness("a")).not.toBe(jit.getHarness("b"))

    const first = callThenAnswer("c1", "create_tool", { entrypoint: "twice", source: twiceSource })
    await (await createAgent(first.model, { config: { sessionId: "a" }, tools: [add], extensions: [jit] })).run("Create.")
    const second = callThenAnswer("c2", "twice", { value: 21 })
    const result = await (await createAgent(second.model, { config: { sessionId: "a" }, tools: [add], extensions: [jit] })).run("Use.")
    expect(result.content).toBe("42")
    expect(second.requests[0]!.tools.map((t) => t.name)).toContain("twice")

    const other = recording(["nothing here"])
    await (await createAgent(other.model, { config: { sessionId: "b" }, tools: [add], extensions: [jit] })).run("List.")
    expect(other.requests[0]!.tools.map((t) => t.name)).not.toContain("twice")
    expect(jit.getHarness("b").listTools().map((t) => t.name)).toEqual(["add"])
  })

  it("LIFE-06 forgetSession releases the toolbox; the next getHarness is fresh; snapshot and history are untouched", async () => {
    const path = join(directory, "template.json")
    const template = track(new JitHarnessExtension())
    await template.getHarness("s").createTool({ entrypoint: "twice", source: twiceSource })
    await template.getHarness("s").save(path)
    const fileBefore = await readFile(path, "utf8")

    const jit = track(new JitHarnessExtension(await JitHarnessSnapshot.load(path)))
    const history = new InMemoryMessageAccumulator()
    const script = recording([
      calls(["c1", "update_tool", { name: "twice", source: twiceSource.replace("right: value", "right: value + 1") }]),
      calls(["c2", "twice", { value: 21 }]),
      (request) => (request.messages.at(-1) as { content: string }).content
    ])
    const agent = await createAgent(script.model, { config: { sessionId: "a" }, tools: [add], extensions: [history, jit] })
    expect((await agent.run("Change twice.")).content).toBe("43")
    const before = jit.getHarness("a")
    const events = before.subscribe()[Symbol.asyncIterator]()
    const pending = events.next()
    const messages = [...history.messages("a")]

    await jit.forgetSession("a")
    expect(await pending).toEqual({ value: undefined, done: true })
    const fresh = jit.getHarness("a")
    expect(fresh).not.toBe(before)
    fresh.bindBaseTools([add])
    expect(await fresh.callTool("twice", { value: 21 })).toBe(42)
    expect(fresh.profile().calls.filter((c) => c.tool_name === "update_tool")).toEqual([])
    expect(history.messages("a")).toEqual(messages)
    expect(await readFile(path, "utf8")).toBe(fileBefore)
    await jit.forgetSession("never-seen")
  })

  it("fromSessions: the agent's requests go to the sessions given (management tools offered, base tools attached)", async () => {
    const sessions = Sessions.local()
    const jit = JitHarnessExtension.fromSessions(sessions)
    const script = recording([
      calls(["c1", "create_tool", { entrypoint: "twice", source: twiceSource }]),
      calls(["c2", "twice", { value: 21 }]),
      (request) => (request.messages.at(-1) as { content: string }).content
    ])
    const agent = await createAgent(script.model, { config: { sessionId: "s" }, tools: [add], extensions: [jit] })
    expect((await agent.run("Build and use twice.")).content).toBe("42")
    expect(script.requests[0]!.tools.map((t) => t.name)).toContain("create_tool")
    expect(sessions.harness("s").listTools().map((t) => t.name)).toContain("twice")
    expect(() => jit.getHarness("s")).toThrow(HarnessError.ConfigError)
    await sessions.forget("s")
  })
})

describe("snapshot activation through the extension (SNAP-03, SNAP-13, SNAP-16)", () => {
  it("SNAP-13 activates a session's copy on its first request, once per session", async () => {
    const key = freshKey()
    const jit = track(new JitHarnessExtension(snapshotWith(["counter", counterSource("counter", key)])))
    const agent = await createAgent(callThenAnswer("c1", "counter", {}).model, { config: { sessionId: "a" }, tools: [add], extensions: [jit] })
    expect(activations(key)).toBe(0)

    expect((await agent.run("Count.")).content).toBe("1")
    expect(activations(key)).toBe(1)
    const again = await createAgent(callThenAnswer("c2", "counter", {}).model, { config: { sessionId: "a" }, tools: [add], extensions: [jit] })
    expect((await again.run("Count again.")).content).toBe("2")
    expect(activations(key)).toBe(1)

    const other = await createAgent(callThenAnswer("c3", "counter", {}).model, { config: { sessionId: "b" }, tools: [add], extensions: [jit] })
    expect((await other.run("Count elsewhere.")).content).toBe("1")
    expect(activations(key)).toBe(2)
  })

  it("SNAP-03 SNAP-16 a session's change never reaches another session or the template; base tools come from the agent", async () => {
    const snapshot = snapshotWith(["twice", twiceSource])
    const pristine = structuredClone(snapshot)
    const jit = track(new JitHarnessExtension(snapshot))
    const change = recording([
      calls(["c1", "update_tool", { name: "twice", source: twiceSource.replace("right: value", "right: value + 1") }]),
      calls(["c2", "twice", { value: 21 }]),
      (request) => (request.messages.at(-1) as { content: string }).content
    ])
    expect((await (await createAgent(change.model, { config: { sessionId: "a" }, tools: [add], extensions: [jit] })).run("Change.")).content).toBe("43")
    const untouched = callThenAnswer("c3", "twice", { value: 21 })
    expect((await (await createAgent(untouched.model, { config: { sessionId: "b" }, tools: [add], extensions: [jit] })).run("Use.")).content).toBe("42")
    expect(snapshot).toEqual(pristine)
    expect(jit.getHarness("b").snapshot()).toEqual(pristine)
  })

  it("a snapshot that cannot be activated fails the session's request, naming the tool", async () => {
    const jit = track(new JitHarnessExtension(snapshotWith(["broken", "throw new Error(\"cannot load\")"])))
    const { model, requests } = recording(["never"])
    const agent = await createAgent(model, { config: { sessionId: "a" }, tools: [add], extensions: [jit] })
    const error = await rejection(agent.run("Hi"))
    expect(String(error.message)).toContain("cannot load")
    expect(requests).toEqual([])
    expect(jit.getHarness("a").active).toBe(false)
  })
})

describe("the request lifecycle (LIFE-01, LIFE-03, LIFE-07)", () => {
  it("LIFE-03 a request is attached during the run and detached after it", async () => {
    const jit = track(new JitHarnessExtension())
    let activeDuringCall: boolean | undefined
    const probe = tool({ name: "probe", description: "Report whether a request is attached.", guidelines: "Use in tests." }, () => {
      activeDuringCall = jit.getHarness("a").active
      return "probed"
    })
    const agent = await createAgent(callThenAnswer("c1", "probe", {}).model, { config: { sessionId: "a" }, tools: [probe], extensions: [jit] })
    expect(jit.getHarness("a").active).toBe(false)
    await agent.run("Probe.")
    expect(activeDuringCall).toBe(true)
    expect(jit.getHarness("a").active).toBe(false)
  })

  it("LIFE-01 after run the request's base tools are unbound and calling them is rejected MissingBinding", async () => {
    const jit = track(new JitHarnessExtension())
    const script = recording([
      calls(["c1", "create_tool", { entrypoint: "twice", source: twiceSource }]),
      calls(["c2", "twice", { value: 21 }]),
      (request) => (request.messages.at(-1) as { content: string }).content
    ])
    const agent = await createAgent(script.model, { config: { sessionId: "a" }, tools: [add], extensions: [jit] })
    expect((await agent.run("Build and use twice.")).content).toBe("42")

    const harness = jit.getHarness("a")
    expect(harness.listTools().find((t) => t.name === "add")?.state).toBe("unbound")
    const error = await rejection(harness.callTool("add", { left: 1, right: 2 }))
    expect(error).toBeInstanceOf(HarnessError.ToolRejected)
    expect(error.reason).toBe("MissingBinding")
    const nested = await rejection(harness.callTool("twice", { value: 1 }))
    expect(nested.reason).toBe("MissingBinding")
    expect(harness.profile("add").calls[0]?.status).toBe("rejected")
  })

  it("LIFE-01 LIFE-03 a failed run detaches too", async () => {
    const jit = track(new JitHarnessExtension())
    const model = ScriptedModel.make(() => calls(["again", "add", { left: 1, right: 1 }]))
    const agent = await createAgent(model, { config: { sessionId: "a", maxTurns: 2 }, tools: [add], extensions: [jit] })
    expect((await rejection(agent.run("Loop."))).reason).toBe("MaxTurnsExceeded")
    const harness = jit.getHarness("a")
    expect(harness.active).toBe(false)
    expect(harness.listTools().find((t) => t.name === "add")?.state).toBe("unbound")
    // The next request can attach again.
    const next = await createAgent(callThenAnswer("c1", "add", { left: 1, right: 2 }).model, { config: { sessionId: "a" }, tools: [add], extensions: [jit] })
    expect((await next.run("Add.")).content).toBe("3")
  })

  it("LIFE-04 a request whose base tool clashes with a created tool fails, and the session is not left attached", async () => {
    const jit = track(new JitHarnessExtension())
    const create = callThenAnswer("c1", "create_tool", { entrypoint: "twice", source: twiceSource })
    await (await createAgent(create.model, { config: { sessionId: "a" }, tools: [add], extensions: [jit] })).run("Create.")
    const clash = tool({ name: "twice", description: "The application's twice.", guidelines: "Use in tests." }, () => "app")
    const { model, requests } = recording(["never"])
    const clashing = await createAgent(model, { config: { sessionId: "a" }, tools: [add, clash], extensions: [jit] })
    expect(String((await rejection(clashing.run("Hi"))).message)).toMatch(/twice/)
    expect(requests).toEqual([])
    expect(jit.getHarness("a").active).toBe(false)

    const next = await createAgent(callThenAnswer("c2", "twice", { value: 21 }).model, { config: { sessionId: "a" }, tools: [add], extensions: [jit] })
    expect((await next.run("Use twice.")).content).toBe("42")
  })

  it("LIFE-08 each request binds the base tools its agent brings", async () => {
    const jit = track(new JitHarnessExtension())
    const offByOne = tool({
      name: "add",
      description: "Add two integers, then one.",
      guidelines: "Use for integer addition.",
      parameters: add.parameters
    }, ({ left, right }: { left: number; right: number }) => left + right + 1)
    const first = await createAgent(callThenAnswer("c1", "add", { left: 1, right: 2 }).model, { config: { sessionId: "a" }, tools: [add], extensions: [jit] })
    expect((await first.run("Add.")).content).toBe("3")
    const second = await createAgent(callThenAnswer("c2", "add", { left: 1, right: 2 }).model, { config: { sessionId: "a" }, tools: [offByOne], extensions: [jit] })
    expect((await second.run("Add.")).content).toBe("4")
  })

  it("LIFE-07 a handler's context kept after the request cannot call back in, and leaves no record", async () => {
    const jit = track(new JitHarnessExtension())
    let kept: { readonly callTool: (name: string, args?: unknown) => Promise<unknown> } | undefined
    const keeper = tool({ name: "keeper", description: "Keep the invocation context.", guidelines: "Use in tests." }, (_args: unknown, context) => {
      kept = context
      return "kept"
    })
    const agent = await createAgent(callThenAnswer("c1", "keeper", {}).model, { config: { sessionId: "a" }, tools: [add, keeper], extensions: [jit] })
    await agent.run("Keep it.")
    const harness: JitHarness = jit.getHarness("a")
    const records = harness.profile().total_calls
    const errors = harness.toolErrors().retained_errors

    const error = await rejection(kept!.callTool("add", { left: 1, right: 2 }))
    expect(error).toBeInstanceOf(HarnessError.ToolRejected)
    expect(error.reason).toBe("NoActiveInvocation")
    expect(harness.profile().total_calls).toBe(records)
    expect(harness.toolErrors().retained_errors).toBe(errors)
  })
})

describe("exposure modes through the extension (EXP-06, EXP-08)", () => {
  const inspect = (mode: InspectionToolExposure) =>
    recording([
      calls(["c1", "create_tool", { entrypoint: "twice", source: twiceSource }]),
      calls(
        ["c2", "read_tool_source", { name: "twice" }],
        ["c3", "inspect_tool_stats", { name: "twice" }],
        ["c4", "create_tool", { kind: "text", name: "inspect_tool_errors", description: "d", source: "m" }],
        ["c5", "list_tools", {}]
      ),
      "done"
    ])

  it("EXP-06 in Hidden mode the model cannot call an inspection tool by name: it does not exist for it", async () => {
    const jit = track(new JitHarnessExtension({ inspectionTools: InspectionToolExposure.Hidden }))
    const { model, requests } = inspect(InspectionToolExposure.Hidden)
    const agent = await createAgent(model, { config: { sessionId: "a" }, tools: [add], extensions: [jit] })
    await agent.run("Inspect twice.")
    const offered = requests[0]!.tools.map((t) => t.name)
    for (const name of ManagementTools.inspectionToolNames) expect(offered).not.toContain(name)

    const [source, stats, reserved, listed] = requests[2]!.messages.slice(-4) as Array<{ content: string; isError: boolean }>
    expect(source).toMatchObject({ isError: true, content: "ToolNotFound: no tool named 'read_tool_source' exists in this harness" })
    expect(stats).toMatchObject({ isError: true })
    expect(stats!.content).not.toContain("call_count")
    // EXP-08: the names stay reserved in every mode.
    expect(reserved).toMatchObject({ isError: true })
    expect(reserved!.content).toMatch(/^NameConflict: 'inspect_tool_errors' is a reserved management tool name/)
    expect(listed!.isError).toBe(false)
    const harness = jit.getHarness("a")
    expect(harness.profile().calls.map((c) => c.tool_name)).not.toContain("read_tool_source")
    expect(harness.profile().calls.map((c) => c.tool_name)).not.toContain("inspect_tool_stats")
    // The application keeps its own view (EXP-06).
    expect(harness.source("twice")).toMatchObject({ kind: "code", files: { "index.ts": twiceSource } })
  })

  it.each([InspectionToolExposure.Always, InspectionToolExposure.Deferred])(
    "EXP-04 EXP-05 in %s mode the model can call the inspection tools",
    async (mode) => {
      const jit = track(new JitHarnessExtension({ inspectionTools: mode }))
      const { model, requests } = inspect(mode)
      await (await createAgent(model, { config: { sessionId: "a" }, tools: [add], extensions: [jit] })).run("Inspect twice.")
      const [source, stats, reserved] = requests[2]!.messages.slice(-4) as Array<{ content: string; isError: boolean }>
      expect(source!.isError).toBe(false)
      expect(JSON.parse(source!.content)).toMatchObject({ name: "twice", content: twiceSource })
      expect(JSON.parse(stats!.content)).toMatchObject({ tool_name: "twice", call_count: 0 })
      expect(reserved!.content).toMatch(/^NameConflict: 'inspect_tool_errors' is a reserved management tool name/)
    }
  )
})
