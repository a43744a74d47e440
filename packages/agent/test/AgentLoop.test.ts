/**
 * The agent loop with a scripted model: the run's result, the event stream, the scheduling of one
 * response's calls (MGMT-15), the turn bound, history extensions (OVR-09), guidelines and the
 * answers to calls that cannot run.
 */
import {
  AgentError,
  type AgentEvent,
  createAgent,
  FileMessageStore,
  InMemoryMessageAccumulator,
  JitHarnessExtension,
  ProviderError,
  ScriptedModel,
  ToolGuidelinesExtension
} from "@jitbox/agent"
import { tool, ToolExecutionMode } from "@jitbox/core"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { add, calls, collect, quadrupleSource, recording, rejection, twiceSource } from "./agentFixtures.js"

const extensions: Array<JitHarnessExtension> = []
const jit = (options?: ConstructorParameters<typeof JitHarnessExtension>[0]) => {
  const extension = new JitHarnessExtension(options)
  extensions.push(extension)
  return extension
}
afterEach(async () => {
  for (const extension of extensions.splice(0)) {
    for (const session of ["s", "loop", "a", "b"]) await extension.forgetSession(session)
  }
})

type Custom = Extract<AgentEvent.AgentEvent, { type: "CUSTOM" }>
const customs = (events: ReadonlyArray<AgentEvent.AgentEvent>) =>
  events.filter((event): event is Custom => event.type === "CUSTOM")

describe("run", () => {
  it("returns the final message, what the run added and the number of turns", async () => {
    const { model, requests } = recording([calls(["c1", "add", { left: 20, right: 22 }]), "The sum is 42."])
    const agent = await createAgent(model, { config: { sessionId: "s" }, tools: [add] })
    const result = await agent.run("Add 20 and 22.")
    expect(result.content).toBe("The sum is 42.")
    expect(result.turns).toBe(2)
    expect(result.messages).toEqual([
      { role: "user", content: "Add 20 and 22." },
      calls(["c1", "add", { left: 20, right: 22 }]),
      { role: "tool", toolCallId: "c1", name: "add", content: "42", isError: false },
      { role: "assistant", content: "The sum is 42.", toolCalls: [] }
    ])
    expect(requests[1]!.messages).toEqual(result.messages.slice(0, 3))
  })

  it("OVR-06 the JIT extension lets the model create a tool and use it in the same run", async () => {
    const { model, requests } = recording([
      calls(["c1", "create_tool", { entrypoint: "twice", source: twiceSource }]),
      calls(["c2", "twice", { value: 21 }]),
      (request) => (request.messages.at(-1) as { content: string }).content
    ])
    const extension = jit()
    const agent = await createAgent(model, { config: { sessionId: "s" }, tools: [add], extensions: [extension] })
    const result = await agent.run("Build and use twice.")
    expect(result.content).toBe("42")
    expect(result.messages[2]).toMatchObject({ toolCallId: "c1", content: JSON.stringify({ name: "twice", status: "loaded" }) })
    expect(requests[0]!.tools.map((t) => t.name)).not.toContain("twice")
    expect(requests[1]!.tools.map((t) => t.name)).toContain("twice")
    const add_ = extension.getHarness("s").profile("add").calls[0]
    expect(add_?.caller_tool_name).toBe("twice")
  })

  it("a provider failure rejects with the ProviderError itself", async () => {
    const model = ScriptedModel.make(() =>
      Effect.fail(new ProviderError.ProviderError({ reason: "RateLimited", provider: "scripted", status: 429, providerMessage: "slow down" }))
    )
    const agent = await createAgent(model, { config: { sessionId: "s" } })
    const error = await rejection(agent.run("Hi"))
    expect(error).toBeInstanceOf(ProviderError.ProviderError)
    expect(error.reason).toBe("RateLimited")
  })
})

