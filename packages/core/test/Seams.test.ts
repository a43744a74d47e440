/**
 * The seams a runtime plugs into: calls addressed by id, admission as a service, one clock,
 * sinks, the Effect layer reading them from its context, and the lifecycle edges of the facade.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import * as Admission from "../src/Admission.js"
import type { CallHost, CodeRunnerShape, Invocation } from "../src/CodeRunner.js"
import * as CodeRunner from "../src/CodeRunner.js"
import * as EventSink from "../src/EventSink.js"
import * as Harness from "../src/Harness.js"
import { JitHarness } from "../src/JitHarness.js"
import type { JitToolEvent } from "../src/JitToolEvent.js"
import * as JitPolicy from "../src/JitPolicy.js"
import * as ProfileSink from "../src/ProfileSink.js"
import { tool } from "../src/Tool.js"
import { add, codeTool, deferred, flush, rejection, twiceSource } from "./fixtures.js"

/**
 * A runner shaped like one in another process: it keeps activations by id and, when a tool's
 * "code" asks for a nested call, calls back through the host naming whichever call id the code
 * claims (`as`), or its own.
 */
const remoteLikeRunner = () => {
  const hosts = new Map<string, CallHost>()
  const seen: Array<Invocation> = []
  const gates: Array<ReturnType<typeof deferred<void>>> = []
  const runner: CodeRunnerShape = {
    languages: ["python"],
    activate: async (source, host) => {
      hosts.set(source.activationId, host)
      return { description: "A tool that composes by id.", guidelines: "Use in tests.", parameters: { type: "object" } }
    },
    invoke: async (invocation) => {
      seen.push(invocation)
      const args = invocation.args as { readonly call?: string; readonly as?: string; readonly wait?: boolean }
      if (args.wait === true) {
        const gate = deferred<void>()
        gates.push(gate)
        await gate.promise
      }
      if (args.call === undefined) return { depth: invocation.context.depth }
      const host = hosts.get(invocation.activationId)!
      return await host.callTool(args.as ?? invocation.context.callId, args.call, { left: 1, right: 2 })
    },
    release: async (activationId) => {
      hosts.delete(activationId)
    }
  }
  return { runner, seen, gates, hosts }
}

describe("calls addressed by id (CodeRunner, the table of live calls)", () => {
  it("a nested call names its parent by call id: depth, parent and caller come from the harness's record", async () => {
    const { runner, seen } = remoteLikeRunner()
    const records: Array<ProfileSink.SessionProfileRecord> = []
    const harness = new JitHarness({ sessionId: "s1", tools: [add], runners: [runner], profileSink: { record: (r) => records.push(r) } })
    await harness.createTool({ language: "python", entrypoint: "composer", source: "composer" })
    expect(await harness.callTool("composer", { call: "add" }, { callId: "outer" })).toBe(3)
    expect(seen[0]?.context).toEqual({ sessionId: "s1", callId: "outer", parentCallId: null, depth: 1, withinChange: false, deadline: null })
    const nested = records.find((record) => record.tool_name === "add")
    expect(nested).toMatchObject({ session_id: "s1", parent_call_id: "outer", depth: 2, caller_tool_name: "composer", status: "completed" })
  })

  it("a nested call naming a call that is not running is rejected, whatever the code claims", async () => {
    const { runner } = remoteLikeRunner()
    const harness = new JitHarness({ tools: [add], runners: [runner] })
    await harness.createTool({ language: "python", entrypoint: "composer", source: "composer" })
    const error = await rejection(harness.callTool("composer", { call: "add", as: "forged-outer-call" }))
    expect(error).toMatchObject({ _tag: "ToolRejected", reason: "NoActiveInvocation" })
    expect(harness.profile("add").calls).toEqual([])
  })

  it("a call stays addressable only while it runs", async () => {
    const { hosts, runner } = remoteLikeRunner()
    const harness = new JitHarness({ tools: [add], runners: [runner] })
    await harness.createTool({ language: "python", entrypoint: "composer", source: "composer" })
    await harness.callTool("composer", {}, { callId: "done-already" })
    const host = [...hosts.values()][0]!
    expect(await rejection(host.callTool("done-already", "add", { left: 1, right: 1 }))).toMatchObject({ reason: "NoActiveInvocation" })
  })

  it("examples run as calls within the change that builds the version, addressable while they run", async () => {
    const { runner, seen } = remoteLikeRunner()
    const harness = new JitHarness({ tools: [add], runners: [runner] })
    await harness.createTool({
      language: "python",
      entrypoint: "composer",
      source: "composer",
      examples: [{ input: { call: "add" }, expected_output: 3 }]
    })
    expect(seen[0]?.context).toMatchObject({ depth: 1, withinChange: true, parentCallId: null })
    expect(harness.profile("add").calls[0]?.caller_tool_name).toBe("composer")
  })

  it("two sessions activating the same version get separate activations", async () => {
    const { runner } = remoteLikeRunner()
    const activations: Array<string> = []
    const counting: CodeRunnerShape = {
      ...runner,
      activate: (source, host) => {
        activations.push(`${source.sessionId}/${source.activationId}/${source.versionId}`)
        return runner.activate(source, host)
      }
    }
    const a = new JitHarness({ sessionId: "a", runners: [counting] })
    const b = new JitHarness({ sessionId: "b", runners: [counting] })
    for (const harness of [a, b]) await harness.createTool({ language: "python", entrypoint: "composer", source: "same" })
    const [first, second] = activations.map((line) => line.split("/"))
    expect(first![2]).toBe(second![2])
    expect(first![1]).not.toBe(second![1])
  })
})

