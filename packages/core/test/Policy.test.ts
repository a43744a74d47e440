import { it as effect } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import { describe, expect, it } from "vitest"
import { flush, rejection as failure } from "./fixtures.js"
import { Harness, HarnessError, JitHarness, JitPolicy } from "../src/index.js"

/** Calls `name` in a fiber, so a test can move the TestClock while it runs. */
const callInFiber = (harness: JitHarness, name: string, args: unknown) =>
  Effect.fork(Effect.either(Effect.tryPromise({ try: () => harness.callTool(name, args), catch: (error) => error as { _tag: string; seconds?: number } })))

/** Lets promise callbacks run between TestClock moves. */
const settle = Effect.promise(() => flush())

const slowTool = `export const slow = tool({
  description: "Wait, then answer.",
  guidelines: "Use to wait.",
  parameters: { type: "object", properties: { ms: { type: "integer" } }, required: ["ms"] }
}, async ({ ms }, context) => {
  await new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    context.signal?.addEventListener("abort", () => { clearTimeout(timer); reject(context.signal.reason) })
  })
  return ms
})`

const echo = (body = "args") =>
  `export const echo = tool({ description: "Echo.", guidelines: "Use to echo." }, (args) => ${body})`


describe("JitPolicy (JT-POL, JT-CFG, JT-PRF-01)", () => {
  it("applies 003's defaults for a newly configured policy", () => {
    const policy = JitPolicy.make({})
    expect(policy).toMatchObject({
      allowedLanguages: ["Python"],
      allowLongRunning: false,
      allowAsyncOperations: false,
      returnExecutionErrors: false,
      maximumInvocations: 16,
      maximumConcurrentInvocations: 2,
      maximumRuntimeEnvironments: 2,
      maximumRepairs: 1,
      shortInvocationTimeoutSeconds: 200,
      provisioningTimeoutSeconds: 1800,
      leaseLifetimeSeconds: 3600,
      maximumTools: 8,
      invocationTimeoutSeconds: 1800
    })
  })

  it.each([
    [{ maximumInvocations: 0 }, "maximumInvocations"],
    [{ maximumInvocations: 6401 }, "maximumInvocations"],
    [{ maximumConcurrentInvocations: 9 }, "maximumConcurrentInvocations"],
    [{ maximumRepairs: 9 }, "maximumRepairs"],
    [{ shortInvocationTimeoutSeconds: 225 }, "shortInvocationTimeoutSeconds"],
    [{ invocationTimeoutSeconds: 224 }, "invocationTimeoutSeconds"],
    [{ allowedLanguages: [] }, "allowedLanguages"],
    [{ allowedLanguages: ["Python", "Python"] }, "allowedLanguages"],
    [{ allowedLanguages: ["Ruby"] }, "allowedLanguages"],
    [{ maximumTools: 17 }, "maximumTools"],
    [{ leaseLifetimeSeconds: 29 }, "leaseLifetimeSeconds"]
  ])("rejects %j with a ConfigError naming %s", (input, field) => {
    const error = (() => {
      try {
        JitPolicy.make(input as never)
      } catch (e) {
        return e as HarnessError.ConfigError
      }
    })()
    expect(error?._tag).toBe("ConfigError")
    expect(error?.message).toContain(field)
  })

  it("rejects concurrency above the invocation budget (JT-POL-11)", () => {
    expect(() => JitPolicy.make({ maximumInvocations: 2, maximumConcurrentInvocations: 3 })).toThrow(/cannot exceed/)
  })

  it("intersects a request with a profile ceiling and never widens it (JT-PRF-01/02)", () => {
    const ceiling = JitPolicy.make({ allowedLanguages: ["Python", "Bash"], maximumInvocations: 10, allowAsyncOperations: true })
    const request = JitPolicy.make({
      allowedLanguages: ["Python", "JavaScript"],
      maximumInvocations: 100,
      allowAsyncOperations: true,
      allowLongRunning: true
    })
    const effective = JitPolicy.intersect(ceiling, request)
    expect(effective.allowedLanguages).toEqual(["Python"])
    expect(effective.maximumInvocations).toBe(10)
    expect(effective.allowAsyncOperations).toBe(true)
    expect(effective.allowLongRunning).toBe(false)
    expect(() => JitPolicy.intersect(ceiling, JitPolicy.make({ allowedLanguages: ["C#"] }))).toThrow(/no requested language/)
  })
})