describe("stream", () => {
  it("yields the run's lifecycle, every model call's TOOL pair and every JIT call's CUSTOM pair, nested ones included", async () => {
    const { model } = recording([
      calls(
        ["c1", "create_tool", { entrypoint: "twice", source: twiceSource }],
        ["c2", "create_tool", { entrypoint: "quadruple", source: quadrupleSource }]
      ),
      calls(["c3", "quadruple", { value: 21 }], ["c4", "add", { left: 1, right: 2 }]),
      "84"
    ])
    const extension = jit()
    const agent = await createAgent(model, { config: { sessionId: "s" }, tools: [add], extensions: [extension] })
    const events = await collect(agent.stream("Build and use quadruple."))

    expect(events[0]).toMatchObject({ type: "RUN_STARTED", sessionId: "s" })
    expect(events.at(-1)).toEqual({ type: "RUN_FINISHED", runId: (events[0] as { runId: string }).runId, content: "84" })
    expect(events.filter((e) => e.type === "RUN_STARTED" || e.type === "RUN_FINISHED")).toHaveLength(2)
    expect(events.filter((e) => e.type === "MESSAGE")).toHaveLength(3)

    // The runtime's pair: every call the model asked for, base tools included, and nothing nested.
    const started = events.flatMap((e) => e.type === "TOOL_STARTED" ? [`${e.toolCallId}:${e.toolName}`] : [])
    const completed = events.flatMap((e) => e.type === "TOOL_COMPLETED" ? [`${e.toolCallId}:${e.toolName}:${e.success}`] : [])
    expect(started.sort()).toEqual(["c1:create_tool", "c2:create_tool", "c3:quadruple", "c4:add"])
    expect(completed.sort()).toEqual(["c1:create_tool:true", "c2:create_tool:true", "c3:quadruple:true", "c4:add:true"])

    // The harness's pair: management and code calls, nested ones with fresh ids; never base tools.
    const jitStarted = customs(events).filter((e) => e.name === "jit_tool_started")
    const jitCompleted = customs(events).filter((e) => e.name === "jit_tool_completed")
    expect(jitStarted.map((e) => `${e.payload.tool_name}:${e.payload.origin}`).sort()).toEqual([
      "create_tool:management",
      "create_tool:management",
      "quadruple:code",
      "twice:code",
      "twice:code"
    ])
    const idsOf = (name: string) => jitStarted.filter((e) => e.payload.tool_name === name).map((e) => e.payload.tool_call_id)
    expect(idsOf("create_tool")).toEqual(["c1", "c2"])
    expect(idsOf("quadruple")).toEqual(["c3"])
    const nested = idsOf("twice")
    expect(new Set([...nested, "c1", "c2", "c3", "c4"]).size).toBe(6)
    for (const event of jitStarted) {
      const index = events.indexOf(event)
      const done = events.findIndex((e) =>
        e.type === "CUSTOM" && e.name === "jit_tool_completed" && e.payload.tool_call_id === event.payload.tool_call_id
      )
      expect(done, event.payload.tool_name).toBeGreaterThan(index)
      expect((events[done] as Custom).payload).toMatchObject({ success: true, error_type: null, session_id: "s" })
    }
    expect(jitCompleted).toHaveLength(5)
    expect(events.some((e) => e.type === "TOOL_STARTED" && e.toolName === "twice")).toBe(false)
    expect(customs(events).some((e) => "tool_name" in e.payload && e.payload.tool_name === "add")).toBe(false)
    expect(customs(events).some((e) => e.name === "jit_events_dropped")).toBe(false)

    // The nested ids are the profile records' call ids.
    const records = extension.getHarness("s").profile("twice").calls
    expect(records.map((r) => r.call_id).sort()).toEqual([...nested].sort())
    expect(records.every((r) => r.caller_tool_name === "quadruple")).toBe(true)
    // D-10: base tools have no CUSTOM events, but every attempt, nested or not, has a record.
    const adds = extension.getHarness("s").profile("add").calls
    expect(adds.map((r) => r.caller_tool_name ?? "model").sort()).toEqual(["model", "twice", "twice"])
    expect(adds.find((r) => r.caller_tool_name === null)?.call_id).toBe("c4")
  })

  it("a failed call is a TOOL_COMPLETED with success false and its error type", async () => {
    const { model } = recording([calls(["c1", "add", { left: "one", right: 2 }]), "done"])
    const agent = await createAgent(model, { config: { sessionId: "s" }, tools: [add], extensions: [jit()] })
    const events = await collect(agent.stream("Add."))
    expect(events.find((e) => e.type === "TOOL_COMPLETED")).toEqual({
      type: "TOOL_COMPLETED",
      toolCallId: "c1",
      toolName: "add",
      success: false,
      errorType: "ValidationError"
    })
    expect(events.at(-1)?.type).toBe("RUN_FINISHED")
  })

  it("D-11 a code call that fails validation has its CUSTOM pair with success false", async () => {
    const { model } = recording([
      calls(["c1", "create_tool", { entrypoint: "twice", source: twiceSource }]),
      calls(["c2", "twice", { value: "x" }]),
      "done"
    ])
    const agent = await createAgent(model, { config: { sessionId: "s" }, tools: [add], extensions: [jit()] })
    const events = await collect(agent.stream("Try."))
    const pair = customs(events).filter((e) => "tool_call_id" in e.payload && e.payload.tool_call_id === "c2")
    expect(pair.map((e) => e.name)).toEqual(["jit_tool_started", "jit_tool_completed"])
    expect(pair[1]!.payload).toMatchObject({ tool_name: "twice", origin: "code", success: false, error_type: "ValidationError" })
    expect(events.find((e) => e.type === "TOOL_COMPLETED" && e.toolCallId === "c2")).toMatchObject({ success: false, errorType: "ValidationError" })
  })

  it("a failing run throws its error from the iteration", async () => {
    const model = ScriptedModel.make(() => calls(["again", "add", { left: 1, right: 1 }]))
    const agent = await createAgent(model, { config: { sessionId: "s", maxTurns: 2 }, tools: [add] })
    const seen: Array<string> = []
    const error = await rejection((async () => {
      for await (const event of agent.stream("Loop.")) seen.push(event.type)
    })())
    expect(error).toBeInstanceOf(AgentError)
    expect(error.reason).toBe("MaxTurnsExceeded")
    expect(seen[0]).toBe("RUN_STARTED")
    expect(seen).not.toContain("RUN_FINISHED")
  })
})