describe("Admission", () => {
  it("a call abandoned while it waits for a concurrency slot never runs, and its record says cancelled", async () => {
    let runs = 0
    const gate = deferred<void>()
    const harness = new JitHarness({ policy: { allowedLanguages: ["JavaScript"], maximumConcurrentInvocations: 1 } })
    await harness.createTool({
      entrypoint: "counted",
      source: codeTool("counted", "(globalThis.__jitboxSeamRuns = (globalThis.__jitboxSeamRuns ?? 0) + 1, args.wait ? await globalThis.__jitboxSeamGate : 1)")
    })
    ;(globalThis as Record<string, unknown>).__jitboxSeamGate = gate.promise
    const first = harness.callTool("counted", { wait: true })
    await flush()
    const controller = new AbortController()
    const second = harness.callTool("counted", {}, { signal: controller.signal })
    await flush()
    expect(harness.admission.usage()).toMatchObject({ running: 1, waiting: 1 })
    controller.abort()
    expect(await rejection(second)).toMatchObject({ _tag: "ToolCancelled" })
    expect(harness.admission.usage().waiting).toBe(0)
    gate.resolve()
    await first
    await flush()
    runs = (globalThis as unknown as Record<string, number>).__jitboxSeamRuns!
    expect(runs).toBe(1)
    expect(harness.profile("counted").calls.map((call) => call.status)).toEqual(["cancelled", "completed"])
    delete (globalThis as Record<string, unknown>).__jitboxSeamRuns
    delete (globalThis as Record<string, unknown>).__jitboxSeamGate
  })

  it("an admission given by the application is the one spent", async () => {
    const admission = Admission.local(JitPolicy.make({ allowedLanguages: ["JavaScript"], maximumInvocations: 1, maximumConcurrentInvocations: 1 }))
    const harness = new JitHarness({ admission })
    await harness.createTool({ entrypoint: "one", source: codeTool("one", "1") })
    await harness.callTool("one")
    expect(admission.usage().invocations).toBe(1)
    expect(await rejection(harness.callTool("one"))).toMatchObject({ reason: "BudgetExhausted" })
  })

  it("a policy and an admission together are a ConfigError", () => {
    expect(() => new JitHarness({ policy: {}, admission: Admission.unlimited() })).toThrow(/not both/)
  })
})

