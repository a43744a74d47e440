import type { CodeRunner } from "@jitbox/core"
import { describe, expect, it } from "vitest"
import { SandboxError, SandboxRunner } from "../src/index.js"
import { context, rejection, settleProcesses, source, testOptions } from "./helpers.js"

const counter = () =>
  source("javascript", {
    "index.js": `let n = 0\nexport const main = tool({ description: "d" }, async ({ wait = 0 }) => {\n  await new Promise((r) => setTimeout(r, wait))\n  return { n: ++n, pid: process.pid }\n})`
  })

const count = async (code: CodeRunner.ActivatedCode) => ((await code.invoke({}, context())) as { n: number }).n

describe("WarmPool", () => {
  it("keeps at most maximumRuntimeEnvironments children and evicts the least recently used idle one", async () => {
    const runner = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 2 })
    try {
      const a = await runner.activate(counter())
      const b = await runner.activate(counter())
      expect([await count(a), await count(b), await count(a)]).toEqual([1, 1, 2])
      expect(runner.poolSize()).toBe(2)
      const c = await runner.activate(counter()) // evicts b: a was used more recently
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
      const codes = await Promise.all([runner.activate(counter()), runner.activate(counter()), runner.activate(counter())])
      expect(runner.poolSize()).toBe(2)
      for (const code of codes) expect(await count(code)).toBe(1)
      expect(runner.poolSize()).toBe(2)
    } finally {
      await runner.close()
    }
  })

  it("multiplexes concurrent invocations of one version in its one child", async () => {
    const runner = SandboxRunner.make(testOptions)
    try {
      const code = await runner.activate(counter())
      const started = Date.now()
      const results = await Promise.all(
        Array.from({ length: 6 }, () => code.invoke({ wait: 300 }, context())) as Array<Promise<{ n: number; pid: number }>>
      )
      expect(Date.now() - started).toBeLessThan(6 * 300)
      expect(new Set(results.map((r) => r.pid)).size).toBe(1)
      expect(results.map((r) => r.n).sort()).toEqual([1, 2, 3, 4, 5, 6])
      expect(runner.poolSize()).toBe(1)
    } finally {
      await runner.close()
    }
  })

  it("a busy child is never evicted: composition across versions works at a bound of 1", async () => {
    const runner = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 1 })
    try {
      const inner = await runner.activate(source("python", { "__init__.py": "@tool(guidelines='g')\ndef main(x: int) -> int:\n    return x + 1\n" }))
      const outer = await runner.activate(source("javascript", {
        "index.js": `export const main = tool({ description: "d" }, async ({ x }) => 10 * await harness.callTool("inner", { x }))`
      }))
      const result = await outer.invoke({ x: 1 }, { ...context(), callTool: (_name, args) => inner.invoke(args, context()) })
      expect(result).toBe(20)
      expect(runner.poolSize()).toBe(1) // the surplus child was evicted once idle
    } finally {
      await runner.close()
    }
  })

  it("a timeout kills the shared child, so the other invocations in flight fail with ChildExited", async () => {
    const runner = SandboxRunner.make({ ...testOptions, shortTimeoutSeconds: 1 })
    try {
      const code = await runner.activate(counter())
      const slow = code.invoke({ wait: 5_000 }, context({ callId: "slow" }))
      await new Promise((resolve) => setTimeout(resolve, 400))
      const sibling = code.invoke({ wait: 5_000 }, context({ callId: "sibling" }))
      const [timedOut, killed] = await Promise.all([rejection(slow), rejection(sibling)])
      expect(timedOut).toBeInstanceOf(SandboxError.SandboxError)
      expect(timedOut.reason).toBe("Timeout")
      expect(killed.reason).toBe("ChildExited")
      expect(killed.message).toContain("slow timed out")
      expect(await count(code)).toBe(1)
    } finally {
      await runner.close()
    }
  })

  it("retires a warm child that used half of its CPU limit once it is idle", async () => {
    const runner = SandboxRunner.make({ ...testOptions, limits: { ...testOptions.limits, cpuSeconds: 2 } })
    try {
      const code = await runner.activate(source("javascript", {
        "index.js": `let n = 0\nexport const main = tool({ description: "d" }, ({ burnMs = 0 }) => {\n  const start = process.cpuUsage()\n  for (let u = process.cpuUsage(start); u.user + u.system < burnMs * 1000; u = process.cpuUsage(start)) {}\n  return ++n\n})`
      }))
      expect(await code.invoke({}, context())).toBe(1)
      expect(await code.invoke({ burnMs: 1_000 }, context())).toBe(2)
      expect(await code.invoke({}, context())).toBe(1) // the retired child was replaced before its CPU rlimit
    } finally {
      await runner.close()
    }
    expect(await settleProcesses(runner)).toBe(0)
  })
})
