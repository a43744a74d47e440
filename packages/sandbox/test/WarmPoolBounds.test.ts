/**
 * The warm pool's own bounds (`warmChildren`, `warmChildrenPerLanguage`, `childrenPerActivation`,
 * `idleChildrenPerActivation`) and what they buy: once warm, calls of a tool, alone or composed one
 * and two deep, sequential or concurrent, start no child at all (`started()` counts them).
 */
import type { CodeRunner } from "@jitbox/core"
import { HarnessError } from "@jitbox/core"
import { describe, expect, it } from "vitest"
import { SandboxConfig, SandboxRunner } from "../src/index.js"
import { activate, type Activated, eventually, MiniHarness, SessionId, source, testOptions } from "./helpers.js"

const counter = (language: "javascript" | "typescript" = "javascript") =>
  source(language, {
    [language === "typescript" ? "index.ts" : "index.js"]:
      `let n = 0\nexport const main = tool({ description: "d" }, async () => ({ n: ++n }))`
  })

const count = async (code: Activated) => ((await code.invoke({})) as { n: number }).n

/**
 * A tool that calls the tools its `path` names, one inside the other, and answers the child each ran
 * in; the innermost waits at the host's barrier, so concurrent chains hold all their children at once.
 */
const link = () =>
  source("javascript", {
    "index.js": [
      `export const main = tool({ description: "d" }, async ({ path }) => {`,
      `  const here = process.env.JITBOX_SANDBOX_CHILD`,
      `  if (path.length === 0) return (await harness.callTool("barrier", {}), [here])`,
      `  return [here, ...await harness.callTool(path[0], { path: path.slice(1) })]`,
      `})`
    ].join("\n")
  })

/** A tool that tells the host it started, then waits until the test opens the gate. */
const gated = () =>
  source("javascript", {
    "index.js": [
      `export const main = tool({ description: "d" }, async ({ tag }) => {`,
      `  await harness.callTool("started", { tag })`,
      `  await harness.callTool("gate", {})`,
      `  return tag`,
      `})`
    ].join("\n")
  })

/** Lets calls through `parties` at a time: the last to arrive releases the others. */
const barrier = () => {
  let waiting: Array<() => void> = []
  const state = { parties: 1 }
  const arrive = () =>
    new Promise<null>((resolve) => {
      waiting.push(() => resolve(null))
      if (waiting.length < state.parties) return
      const released = waiting
      waiting = []
      for (const release of released) release()
    })
  return { state, arrive }
}

const gate = () => {
  const started = new Set<string>()
  const waiting: Array<() => void> = []
  const host: CodeRunner.CallHost = {
    sessionId: SessionId,
    callTool: (_parentCallId, name, args: any) => {
      if (name === "started") {
        started.add(args.tag)
        return Promise.resolve(null)
      }
      return new Promise((resolve) => waiting.push(() => resolve(null)))
    }
  }
  return { host, started, open: () => waiting.splice(0).forEach((release) => release()) }
}

describe("WarmPool bounds", () => {
  it("a child of another activation stays warm while the runner is within warmChildren", async () => {
    const runner = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 1, warmChildren: 3 })
    try {
      const codes = [await activate(runner, counter()), await activate(runner, counter()), await activate(runner, counter())]
      expect(runner.started()).toBe(3)
      for (const round of [1, 2, 3]) {
        for (const code of codes) expect(await count(code)).toBe(round)
      }
      expect(runner.started()).toBe(3)
      expect(runner.poolSize()).toBe(3)
      // a fourth evicts the least recently used idle child to make room
      const fourth = await activate(runner, counter())
      expect(runner.poolSize()).toBe(3)
      expect(await count(fourth)).toBe(1)
      expect(await count(codes[0]!)).toBe(1)
    } finally {
      await runner.close()
    }
  })

  it("warmChildrenPerLanguage makes room among the children of the same language only", async () => {
    const runner = SandboxRunner.make({ ...testOptions, warmChildren: 4, warmChildrenPerLanguage: 1 })
    try {
      const js = await activate(runner, counter("javascript"))
      const ts = await activate(runner, counter("typescript"))
      expect([await count(js), await count(ts)]).toEqual([1, 1])
      const js2 = await activate(runner, counter("javascript")) // evicts js's child, not ts's
      expect(await count(js2)).toBe(1)
      expect(await count(ts)).toBe(2)
      expect(await count(js)).toBe(1)
      expect(runner.poolSize()).toBe(2)
    } finally {
      await runner.close()
    }
  })

  it("childrenPerActivation bounds one activation's top-level invocations; idleChildrenPerActivation retires the surplus", async () => {
    const runner = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 1, warmChildren: 8, childrenPerActivation: 3, idleChildrenPerActivation: 2 })
    const door = gate()
    try {
      const code = await activate(runner, gated(), door.host)
      const outcomes = ["a", "b", "c", "d"].map((tag) => code.invoke({ tag }))
      await eventually(() => door.started.size === 3, "three invocations to start")
      expect(runner.poolSize()).toBe(3)
      door.open()
      await eventually(() => door.started.size === 4, "the fourth to start in a child the others left")
      door.open()
      expect(await Promise.all(outcomes)).toEqual(["a", "b", "c", "d"])
      expect(runner.started()).toBe(3)
      await eventually(() => runner.poolSize() === 2, "the third idle child to be retired")
    } finally {
      await runner.close()
    }
  })

  it("once warm, calls start no child: alone, composed one and two deep, sequential and four at once", async () => {
    const runner = SandboxRunner.make({ ...testOptions, warmChildren: 12, childrenPerActivation: 4 })
    try {
      const together = barrier()
      const harness = new MiniHarness(runner, { barrier: together.arrive })
      for (const name of ["a", "b", "c"]) await harness.add(name, link())
      const shapes = [[], ["b"], ["b", "c"]]
      together.state.parties = 4
      for (const path of shapes) {
        await Promise.all([1, 2, 3, 4].map(() => harness.call("a", { path })))
      }
      const warm = runner.started()
      expect(warm).toBe(12)
      for (const path of shapes) {
        together.state.parties = 1
        for (let i = 0; i < 5; i++) expect(await harness.call("a", { path })).toHaveLength(path.length + 1)
        together.state.parties = 4
        for (let round = 0; round < 3; round++) {
          const chains = (await Promise.all([1, 2, 3, 4].map(() => harness.call("a", { path })))) as Array<Array<string>>
          // four at once, each tool of a chain in its own child
          expect(new Set(chains.map((chain) => chain[0])).size).toBe(4)
        }
      }
      expect(runner.started() - warm).toBe(0)
    } finally {
      await runner.close()
    }
  })

  it("the pool's options are checked at construction", () => {
    for (const option of ["warmChildren", "warmChildrenPerLanguage", "childrenPerActivation", "idleChildrenPerActivation"] as const) {
      for (const value of [0, 1.5]) {
        expect(() => SandboxConfig.make({ [option]: value })).toThrow(HarnessError.ConfigError)
      }
    }
    const config = SandboxConfig.make({ maximumRuntimeEnvironments: 3 })
    expect([config.warmChildren, config.warmChildrenPerLanguage, config.childrenPerActivation, config.idleChildrenPerActivation]).toEqual([3, 3, 3, 3])
  })
})