describe("the clock (TestClock drives deadlines and await windows)", () => {
  const hangSource = codeTool("hang", "await new Promise(() => {})")

  it.effect("a code call under a policy times out when the test clock passes its deadline", () =>
    Effect.gen(function*() {
      const harness = yield* Harness.makeScoped({ policy: { allowedLanguages: ["JavaScript"], shortInvocationTimeoutSeconds: 5 } })
      yield* Effect.promise(() => harness.createTool({ entrypoint: "hang", source: hangSource }))
      const fiber = yield* Effect.fork(Effect.either(Effect.tryPromise(() => harness.callTool("hang"))))
      yield* Effect.promise(() => flush())
      yield* TestClock.adjust("4 seconds")
      yield* Effect.promise(() => flush())
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 second")
      const outcome = yield* Fiber.join(fiber)
      expect(outcome._tag).toBe("Left")
      expect(harness.profile("hang").calls[0]).toMatchObject({ status: "failed", error_type: "ToolTimeout" })
    }).pipe(Effect.scoped))

  it.effect("await_invocations waits for its window on the test clock", () =>
    Effect.gen(function*() {
      const harness = yield* Harness.makeScoped({ policy: { allowedLanguages: ["JavaScript"], allowAsyncOperations: true } })
      yield* Effect.promise(() => harness.createTool({ entrypoint: "hang", source: hangSource }))
      const { invocation_id } = harness.startInvocation("hang")
      const waiting = yield* Effect.fork(Effect.promise(() => harness.awaitInvocations([invocation_id], 30)))
      yield* Effect.promise(() => flush())
      yield* TestClock.adjust("29 seconds")
      yield* Effect.promise(() => flush())
      expect(waiting.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(waiting)).toEqual({ finished: [], running: [invocation_id] })
      harness.cancelInvocation(invocation_id)
    }).pipe(Effect.scoped))
})

describe("sinks", () => {
  it("a finished record and each event reach their sinks synchronously, before the call's promise settles", async () => {
    const records: Array<ProfileSink.SessionProfileRecord> = []
    const events: Array<JitToolEvent> = []
    const harness = new JitHarness({
      sessionId: "sinks",
      tools: [add],
      profileSink: { record: (record) => records.push(record) },
      eventSink: { emit: (event) => events.push(event) }
    })
    await harness.createTool({ entrypoint: "twice", source: twiceSource })
    // the change announced itself as create_tool's pair; it has no record
    expect(events.map((event) => event.name === "jit_events_dropped" ? "" : `${event.name} ${event.payload.tool_name}`)).toEqual([
      "jit_tool_started create_tool",
      "jit_tool_completed create_tool"
    ])
    events.length = 0
    const pending = harness.callTool("twice", { value: 2 }, { callId: "t-1" })
    const atSettle = pending.then(() => [records.length, events.length])
    expect(await pending).toBe(4)
    expect(await atSettle).toEqual([2, 2])
    expect(records.map((record) => [record.tool_name, record.depth, record.parent_call_id])).toEqual([
      ["add", 2, "t-1"],
      ["twice", 1, null]
    ])
    expect(events.map((event) => event.name)).toEqual(["jit_tool_started", "jit_tool_completed"])
  })

  it("a throwing sink does not break dispatch", async () => {
    const harness = new JitHarness({ tools: [add], profileSink: { record: () => { throw new Error("sink down") } } })
    expect(await harness.callTool("add", { left: 1, right: 1 })).toBe(2)
  })
})

describe("Harness.layer reads its seams from the context", () => {
  it.effect("CodeRunner, Admission and both sinks", () =>
    Effect.gen(function*() {
      const { runner } = remoteLikeRunner()
      const records: Array<string> = []
      const events: Array<string> = []
      const admission = Admission.local(JitPolicy.make({ allowedLanguages: ["Python"] }))
      const layer = Harness.layer({ tools: [add] }).pipe(
        Layer.provide(Layer.mergeAll(
          Layer.succeed(CodeRunner.CodeRunner, runner),
          Layer.succeed(Admission.Admission, admission),
          ProfileSink.layer({ record: (record) => records.push(record.tool_name) }),
          EventSink.layer({ emit: (event) => events.push(event.name) })
        ))
      )
      yield* Effect.gen(function*() {
      const harness = yield* Harness.Harness
      expect(harness.codeExecution).toBe("sandboxed")
      expect(harness.admission).toBe(admission)
      yield* Effect.promise(() => harness.createTool({ language: "python", entrypoint: "composer", source: "composer" }))
      expect(yield* Effect.promise(() => harness.callTool("composer", { call: "add" }))).toBe(3)
      expect(records).toEqual(["add", "composer"])
      // create_tool's pair (the change made through the API), then the call's
      expect(events).toEqual(["jit_tool_started", "jit_tool_completed", "jit_tool_started", "jit_tool_completed"])
      expect(admission.usage().invocations).toBe(1)
      }).pipe(Effect.provide(layer))
    }))
})