describe("scheduling one response's calls (MGMT-15)", () => {
  /** Both parallel tools wait until both have started; run one after the other, they time out. */
  const latchedTools = (log: Array<string>) => {
    let arrived = 0
    let open!: () => void
    const latch = new Promise<void>((resolve) => (open = resolve))
    const latched = (name: string) =>
      tool({ name, description: `Wait for the other parallel tool (${name}).`, guidelines: "Use in tests." }, async () => {
        log.push(`start ${name}`)
        if (++arrived === 2) open()
        const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${name} never overlapped`)), 2_000))
        await Promise.race([latch, timeout])
        log.push(`end ${name}`)
        return name
      })
    const serial = tool({
      name: "step",
      description: "A serial step.",
      guidelines: "Use in tests.",
      parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
      executionMode: ToolExecutionMode.Serial
    }, async ({ n }: { n: number }) => {
      log.push(`start step ${n}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
      log.push(`end step ${n}`)
      return n
    })
    return [latched("wait_a"), latched("wait_b"), serial]
  }

  it("runs parallel calls concurrently, then serial ones in order, then management calls in order", async () => {
    const log: Array<string> = []
    const response = calls(
      ["m1", "create_tool", { entrypoint: "twice", source: twiceSource }],
      ["s1", "step", { n: 1 }],
      ["p1", "wait_a", {}],
      ["m2", "list_tools", {}],
      ["p2", "wait_b", {}],
      ["s2", "step", { n: 2 }]
    )
    const { model } = recording([response, "done"])
    const agent = await createAgent(model, { config: { sessionId: "s" }, tools: [add, ...latchedTools(log)], extensions: [jit()] })
    const events = await collect(agent.stream("Go."))

    expect(log.slice(0, 2).sort()).toEqual(["start wait_a", "start wait_b"])
    expect(log.slice(2, 4).sort()).toEqual(["end wait_a", "end wait_b"])
    expect(log.slice(4)).toEqual(["start step 1", "end step 1", "start step 2", "end step 2"])

    const order = events.flatMap((e) =>
      e.type === "TOOL_STARTED" ? [`start ${e.toolCallId}`] : e.type === "TOOL_COMPLETED" ? [`end ${e.toolCallId}`] : []
    )
    expect(order.slice(0, 2)).toEqual(["start p1", "start p2"])
    expect(order.slice(2, 4).sort()).toEqual(["end p1", "end p2"])
    expect(order.slice(4)).toEqual(["start s1", "end s1", "start s2", "end s2", "start m1", "end m1", "start m2", "end m2"])

    expect(events.filter((e) => e.type === "TOOL_COMPLETED").every((e) => e.type === "TOOL_COMPLETED" && e.success)).toBe(true)
  })

  it("answers every call in the order the model made them, whatever the order they ran in", async () => {
    const log: Array<string> = []
    const response = calls(
      ["m1", "create_tool", { entrypoint: "twice", source: twiceSource }],
      ["s1", "step", { n: 1 }],
      ["p1", "wait_a", {}],
      ["m2", "list_tools", {}],
      ["p2", "wait_b", {}]
    )
    const { model, requests } = recording([response, "done"])
    const agent = await createAgent(model, { config: { sessionId: "s" }, tools: [add, ...latchedTools(log)], extensions: [jit()] })
    const result = await agent.run("Go.")
    const answers = result.messages.filter((m) => m.role === "tool")
    expect(answers.map((m) => m.role === "tool" && m.toolCallId)).toEqual(["m1", "s1", "p1", "m2", "p2"])
    expect(answers.every((m) => m.role === "tool" && !m.isError)).toBe(true)
    const listed = JSON.parse((answers[3] as { content: string }).content)
    expect(listed.tools.map((t: { name: string }) => t.name)).toContain("twice")
    expect(requests[1]!.messages.slice(-5)).toEqual(answers)
  })
})