describe("a harness under a policy", () => {
  it("refuses languages the policy does not allow (JT-POL-04)", async () => {
    const harness = new JitHarness({ policy: { allowedLanguages: ["Python"] } })
    const error = await failure(harness.createTool({ entrypoint: "echo", source: echo() }))
    expect(error._tag).toBe("PolicyViolation")
    expect(error.reason).toBe("LanguageNotAllowed")
    expect(harness.listTools()).toEqual([])
  })

  it("bounds tool versions and repairs, and a failed creation spends nothing (JT-CFG-06, JT-POL-13, D-20)", async () => {
    const harness = new JitHarness({ policy: { allowedLanguages: ["JavaScript"], maximumTools: 2, maximumRepairs: 1 } })
    expect((await failure(harness.createTool({ entrypoint: "echo", source: "export const echo = (" })))._tag).toBe("PackageError")
    await harness.createTool({ entrypoint: "echo", source: echo() })
    await harness.updateTool({ name: "echo", source: echo("({ again: args })") })
    const third = await failure(harness.createTool({ name: "other", entrypoint: "echo", source: echo() }))
    expect(third.reason).toBe("ToolBudgetExhausted")
    expect(harness.admission.usage().versions).toBe(2)
    expect(harness.admission.usage().repairs).toBe(1)
    expect(await harness.callTool("echo", { a: 1 })).toEqual({ again: { a: 1 } })
  })

  it("rejects calls past the invocation budget before any handler runs, with a rejected record", async () => {
    const harness = new JitHarness({ policy: { allowedLanguages: ["JavaScript"], maximumInvocations: 2 } })
    await harness.createTool({ entrypoint: "echo", source: echo() })
    await harness.callTool("echo", {})
    await harness.callTool("echo", {})
    const error = await failure(harness.callTool("echo", {}))
    expect(error._tag).toBe("ToolRejected")
    expect(error.reason).toBe("BudgetExhausted")
    const stats = harness.profileStats("echo")
    expect([stats.completed_count, stats.rejected_count]).toEqual([2, 1])
  })

  it("counts example runs against the invocation budget and refuses examples that do not fit (D-20)", async () => {
    const harness = new JitHarness({ policy: { allowedLanguages: ["JavaScript"], maximumInvocations: 2 } })
    const examples = [{ input: { a: 1 }, expected_output: { a: 1 } }]
    await harness.createTool({ entrypoint: "echo", source: echo(), examples })
    expect(harness.admission.usage().invocations).toBe(1)
    const error = await failure(
      harness.createTool({ name: "echo2", entrypoint: "echo", source: echo(), examples: [...examples, ...examples] })
    )
    expect(error.reason).toBe("InvocationBudgetExhausted")
  })

  it("runs at most maximumConcurrentInvocations code calls at once (JT-POL-11)", async () => {
    const harness = new JitHarness({ policy: { allowedLanguages: ["JavaScript"], maximumConcurrentInvocations: 1 } })
    await harness.createTool({
      entrypoint: "probe",
      source: `let running = 0, peak = 0
export const probe = tool({ description: "Measure overlap.", guidelines: "Use in tests." }, async () => {
  running++; peak = Math.max(peak, running)
  await new Promise((resolve) => setTimeout(resolve, 20))
  running--
  return peak
})`
    })
    const peaks = await Promise.all([harness.callTool("probe"), harness.callTool("probe"), harness.callTool("probe")])
    expect(Math.max(...(peaks as Array<number>))).toBe(1)
  })

  it("a composition deeper than the slots runs on its first caller's slot; other calls still wait for one (JT-POL-11)", async () => {
    const harness = new JitHarness({ policy: { allowedLanguages: ["JavaScript"], maximumConcurrentInvocations: 1, shortInvocationTimeoutSeconds: 20 } })
    const plain = (name: string, body: string) => `export const ${name} = tool({ description: "A link of a chain.", guidelines: "Use in tests." }, async () => ${body})`
    await harness.createTool({ entrypoint: "c", source: plain("c", `"c"`) })
    await harness.createTool({ entrypoint: "b", source: plain("b", `"b" + await harness.callTool("c", {})`) })
    await harness.createTool({
      entrypoint: "a",
      source: `let running = 0, peak = 0
export const a = tool({ description: "The head of a chain.", guidelines: "Use in tests." }, async () => {
  running++; peak = Math.max(peak, running)
  const rest = await harness.callTool("b", {})
  await new Promise((resolve) => setTimeout(resolve, 20))
  running--
  return { chain: "a" + rest, peak }
})`
    })
    const results = await Promise.all([harness.callTool("a"), harness.callTool("a"), harness.callTool("a")]) as Array<{ chain: string; peak: number }>
    expect(results.map((result) => result.chain)).toEqual(["abc", "abc", "abc"])
    expect(Math.max(...results.map((result) => result.peak))).toBe(1)
    expect(harness.profile().calls.filter((call) => call.status === "completed")).toHaveLength(9)
  })

  effect.effect("stops a code call at the short timeout with a ToolTimeout failure, on the harness's clock (JT-POL-14)", () =>
    Effect.gen(function*() {
      const harness = yield* Harness.makeScoped({ policy: { allowedLanguages: ["JavaScript"], shortInvocationTimeoutSeconds: 7 } })
      yield* Effect.promise(() => harness.createTool({ entrypoint: "slow", source: slowTool }))
      const call = yield* callInFiber(harness, "slow", { ms: 600_000 })
      yield* settle
      yield* TestClock.adjust("6999 millis")
      yield* settle
      expect(call.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 millis")
      const outcome = yield* Fiber.join(call)
      expect(outcome._tag === "Left" && outcome.left).toMatchObject({ _tag: "ToolTimeout", seconds: 7 })
      const record = harness.profile("slow").calls[0]
      expect(record?.status).toBe("failed")
      expect(record?.error_type).toBe("ToolTimeout")
    }).pipe(Effect.scoped))

  it("has no budgets without a policy (D-21)", async () => {
    const harness = new JitHarness()
    await harness.createTool({ entrypoint: "echo", source: echo() })
    for (let i = 0; i < 40; i++) await harness.callTool("echo", {})
    expect(harness.admission.policy).toBeUndefined()
    expect(harness.profileStats("echo").completed_count).toBe(40)
  })
})

describe("asynchronous operations (D-19, JT-POL-08)", () => {
  const withAsync = async (extra: Record<string, unknown> = {}) => {
    const harness = new JitHarness({
      policy: { allowedLanguages: ["JavaScript"], allowAsyncOperations: true, maximumInvocations: 100, ...extra }
    })
    await harness.createTool({ entrypoint: "slow", source: slowTool })
    return harness
  }

  it("are absent unless the policy allows them", async () => {
    const harness = new JitHarness({ policy: { allowedLanguages: ["JavaScript"] } })
    expect((await failure(harness.callTool("start_invocation", { name: "x" })))._tag).toBe("ToolNotFound")
    expect(() => harness.startInvocation("x")).toThrow(/allowAsyncOperations/)
    expect(harness.operationTools()).toEqual([])
  })

  effect.effect("start answers at once; await returns finished results once and lists the running ids, on the harness's clock", () =>
    Effect.gen(function*() {
      const harness = yield* Harness.makeScoped({
        policy: { allowedLanguages: ["JavaScript"], allowAsyncOperations: true, maximumInvocations: 100 }
      })
      yield* Effect.promise(() => harness.createTool({ entrypoint: "slow", source: slowTool }))
      const start = (ms: number) =>
        Effect.promise(() => harness.callTool("start_invocation", { name: "slow", arguments: { ms } }) as Promise<{ invocation_id: string }>)
      const fast = yield* start(0)
      const long = yield* start(600_000)
      const waiting = yield* Effect.fork(Effect.promise(() =>
        harness.callTool("await_invocations", { invocation_ids: [fast.invocation_id, long.invocation_id], timeout_seconds: 30 }) as Promise<{
          finished: Array<{ invocation_id: string; status: string; result: unknown }>
          running: Array<string>
        }>
      ))
      yield* settle
      yield* TestClock.adjust("29 seconds")
      yield* settle
      expect(waiting.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 second")
      const first = yield* Fiber.join(waiting)
      expect(first.finished).toEqual([{ invocation_id: fast.invocation_id, tool_name: "slow", status: "completed", result: 0 }])
      expect(first.running).toEqual([long.invocation_id])
      expect((yield* Effect.promise(() => failure(harness.awaitInvocations([fast.invocation_id]))))._tag).toBe("InvalidToolRequest")
      expect(harness.cancelInvocation(long.invocation_id)).toEqual({ invocation_id: long.invocation_id, status: "cancelled" })
      const second = yield* Effect.promise(() => harness.awaitInvocations([long.invocation_id], 1))
      expect(second.finished[0]?.status).toBe("cancelled")
      expect(harness.profileStats("slow").cancelled_count).toBe(1)
    }).pipe(Effect.scoped))

  it("cancel is idempotent and bounds the id count", async () => {
    const harness = await withAsync({ maximumConcurrentInvocations: 1 })
    const { invocation_id } = harness.startInvocation("slow", { ms: 1_000 })
    expect(harness.cancelInvocation(invocation_id).status).toBe("cancelled")
    expect(harness.cancelInvocation(invocation_id).status).toBe("cancelled")
    await expect(harness.awaitInvocations([], 0)).rejects.toThrow(/1 to 16/)
    await expect(harness.awaitInvocations(Array.from({ length: 17 }, () => invocation_id), 0)).rejects.toThrow(/1 to 16/)
    await expect(harness.awaitInvocations([invocation_id], 500)).rejects.toThrow(/timeout_seconds/)
  })

  it("past the concurrency bound a start queues and runs when a slot frees; past the invocation budget it is refused", async () => {
    const harness = await withAsync({ maximumConcurrentInvocations: 1, maximumInvocations: 3 })
    const first = harness.startInvocation("slow", { ms: 200 })
    const second = harness.startInvocation("slow", { ms: 1 })
    expect(first.status).toBe("running")
    expect(second.status).toBe("queued")
    const waiting = await harness.awaitInvocations([second.invocation_id], 0)
    expect(waiting.running).toEqual([second.invocation_id])
    // one invocation spent by the running start: the budget of 3 pays for two queued ones, not three
    const third = harness.startInvocation("slow", { ms: 1 })
    expect(third.status).toBe("queued")
    expect(() => harness.startInvocation("slow", { ms: 1 })).toThrow(/invocation budget/)
    const done = await harness.awaitInvocations([first.invocation_id, second.invocation_id, third.invocation_id], 5)
    expect(done.finished.map((item) => item.status)).toEqual(["completed", "completed", "completed"])
    expect(harness.profileStats("slow").completed_count).toBe(3)
  })

  it("a queued start that is cancelled never runs", async () => {
    const harness = await withAsync({ maximumConcurrentInvocations: 1 })
    const first = harness.startInvocation("slow", { ms: 100 })
    const queued = harness.startInvocation("slow", { ms: 1 })
    expect(harness.cancelInvocation(queued.invocation_id).status).toBe("cancelled")
    const done = await harness.awaitInvocations([first.invocation_id, queued.invocation_id], 5)
    expect(done.finished.map((item) => item.status)).toEqual(["completed", "cancelled"])
    expect(harness.profileStats("slow").call_count).toBe(1)
  })

  it("releasing the harness cancels what runs and forgets unread results", async () => {
    const harness = await withAsync()
    const { invocation_id } = harness.startInvocation("slow", { ms: 5_000 })
    await harness.release()
    expect(() => harness.cancelInvocation(invocation_id)).toThrow(/no invocation/)
  })
})

describe("duration classes (JT-CTR-02)", () => {
  it("a long tool needs allowLongRunning", async () => {
    const strict = new JitHarness({ policy: { allowedLanguages: ["JavaScript"], shortInvocationTimeoutSeconds: 1 } })
    const refused = await failure(strict.createTool({ entrypoint: "slow", source: slowTool, duration: "long" }))
    expect(refused.reason).toBe("LongRunningNotAllowed")
  })

  effect.effect("a long tool gets the long timeout instead of the short one, on the harness's clock", () =>
    Effect.gen(function*() {
      const open = yield* Harness.makeScoped({
        policy: { allowedLanguages: ["JavaScript"], allowLongRunning: true, shortInvocationTimeoutSeconds: 1, invocationTimeoutSeconds: 300 }
      })
      yield* Effect.promise(() => open.createTool({ entrypoint: "slow", source: slowTool, duration: "long" }))
      yield* Effect.promise(() => open.createTool({ name: "quick", entrypoint: "slow", source: slowTool }))
      const long = yield* callInFiber(open, "slow", { ms: 600_000 })
      const quick = yield* callInFiber(open, "quick", { ms: 600_000 })
      yield* settle
      yield* TestClock.adjust("1 second")
      const quickOutcome = yield* Fiber.join(quick)
      expect(quickOutcome._tag === "Left" && quickOutcome.left).toMatchObject({ _tag: "ToolTimeout", seconds: 1 })
      yield* settle
      yield* TestClock.adjust("298 seconds")
      yield* settle
      expect(long.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 second")
      const longOutcome = yield* Fiber.join(long)
      expect(longOutcome._tag === "Left" && longOutcome.left).toMatchObject({ _tag: "ToolTimeout", seconds: 300 })
      expect(open.snapshot().tools.find((tool) => tool.name === "slow")?.duration).toBe("long")
    }).pipe(Effect.scoped))
})