describe("lifecycle edges", () => {
  it("release() is terminal: every later call and change is a HarnessReleased error", async () => {
    const harness = new JitHarness({ tools: [add] })
    await harness.createTool({ entrypoint: "twice", source: twiceSource })
    await harness.release()
    for (const pending of [
      harness.callTool("add", { left: 1, right: 1 }),
      harness.callTool("twice", { value: 1 }),
      harness.callTool("list_tools", {}),
      harness.createTool({ entrypoint: "again", source: codeTool("again", "1") }),
      harness.updateTool({ name: "twice", source: twiceSource }),
      harness.unloadTool("twice"),
      harness.loadTool("twice")
    ]) {
      expect(await rejection(pending)).toMatchObject({ _tag: "HarnessReleased" })
    }
  })

  it("a running call is cancelled by release", async () => {
    const started = deferred<void>()
    const hang = tool({ name: "hang", description: "Hangs.", guidelines: "Use in tests." }, (_args, context) => {
      started.resolve()
      return new Promise((_, reject) => context.signal.addEventListener("abort", () => reject(context.signal.reason)))
    })
    const harness = new JitHarness({ tools: [hang] })
    const pending = harness.callTool("hang")
    await started.promise
    void harness.callTool("hang").catch(() => undefined)
    void pending.catch(() => undefined)
    await harness.release()
    expect(await rejection(pending)).toMatchObject({ _tag: "ToolCancelled" })
    expect(harness.profile("hang").calls.map((call) => call.status)).toEqual(["cancelled", "cancelled"])
  })

  it("sandboxed without a runner for every language the policy allows fails at construction", () => {
    const { runner } = remoteLikeRunner()
    expect(() => new JitHarness({ codeExecution: "sandboxed", runners: [runner], policy: { allowedLanguages: ["Python", "JavaScript"] } }))
      .toThrow(expect.objectContaining({ _tag: "ConfigError", option: "runners" }))
    expect(() => new JitHarness({ codeExecution: "sandboxed", runners: [runner], policy: { allowedLanguages: ["Python"] } })).not.toThrow()
  })

  it.each([["sessionID"], ["tool"], ["executionMode"]])("an unknown option key %s is a ConfigError", (key) => {
    expect(() => new JitHarness({ [key]: "x" } as never)).toThrow(expect.objectContaining({ _tag: "ConfigError", option: key }))
  })

  it("reads while a snapshot activates fail explicitly; after ready they answer", async () => {
    const harness = new JitHarness({
      format_version: 1,
      tools: [{ name: "one", language: "typescript", entrypoint: "one", source: codeTool("one", "1") }],
      text_tools: [],
      base_tools: [],
      unloaded_tools: []
    })
    expect(() => harness.listTools()).toThrow(expect.objectContaining({ _tag: "SnapshotError", reason: "Activation" }))
    expect(() => harness.definition("one")).toThrow(/await harness.ready/)
    await harness.ready
    expect(harness.listTools().map((entry) => entry.name)).toEqual(["one"])
  })
})