describe("the turn bound", () => {
  it("a run that needs more than maxTurns model turns fails with AgentError MaxTurnsExceeded", async () => {
    let turns = 0
    const model = ScriptedModel.make(() => {
      turns++
      return calls([`c${turns}`, "add", { left: 1, right: 1 }])
    })
    const agent = await createAgent(model, { config: { sessionId: "s", maxTurns: 3 }, tools: [add] })
    const error = await rejection(agent.run("Loop forever."))
    expect(error).toBeInstanceOf(AgentError)
    expect(error.reason).toBe("MaxTurnsExceeded")
    expect(turns).toBe(3)
  })

  it("the default bound is 16 turns and a bound must be a positive integer", async () => {
    let turns = 0
    const model = ScriptedModel.make(() => calls([`c${++turns}`, "add", { left: 1, right: 1 }]))
    const agent = await createAgent(model, { config: { sessionId: "s" }, tools: [add] })
    expect((await rejection(agent.run("Loop."))).reason).toBe("MaxTurnsExceeded")
    expect(turns).toBe(16)
    await expect(createAgent(model, { config: { sessionId: "s", maxTurns: 0 } })).rejects.toThrow(AgentError)
  })
})

describe("history (OVR-09)", () => {
  const twoRuns = async (withHistory: boolean) => {
    const { model, requests } = recording(["first answer", "second answer"])
    const history = new InMemoryMessageAccumulator()
    const agent = await createAgent(model, {
      config: { sessionId: "s" },
      tools: [add],
      extensions: withHistory ? [history, jit()] : [jit()]
    })
    await agent.run("first question")
    await agent.run("second question")
    return { requests, history }
  }

  it("without a history extension the second run does not see the first", async () => {
    const { requests } = await twoRuns(false)
    expect(requests[1]!.messages).toEqual([{ role: "user", content: "second question" }])
  })

  it("with InMemoryMessageAccumulator the second run starts from the first run's messages", async () => {
    const { history, requests } = await twoRuns(true)
    expect(requests[1]!.messages).toEqual([
      { role: "user", content: "first question" },
      { role: "assistant", content: "first answer", toolCalls: [] },
      { role: "user", content: "second question" }
    ])
    expect(history.messages("s")).toHaveLength(4)
    expect(history.messages("other")).toEqual([])
  })

  it("an explicit empty list offers neither history nor management tools", async () => {
    const { model, requests } = recording(["one", "two"])
    const agent = await createAgent(model, { config: { sessionId: "s" }, tools: [add], extensions: [] })
    await agent.run("first")
    await agent.run("second")
    expect(requests[0]!.tools.map((t) => t.name)).toEqual(["add"])
    expect(requests[0]!.instructions).toBe("")
    expect(requests[1]!.messages).toEqual([{ role: "user", content: "second" }])
  })
})

