/**
 * The request lifecycle of a harness (LIFE-01..05, LIFE-07, LIFE-08): attach binds one request and
 * its base tools, detach releases them, and nothing kept from a finished request can call back in.
 */
import { afterEach, describe, expect, it } from "vitest"
import { HarnessError, JitHarness, tool } from "../src/index.js"
import type { InvocationContext } from "../src/CodeRunner.js"

const adder = (label: string) =>
  tool({
    name: "add",
    description: `Add two integers (${label}).`,
    guidelines: "Use for integer addition.",
    parameters: {
      type: "object",
      properties: { left: { type: "integer" }, right: { type: "integer" } },
      required: ["left", "right"]
    }
  }, ({ left, right }: { left: number; right: number }) => label === "application" ? left + right : left + right + 1000)

const twiceSource = `export const twice = tool({
  description: "Add the same integer twice.",
  guidelines: "Use to add an integer to itself.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }) => await harness.callTool("add", { left: value, right: value }))
`

const rejection = async (promise: Promise<unknown>): Promise<any> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error("expected a rejection, but the promise resolved")
}

const harnesses: Array<JitHarness> = []
const track = (harness: JitHarness): JitHarness => {
  harnesses.push(harness)
  return harness
}
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((harness) => harness.release()))
})

const stateOf = (harness: JitHarness, name: string) => harness.listTools().find((t) => t.name === name)?.state

describe("attach, detach and active (LIFE-02, LIFE-04, LIFE-05)", () => {
  it("LIFE-02 active tells whether a request is bound", () => {
    const harness = track(new JitHarness())
    const request = {}
    expect(harness.active).toBe(false)
    harness.attach(request)
    expect(harness.active).toBe(true)
    harness.detach(request)
    expect(harness.active).toBe(false)
  })

  it("LIFE-04 attaching while a request is attached throws and keeps the first request", async () => {
    const harness = track(new JitHarness())
    const first = {}
    harness.attach(first, [adder("request")])
    expect(() => harness.attach({}, [adder("application")])).toThrow(HarnessError.InvalidToolRequest)
    expect(() => harness.attach(first)).toThrow(/already attached/)
    expect(harness.active).toBe(true)
    expect(await harness.callTool("add", { left: 1, right: 2 })).toBe(1003)
    harness.detach(first)
    expect(harness.active).toBe(false)
  })

  it("LIFE-05 detaching an older request is ignored: the running request keeps its bindings", async () => {
    const harness = track(new JitHarness())
    const older = {}
    const current = {}
    harness.attach(older, [adder("request")])
    harness.detach(older)
    harness.attach(current, [adder("request")])
    harness.detach(older)
    harness.detach({})
    expect(harness.active).toBe(true)
    expect(stateOf(harness, "add")).toBe("loaded")
    expect(await harness.callTool("add", { left: 1, right: 2 })).toBe(1003)
    harness.detach(current)
    expect(harness.active).toBe(false)
    expect(stateOf(harness, "add")).toBe("unbound")
  })

  it("LIFE-04 an attach whose tools cannot be bound attaches nothing and binds nothing", async () => {
    const harness = track(new JitHarness({ tools: [adder("application")] }))
    await harness.createTool({ entrypoint: "twice", source: twiceSource })
    const other = tool({ name: "other", description: "Another tool.", guidelines: "Use in tests." }, () => "other")
    const clash = tool({ name: "twice", description: "The application's twice.", guidelines: "Use in tests." }, () => "app")
    const before = harness.listTools()
    expect(() => harness.attach({}, [adder("request"), other, clash])).toThrow(HarnessError.NameConflict)
    expect(harness.active).toBe(false)
    expect(harness.listTools()).toEqual(before)
    expect(await harness.callTool("add", { left: 1, right: 2 })).toBe(3)

    const next = {}
    harness.attach(next, [other])
    expect(await harness.callTool("other", {})).toBe("other")
    harness.detach(next)
  })

  it("a request can attach again after it was detached", () => {
    const harness = track(new JitHarness())
    const request = {}
    harness.attach(request)
    harness.detach(request)
    harness.attach(request)
    expect(harness.active).toBe(true)
  })
})

