import type { CodeRunner } from "@jitbox/core"
import { HarnessError } from "@jitbox/core"
import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { SandboxError, SandboxRunner } from "../src/index.js"
import {
  activate,
  type Activated,
  eventually,
  MiniHarness,
  processesByChild,
  rejection,
  SessionId,
  settleProcesses,
  source,
  testOptions
} from "./helpers.js"

const counter = () =>
  source("javascript", {
    "index.js": `let n = 0\nexport const main = tool({ description: "d" }, async ({ wait = 0 }) => {\n  await new Promise((r) => setTimeout(r, wait))\n  return { n: ++n, child: process.env.JITBOX_SANDBOX_CHILD }\n})`
  })

const count = async (code: Activated) => ((await code.invoke({})) as { n: number }).n

/**
 * A tool that tells the host it started (and in which child), then waits at a gate the test opens:
 * invocations stay in flight exactly as long as the test needs, with no sleeps.
 */
const gated = () =>
  source("javascript", {
    "index.js": [
      `let n = 0`,
      `export const main = tool({ description: "d" }, async ({ tag }) => {`,
      `  const child = process.env.JITBOX_SANDBOX_CHILD`,
      `  await harness.callTool("started", { tag, child })`,
      `  await harness.callTool("gate", { tag })`,
      `  return { tag, child, n: ++n }`,
      `})`
    ].join("\n")
  })

const gate = () => {
  const started = new Map<string, { readonly parentCallId: string; readonly child: string }>()
  const waiting: Array<() => void> = []
  let open = false
  const host: CodeRunner.CallHost = {
    sessionId: SessionId,
    callTool: (parentCallId, name, args: any) => {
      if (name === "started") {
        started.set(args.tag, { parentCallId, child: args.child })
        return Promise.resolve(null)
      }
      return open ? Promise.resolve(null) : new Promise((resolve) => waiting.push(() => resolve(null)))
    }
  }
  return {
    host,
    started,
    open: () => {
      open = true
      for (const release of waiting.splice(0)) release()
    },
    close: () => {
      open = false
      started.clear()
    }
  }
}

/** Settles every promise at once, so a rejection is never unhandled while the test awaits another. */
const settle = (promises: ReadonlyArray<Promise<unknown>>) =>
  promises.map((promise) => promise.then((value) => ({ value }), (error: unknown) => ({ error })))