describe("request rules", () => {
  it("an update that changes nothing is a MissingField error, with or without empty files", async () => {
    const harness = new JitHarness()
    await harness.createTool({ entrypoint: "one", source: codeTool("one", "1") })
    for (const request of [{ name: "one" }, { name: "one", files: {} }, { name: "one", remove: [] }]) {
      expect(await rejection(harness.updateTool(request))).toMatchObject({ _tag: "InvalidToolRequest", reason: "MissingField" })
    }
  })

  it("Python sent without a language says which language was assumed and how to name another", async () => {
    const harness = new JitHarness()
    const error = await rejection(harness.createTool({ entrypoint: "py", source: "def py():\n    return 1\n" }))
    expect(error).toMatchObject({ _tag: "PackageError", reason: "CompileError" })
    expect(error.message).toMatch(/no language was given, so typescript was assumed; name another with language: "python"/)
  })

  it("the model's create_tool and the application's createTool refuse a malformed request with the same error", async () => {
    const harness = new JitHarness()
    const bad = { source: "x", entrypoint: "x", files: { "a.ts": 1 } }
    const fromApplication = await rejection(harness.createTool(bad as never))
    expect(fromApplication).toMatchObject({ _tag: "InvalidToolRequest" })
    const fromModel = await rejection(harness.callTool("create_tool", bad))
    expect(fromModel).toMatchObject({ _tag: "ValidationError" })
    const withDuration = await rejection(harness.callTool("create_tool", { source: "x", entrypoint: "x", duration: "forever" }))
    expect(withDuration).toMatchObject({ _tag: "InvalidToolRequest", reason: "FieldNotAllowed" })
    expect(await rejection(harness.createTool({ source: "x", entrypoint: "x", duration: "forever" } as never))).toMatchObject({
      _tag: "InvalidToolRequest",
      message: withDuration.message
    })
  })
})

describe("Session", () => {
  it("definitions offer the callable tools, then the exposed management tools, with the instruction block", async () => {
    const harness = new JitHarness({ tools: [add], inspectionTools: "hidden" })
    const offered = harness.definitions("chat_completions")
    expect(offered.instructions.length).toBeGreaterThan(100)
    expect(offered.tools[0]).toMatchObject({ name: "add", management: false, executionMode: "parallel" })
    const management = offered.tools.filter((tool) => tool.management).map((tool) => tool.name)
    expect(management).toContain("create_tool")
    expect(management).not.toContain("read_tool_source")
  })

  it("the local Sessions give one harness per id until it is forgotten", async () => {
    const { local } = await import("../src/Sessions.js")
    const sessions = local({ options: { tools: [add] } })
    const a = sessions.get("a")
    expect(sessions.get("a")).toBe(a)
    expect(sessions.get("b")).not.toBe(a)
    await sessions.forget("a")
    expect(sessions.get("a")).not.toBe(a)
    expect(await rejection(a.callTool("add", { left: 1, right: 1 }))).toMatchObject({ _tag: "HarnessReleased" })
  })
})

describe("Exit of a released harness in the Effect API", () => {
  it.effect("callTool fails typed", () =>
    Effect.gen(function*() {
      const harness = yield* Harness.make({ tools: [add] })
      yield* Effect.promise(() => harness.release())
      const exit = yield* Effect.exit(Harness.callTool("add", { left: 1, right: 1 }).pipe(Effect.provideService(Harness.Harness, harness)))
      expect(Exit.isFailure(exit)).toBe(true)
    }))
})

describe("one paging rule", () => {
  it("an offset at the end answers an empty page and one past it is OffsetOutOfRange, for text and lists alike", async () => {
    const harness = new JitHarness({ tools: [add] })
    await harness.createTool({ kind: "text", name: "notes", description: "Notes.", source: "abc" })
    expect(await harness.callTool("read_tool_source", { name: "notes", offset: 3 })).toMatchObject({ content: "", next_offset: null })
    expect(await harness.callTool("list_tools", { offset: 2 })).toMatchObject({ tools: [], next_offset: null })
    for (const [name, args] of [
      ["read_tool_source", { name: "notes", offset: 4 }],
      ["list_tools", { offset: 3 }],
      ["inspect_tool_calls", { name: "add", offset: 1 }],
      ["inspect_tool_errors", { offset: 10 }]
    ] as const) {
      expect(await rejection(harness.callTool(name, args))).toMatchObject({ _tag: "InvalidToolRequest", reason: "OffsetOutOfRange" })
    }
  })
})