describe("FileMessageStore", () => {
  let directory: string | undefined
  afterEach(async () => {
    if (directory !== undefined) await rm(directory, { recursive: true, force: true })
    directory = undefined
  })

  it("persists a session across two agent instances", async () => {
    directory = await mkdtemp(join(tmpdir(), "jitbox-history-"))
    const first = recording([calls(["c1", "add", { left: 2, right: 3 }]), "five"])
    const agent1 = await createAgent(first.model, { config: { sessionId: "s/1" }, tools: [add], extensions: [new FileMessageStore(directory)] })
    await agent1.run("Add 2 and 3.")
    expect(await readdir(directory)).toEqual([`${encodeURIComponent("s/1")}.json`])

    const second = recording(["still five"])
    const agent2 = await createAgent(second.model, { config: { sessionId: "s/1" }, tools: [add], extensions: [new FileMessageStore(directory)] })
    await agent2.run("And again?")
    expect(second.requests[0]!.messages).toEqual([
      { role: "user", content: "Add 2 and 3." },
      calls(["c1", "add", { left: 2, right: 3 }]),
      { role: "tool", toolCallId: "c1", name: "add", content: "5", isError: false },
      { role: "assistant", content: "five", toolCalls: [] },
      { role: "user", content: "And again?" }
    ])
    const saved = JSON.parse(await readFile(join(directory, `${encodeURIComponent("s/1")}.json`), "utf8"))
    expect(saved).toHaveLength(6)
    expect(await readdir(directory)).toHaveLength(1)
  })

  it("a corrupt file is a typed AgentError and the model is never asked", async () => {
    directory = await mkdtemp(join(tmpdir(), "jitbox-history-"))
    await writeFile(join(directory, "s.json"), "[{\"role\":\"user\",\"content\":")
    const { model, requests } = recording(["never"])
    const agent = await createAgent(model, { config: { sessionId: "s" }, extensions: [new FileMessageStore(directory)] })
    const error = await rejection(agent.run("Hello"))
    expect(error).toBeInstanceOf(AgentError)
    expect(error.reason).toBe("History")
    expect(error.message).toContain("s.json")
    expect(requests).toEqual([])

    await writeFile(join(directory, "s.json"), JSON.stringify([{ role: "wizard", content: "hi" }]))
    const invalid = await rejection(agent.run("Hello"))
    expect(invalid).toBeInstanceOf(AgentError)
    expect(invalid.reason).toBe("History")
  })

  it("a history failure is a typed failure of runEffect, not a defect", async () => {
    directory = await mkdtemp(join(tmpdir(), "jitbox-history-"))
    await writeFile(join(directory, "s.json"), "not json")
    const agent = await createAgent(recording(["never"]).model, { config: { sessionId: "s" }, extensions: [new FileMessageStore(directory)] })
    const exit = await Effect.runPromiseExit(agent.runEffect("Hello"))
    expect(Exit.isFailure(exit)).toBe(true)
    const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
    expect(Option.isSome(failure) && failure.value instanceof AgentError && failure.value.reason).toBe("History")
  })
})