describe("WarmPool", () => {
  it("keeps at most maximumRuntimeEnvironments idle children and evicts the least recently used one", async () => {
    const runner = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 2 })
    try {
      const a = await activate(runner, counter())
      const b = await activate(runner, counter())
      expect([await count(a), await count(b), await count(a)]).toEqual([1, 1, 2])
      expect(runner.poolSize()).toBe(2)
      const c = await activate(runner, counter()) // evicts b's child: a's was used more recently
      expect(runner.poolSize()).toBe(2)
      expect(await count(c)).toBe(1)
      expect(await count(a)).toBe(3) // still warm: module state kept
      expect(await count(b)).toBe(1) // cold again: a fresh child, module state restarted
      expect(runner.poolSize()).toBe(2)
    } finally {
      await runner.close()
    }
  })

  it("trims back to the bound after concurrent activations", async () => {
    const runner = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 2 })
    try {
      const codes = await Promise.all([activate(runner, counter()), activate(runner, counter()), activate(runner, counter())])
      expect(runner.poolSize()).toBe(2)
      for (const code of codes) expect(await count(code)).toBe(1)
      expect(runner.poolSize()).toBe(2)
    } finally {
      await runner.close()
    }
  })

  it("runs five concurrent invocations of one version in five children: cancelling one kills only its process group", async () => {
    const runner = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 5 })
    const door = gate()
    try {
      const code = await activate(runner, gated(), door.host)
      const tags = ["a", "b", "c", "d", "e"]
      const controllers = tags.map(() => new AbortController())
      const outcomes = settle(tags.map((tag, i) => code.invoke({ tag }, { callId: `call-${tag}`, signal: controllers[i]!.signal })))
      await eventually(() => door.started.size === 5, "five invocations to start")
      // each in its own child, and each nested call named the invocation it came from
      expect(new Set([...door.started.values()].map((s) => s.child)).size).toBe(5)
      for (const tag of tags) expect(door.started.get(tag)?.parentCallId).toBe(`call-${tag}`)
      const victim = door.started.get("c")!.child
      expect(processesByChild(runner).has(victim)).toBe(true)

      controllers[2]!.abort()
      const cancelled = (await outcomes[2]) as { error: HarnessError.ToolCancelled }
      expect(cancelled.error).toBeInstanceOf(HarnessError.ToolCancelled)
      expect(cancelled.error.callId).toBe("call-c")
      await eventually(() => !processesByChild(runner).has(victim), "the cancelled invocation's process group to be gone")
      const survivors = tags.filter((tag) => tag !== "c")
      const alive = processesByChild(runner)
      for (const tag of survivors) expect(alive.has(door.started.get(tag)!.child)).toBe(true)

      door.open()
      const results = await Promise.all(survivors.map((tag) => outcomes[tags.indexOf(tag)]))
      expect(results).toEqual(survivors.map((tag) => ({ value: { tag, child: door.started.get(tag)!.child, n: 1 } })))
      expect(runner.poolSize()).toBe(4)
    } finally {
      await runner.close()
    }
    expect(await settleProcesses(runner)).toBe(0)
  })

  it("a deadline that passes times out only its own invocation; the others finish in their warm children", async () => {
    const runner = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 5 })
    const door = gate()
    try {
      const code = await activate(runner, gated(), door.host)
      const tags = ["a", "b", "c", "d", "e"]
      // warm five children first (all in flight at once), so the second round starts without a cold start
      const warming = settle(tags.map((tag) => code.invoke({ tag })))
      await eventually(() => door.started.size === 5, "five invocations to start")
      door.open()
      const warm = (await Promise.all(warming)) as Array<{ value: { child: string } }>
      expect(new Set(warm.map((r) => r.value.child)).size).toBe(5)
      door.close()

      const outcomes = settle(tags.map((tag) =>
        code.invoke({ tag }, { callId: `call-${tag}`, deadline: tag === "c" ? Date.now() + 2_000 : null })
      ))
      await eventually(() => door.started.size === 5, "five invocations to start")
      const victim = door.started.get("c")!.child
      const timedOut = (await outcomes[2]) as { error: SandboxError.SandboxError }
      expect(timedOut.error).toBeInstanceOf(SandboxError.SandboxError)
      expect(timedOut.error.reason).toBe("Timeout")
      expect(timedOut.error.message).toContain("ran past its deadline")
      await eventually(() => !processesByChild(runner).has(victim), "the timed-out invocation's process group to be gone")
      const survivors = tags.filter((tag) => tag !== "c")
      const alive = processesByChild(runner)
      for (const tag of survivors) expect(alive.has(door.started.get(tag)!.child)).toBe(true)

      door.open()
      const results = await Promise.all(survivors.map((tag) => outcomes[tags.indexOf(tag)]))
      // warm children: each ran its second invocation, module state kept
      expect(results).toEqual(survivors.map((tag) => ({ value: { tag, child: door.started.get(tag)!.child, n: 2 } })))
    } finally {
      await runner.close()
    }
  })

  it("the runner's own timeout kills only the invocation that ran out of time", async () => {
    const runner = SandboxRunner.make({ ...testOptions, shortTimeoutSeconds: 1 })
    try {
      const code = await activate(runner, counter())
      const outcomes = settle([code.invoke({ wait: 60_000 }, { callId: "slow" }), code.invoke({}, { callId: "quick" })])
      const slow = (await outcomes[0]) as { error: SandboxError.SandboxError }
      expect(slow.error.reason).toBe("Timeout")
      expect(slow.error.message).toContain("did not finish within 1000 ms")
      expect(await outcomes[1]).toEqual({ value: { n: 1, child: expect.any(String) } })
    } finally {
      await runner.close()
    }
  })

  it("a top-level invocation beyond the bound waits for a child instead of starting one", async () => {
    const runner = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 1 })
    const door = gate()
    try {
      const code = await activate(runner, gated(), door.host)
      const outcomes = settle([code.invoke({ tag: "first" }), code.invoke({ tag: "second" })])
      await eventually(() => door.started.size === 1, "the first invocation to start")
      door.open()
      const [first, second] = (await Promise.all(outcomes)) as Array<{ value: { child: string; n: number } }>
      // the second ran after the first, in the same child
      expect(second!.value.child).toBe(first!.value.child)
      expect([first!.value.n, second!.value.n].sort()).toEqual([1, 2])
      expect(runner.poolSize()).toBe(1)
    } finally {
      await runner.close()
    }
  })

  it("a waiting invocation can be cancelled, and times out by its deadline", async () => {
    const runner = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 1 })
    const door = gate()
    try {
      const code = await activate(runner, gated(), door.host)
      const busy = settle([code.invoke({ tag: "busy" })])[0]!
      await eventually(() => door.started.size === 1, "the first invocation to start")
      const controller = new AbortController()
      const waiting = settle([
        code.invoke({ tag: "cancelled" }, { callId: "waits", signal: controller.signal }),
        code.invoke({ tag: "late" }, { deadline: Date.now() + 200 })
      ])
      controller.abort()
      expect(((await waiting[0]) as { error: unknown }).error).toBeInstanceOf(HarnessError.ToolCancelled)
      const late = (await waiting[1]) as { error: SandboxError.SandboxError }
      expect(late.error.reason).toBe("Timeout")
      door.open()
      expect(await busy).toEqual({ value: expect.objectContaining({ tag: "busy" }) })
      expect(door.started.size).toBe(1)
    } finally {
      await runner.close()
    }
  })

  it("composition A → B → A and A → A does not deadlock at a bound of 1: a nested call re-enters the child where its caller waits", async () => {
    const runner = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 1 })
    try {
      const harness = new MiniHarness(runner)
      await harness.add("a", source("python", {
        "__init__.py": [
          "import os",
          "@tool(guidelines='g')",
          "def main(path: list) -> list:",
          "    here = os.environ['JITBOX_SANDBOX_CHILD']",
          "    if not path:",
          "        return [here]",
          "    return [here] + harness.call_tool_sync(path[0], path=path[1:])"
        ].join("\n")
      }))
      await harness.add("b", source("javascript", {
        "index.js": [
          `export const main = tool({ description: "d" }, async ({ path }) => {`,
          `  const here = process.env.JITBOX_SANDBOX_CHILD`,
          `  if (path.length === 0) return [here]`,
          `  return [here, ...await harness.callTool(path[0], { path: path.slice(1) })]`,
          `})`
        ].join("\n")
      }))
      const children = await harness.call("a", { path: ["b", "a", "a"] }) as Array<string>
      expect(children).toHaveLength(4)
      // a's child waits on b, b's on the inner a: the inner a calls run in the outer a's child
      expect(children[2]).toBe(children[0])
      expect(children[3]).toBe(children[0])
      expect(new Set(children).size).toBe(2)
      expect(harness.calls.map(({ depth, name }) => `${name}@${depth}`)).toEqual(["a@1", "b@2", "a@3", "a@4"])
      expect(new Set(await harness.call("b", { path: ["b", "b"] }) as Array<string>).size).toBe(1)
      // two nested calls of one invocation at once: the first re-enters; the second waits until the
      // first has ended (a child's invocations form one chain), then re-enters too
      await harness.add("fork", source("javascript", {
        "index.js": [
          `let running = 0`,
          `export const main = tool({ description: "d" }, async ({ depth }) => {`,
          `  const here = process.env.JITBOX_SANDBOX_CHILD`,
          `  if (depth === 0) {`,
          `    const together = ++running`,
          `    await new Promise((resolve) => setTimeout(resolve, 200))`,
          `    running--`,
          `    return [[here, together]]`,
          `  }`,
          `  const [left, right] = await Promise.all([harness.callTool("fork", { depth: 0 }), harness.callTool("fork", { depth: 0 })])`,
          `  return [[here, 0], ...left, ...right]`,
          `})`
        ].join("\n")
      }))
      const forked = await harness.call("fork", { depth: 1 }) as Array<[string, number]>
      expect(forked.map(([, together]) => together)).toEqual([0, 1, 1])
      expect(new Set(forked.map(([here]) => here)).size).toBe(1)
      // concurrent composed calls too
      const both = await Promise.all([harness.call("a", { path: ["a"] }), harness.call("a", { path: ["b", "a"] })])
      expect(both.map((path) => (path as Array<string>).length)).toEqual([2, 3])
      await eventually(() => runner.poolSize() <= 1, "the surplus children to be evicted once idle")
    } finally {
      await runner.close()
    }
  })

  it("release waits for the invocations in flight, then kills the activation's children; it never rejects", async () => {
    const runner = SandboxRunner.make(testOptions)
    const door = gate()
    try {
      const code = await activate(runner, gated(), door.host)
      const running = settle([code.invoke({ tag: "running" })])[0]!
      await eventually(() => door.started.size === 1, "the invocation to start")
      let released = false
      const release = code.dispose().then(() => (released = true))
      const refused = await rejection(code.invoke({ tag: "after" }))
      expect(refused).toBeInstanceOf(HarnessError.PackageError)
      expect(refused.reason).toBe("NoRunner")
      expect(released).toBe(false)
      door.open()
      expect(await running).toEqual({ value: expect.objectContaining({ tag: "running" }) })
      await release
      expect(released).toBe(true)
      expect(runner.poolSize()).toBe(0)
      expect(await settleProcesses(runner)).toBe(0)
      await expect(runner.release(code.activationId)).resolves.toBeUndefined()
      await expect(runner.release("never-activated")).resolves.toBeUndefined()
    } finally {
      await runner.close()
    }
  })

  it("cancelling one Bash invocation leaves the others running in their own children", async () => {
    const runner = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 3 })
    try {
      const code = await activate(runner, source("bash", {
        "main.sh": "IFS= read -r seconds\nsleep \"$seconds\"\nprintf '\"%s\"' \"$JITBOX_SANDBOX_CHILD\"\n"
      }))
      const sleeping = () =>
        runner.processes().filter((pid) => {
          try {
            return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith("sleep\u0000")
          } catch {
            return false
          }
        })
      const controller = new AbortController()
      const outcomes = settle([
        code.invoke(2, { callId: "first" }),
        code.invoke(60, { callId: "victim", signal: controller.signal }),
        code.invoke(2, { callId: "third" })
      ])
      await eventually(() => sleeping().length === 3, "three scripts to be running")
      controller.abort()
      expect(((await outcomes[1]) as { error: unknown }).error).toBeInstanceOf(HarnessError.ToolCancelled)
      const [first, third] = (await Promise.all([outcomes[0], outcomes[2]])) as Array<{ value: string }>
      expect(typeof first!.value).toBe("string")
      expect(typeof third!.value).toBe("string")
      expect(first!.value).not.toBe(third!.value)
      await eventually(() => sleeping().length === 0, "the cancelled script's sleep to be gone")
    } finally {
      await runner.close()
    }
  })

  it("a busy child is never evicted: composition across versions works at a bound of 1", async () => {
    const runner = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 1 })
    try {
      const harness = new MiniHarness(runner)
      await harness.add("inner", source("python", { "__init__.py": "@tool(guidelines='g')\ndef main(x: int) -> int:\n    return x + 1\n" }))
      await harness.add("outer", source("javascript", {
        "index.js": `export const main = tool({ description: "d" }, async ({ x }) => 10 * await harness.callTool("inner", { x }))`
      }))
      expect(await harness.call("outer", { x: 1 })).toBe(20)
      expect(runner.poolSize()).toBe(1) // the surplus child was evicted once idle
    } finally {
      await runner.close()
    }
  })

  it("retires a warm child that used half of its CPU limit once it is idle", async () => {
    const runner = SandboxRunner.make({ ...testOptions, limits: { ...testOptions.limits, cpuSeconds: 2 } })
    try {
      const code = await activate(runner, source("javascript", {
        "index.js": `let n = 0\nexport const main = tool({ description: "d" }, ({ burnMs = 0 }) => {\n  const start = process.cpuUsage()\n  for (let u = process.cpuUsage(start); u.user + u.system < burnMs * 1000; u = process.cpuUsage(start)) {}\n  return ++n\n})`
      }))
      expect(await code.invoke({})).toBe(1)
      expect(await code.invoke({ burnMs: 1_000 })).toBe(2)
      expect(await code.invoke({})).toBe(1) // the retired child was replaced before its CPU rlimit
    } finally {
      await runner.close()
    }
    expect(await settleProcesses(runner)).toBe(0)
  })
})