describe("request-scoped bindings (LIFE-01, LIFE-08)", () => {
  it("LIFE-01 a request's base tools are released at detach: unbound, and calls are rejected MissingBinding", async () => {
    const harness = track(new JitHarness())
    await harness.createTool({ entrypoint: "twice", source: twiceSource })
    const request = {}
    harness.attach(request, [adder("request")])
    expect(await harness.callTool("twice", { value: 1 })).toBe(1002)
    harness.detach(request)

    expect(stateOf(harness, "add")).toBe("unbound")
    expect(harness.modelTools().map((t) => t.name)).toEqual(["twice"])
    const direct = await rejection(harness.callTool("add", { left: 1, right: 2 }))
    expect(direct).toBeInstanceOf(HarnessError.ToolRejected)
    expect(direct.reason).toBe("MissingBinding")
    const nested = await rejection(harness.callTool("twice", { value: 1 }))
    expect(nested.reason).toBe("MissingBinding")
    expect(harness.profile("add").calls.slice(0, 2).map((c) => c.status)).toEqual(["rejected", "rejected"])
  })

  it("LIFE-01 an application binding shadowed by a request comes back at detach", async () => {
    const harness = track(new JitHarness({ tools: [adder("application")] }))
    const request = {}
    harness.attach(request, [adder("request")])
    expect(await harness.callTool("add", { left: 1, right: 2 })).toBe(1003)
    harness.detach(request)
    expect(stateOf(harness, "add")).toBe("loaded")
    expect(await harness.callTool("add", { left: 1, right: 2 })).toBe(3)
  })

  it("LIFE-08 base tools bound late are adopted before the next dispatch", async () => {
    const harness = track(new JitHarness())
    await harness.createTool({ entrypoint: "twice", source: twiceSource })
    expect(await rejection(harness.callTool("twice", { value: 2 }))).toBeInstanceOf(HarnessError.ToolNotFound)
    harness.bindBaseTools([adder("application")])
    expect(await harness.callTool("twice", { value: 2 })).toBe(4)
    harness.bindBaseTools({ add: adder("replacement") })
    expect(await harness.callTool("twice", { value: 2 })).toBe(1004)
  })
})

describe("stale contexts (LIFE-07)", () => {
  it("a base tool's context kept after the request cannot call back in, and leaves no record or error", async () => {
    let kept: InvocationContext | undefined
    const keeper = tool({
      name: "keeper",
      description: "Keeps its invocation context.",
      guidelines: "Use in tests."
    }, (_args: unknown, context: InvocationContext) => {
      kept = context
      return "kept"
    })
    const harness = track(new JitHarness({ tools: [adder("application")] }))
    const request = {}
    harness.attach(request, [keeper])
    expect(await harness.callTool("keeper", {})).toBe("kept")
    expect(await kept!.callTool("add", { left: 1, right: 1 })).toBe(2)
    harness.detach(request)

    const calls = harness.profile().total_calls
    const errors = harness.toolErrors().retained_errors
    const error = await rejection(kept!.callTool("add", { left: 1, right: 2 }))
    expect(error).toBeInstanceOf(HarnessError.ToolRejected)
    expect(error.reason).toBe("NoActiveInvocation")

    // Not even once a new request is attached.
    const later = {}
    harness.attach(later, [keeper])
    expect((await rejection(kept!.callTool("add", { left: 1, right: 2 }))).reason).toBe("NoActiveInvocation")
    harness.detach(later)
    expect(harness.profile().total_calls).toBe(calls)
    expect(harness.toolErrors().retained_errors).toBe(errors)
  })

  it("a code tool that keeps its context or harness after its call ended is refused, without records", async () => {
    const key = `__jitbox_lifecycle_${process.pid}`
    const harness = track(new JitHarness({ tools: [adder("application")] }))
    await harness.createTool({
      entrypoint: "leaky",
      source: `export const leaky = tool({ description: "Keeps what it should not.", guidelines: "Use in tests." }, async (_args, context) => {
  globalThis[${JSON.stringify(key)}] = {
    viaContext: () => context.callTool("add", { left: 2, right: 2 }),
    viaHarness: () => harness.callTool("add", { left: 3, right: 3 })
  }
  return await harness.callTool("add", { left: 1, right: 1 })
})`
    })
    const request = {}
    harness.attach(request)
    expect(await harness.callTool("leaky", {})).toBe(2)
    const leaked = (globalThis as any)[key] as { viaContext: () => Promise<unknown>; viaHarness: () => Promise<unknown> }
    harness.detach(request)
    const calls = harness.profile().total_calls
    const errors = harness.toolErrors().retained_errors

    const viaContext = await rejection(leaked.viaContext())
    expect(viaContext).toBeInstanceOf(HarnessError.ToolRejected)
    expect(viaContext.reason).toBe("NoActiveInvocation")
    const viaHarness = await rejection(leaked.viaHarness())
    expect(viaHarness).toBeInstanceOf(HarnessError.ToolRejected)
    expect(viaHarness.reason).toBe("NoActiveInvocation")
    expect(harness.profile().total_calls).toBe(calls)
    expect(harness.toolErrors().retained_errors).toBe(errors)
    delete (globalThis as any)[key]
  })
})

describe("release", () => {
  it("ends event subscriptions", async () => {
    const harness = new JitHarness()
    const subscription = harness.subscribe()
    const iterator = subscription[Symbol.asyncIterator]()
    const pending = iterator.next()
    await harness.release()
    expect(await pending).toEqual({ value: undefined, done: true })
  })
})