describe("guidelines (OVR-08)", () => {
  it("ToolGuidelinesExtension adds each offered tool's guidelines to the instructions", async () => {
    const without = recording(["ok"])
    await (await createAgent(without.model, { config: { sessionId: "s" }, tools: [add] })).run("Hi")
    expect(without.requests[0]!.instructions).toBe("")

    const withGuidelines = recording(["ok"])
    await (await createAgent(withGuidelines.model, {
      config: { sessionId: "s" },
      tools: [add],
      extensions: [new ToolGuidelinesExtension()]
    })).run("Hi")
    expect(withGuidelines.requests[0]!.instructions).toBe("Tool guidelines:\n- add: Use for integer addition.")
  })

  it("the JIT extension adds the guidelines itself, created tools included", async () => {
    const { model, requests } = recording([calls(["c1", "create_tool", { entrypoint: "twice", source: twiceSource }]), "ok"])
    await (await createAgent(model, { config: { sessionId: "s" }, tools: [add], extensions: [jit()] })).run("Hi")
    expect(requests[0]!.instructions).toContain("- add: Use for integer addition.")
    expect(requests[0]!.instructions).not.toContain("- twice:")
    expect(requests[1]!.instructions).toContain("- twice: Use to add an integer to itself.")
  })
})

describe("calls that cannot run", () => {
  it("a call with unparsable arguments gets an error tool message, and the run goes on", async () => {
    const broken = { role: "assistant" as const, content: null, toolCalls: [{ id: "c1", name: "add", arguments: "{\"left\": 1,", argumentsError: "Unexpected end of JSON input" }] }
    const { model, requests } = recording([broken, "sorry"])
    const extension = jit()
    const agent = await createAgent(model, { config: { sessionId: "s" }, tools: [add], extensions: [extension] })
    const events = await collect(agent.stream("Add."))
    const answer = requests[1]!.messages.at(-1)
    expect(answer).toEqual({
      role: "tool",
      toolCallId: "c1",
      name: "add",
      content: "InvalidArguments: Unexpected end of JSON input",
      isError: true
    })
    expect(events.find((e) => e.type === "TOOL_COMPLETED")).toMatchObject({ success: false, errorType: "InvalidArguments" })
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", content: "sorry" })
    expect(extension.getHarness("s").profile().calls).toEqual([])
  })

  it.each([["with the JIT extension", true], ["with base tools only", false]])(
    "an unknown tool name gets an error tool message (%s)",
    async (_, withJit) => {
      const { model, requests } = recording([calls(["c1", "no_such_tool", {}], ["c2", "add", { left: 1, right: 1 }]), "ok"])
      const agent = await createAgent(model, { config: { sessionId: "s" }, tools: [add], extensions: withJit ? [jit()] : [] })
      const result = await agent.run("Call something.")
      expect(result.content).toBe("ok")
      const [unknown, known] = requests[1]!.messages.slice(-2)
      expect(unknown).toMatchObject({ role: "tool", toolCallId: "c1", name: "no_such_tool", isError: true })
      expect((unknown as { content: string }).content).toMatch(/^ToolNotFound: .*no_such_tool/)
      expect(known).toMatchObject({ role: "tool", toolCallId: "c2", content: "2", isError: false })
    }
  )
})
