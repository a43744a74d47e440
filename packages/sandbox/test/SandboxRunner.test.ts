import { CodeRunner, HarnessError, JitPolicy } from "@jitbox/core"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as ThrownValue from "../../core/src/ThrownValue.js"
import { Isolation, SandboxConfig, SandboxError, SandboxRunner, ToolError } from "../src/index.js"
import { activate, host, invocation, type RecordedCall, rejection, source, testOptions } from "./helpers.js"

/** How the agent prints a thrown value for the model: `_tag` when there is one, else `name`. */
const printed = (thrown: unknown): string => {
  const type = typeof thrown === "object" && thrown !== null && "_tag" in thrown && typeof thrown._tag === "string"
    ? thrown._tag
    : thrown instanceof Error
    ? thrown.name
    : typeof thrown
  return `${type}: ${thrown instanceof Error ? thrown.message : String(thrown)}`
}

describe("SandboxRunner", () => {
  it.effect("layer provides core's CodeRunner and kills every child when its scope closes", () =>
    Effect.gen(function*() {
      let processes: () => Array<number> = () => []
      const result = yield* Effect.scoped(
        Effect.gen(function*() {
          const codeRunner = yield* CodeRunner.CodeRunner
          processes = (codeRunner as SandboxRunner.SandboxRunner).processes
          expect(codeRunner.languages).toEqual(expect.arrayContaining(["javascript", "typescript"]))
          const code = source("typescript", { "index.ts": `export const main = tool({ description: "d" }, (a: { x: number }) => a.x + 1)` })
          const metadata = yield* Effect.promise(() => codeRunner.activate(code, host()))
          expect(metadata).toEqual({ description: "d" })
          expect(processes().length).toBeGreaterThan(0)
          return yield* Effect.promise(() => Promise.resolve(codeRunner.invoke(invocation(code.activationId, { x: 41 }), undefined)))
        }).pipe(Effect.provide(SandboxRunner.layer(testOptions)))
      )
      expect(result).toBe(42)
      expect(processes()).toEqual([])
    }))

  it.effect("an option out of range is a ConfigError in the layer's error channel", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Layer.build(SandboxRunner.layer({ maximumRuntimeEnvironments: 17 })).pipe(Effect.scoped))
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) {
        const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
        expect(error).toBeInstanceOf(HarnessError.ConfigError)
        expect(error?.option).toBe("maximumRuntimeEnvironments")
      }
      expect(() => SandboxRunner.make({ shortTimeoutSeconds: 0 })).toThrow(HarnessError.ConfigError)
    }))

  it("routes by language and refuses a language it has no runner for", async () => {
    const runner = SandboxRunner.make(testOptions)
    try {
      const error = await rejection(runner.activate({ ...source("javascript", {}), language: "powershell" as never }, host()))
      expect(error).toBeInstanceOf(HarnessError.PackageError)
      expect(error.reason).toBe("NoRunner")
    } finally {
      await runner.close()
    }
    const closed = await rejection(runner.activate(source("javascript", { "index.js": "" }), host()))
    expect(closed.reason).toBe("NoRunner")
  })

  it("hands what tools print to onLog, line by line, and survives a throwing sink", async () => {
    const lines: Array<string> = []
    const runner = SandboxRunner.make({
      ...testOptions,
      onLog: (entry) => {
        lines.push(`${entry.toolName}: ${entry.line}`)
        throw new Error("a broken sink")
      }
    })
    try {
      const node = await activate(runner, source("javascript", {
        "index.js": `console.log("loading")\nexport const main = tool({ description: "d" }, () => { console.error("from node"); return 1 })`
      }, { toolName: "printer" }))
      const python = await activate(runner, source("python", {
        "__init__.py": "import sys\n@tool(guidelines='g')\ndef main() -> int:\n    print('from', 'python')\n    print('to stderr', file=sys.stderr)\n    return 2\n"
      }, { toolName: "pyprinter" }))
      expect([await node.invoke({}), await python.invoke({})]).toEqual([1, 2])
      expect(lines).toEqual(["printer: loading", "printer: from node", "pyprinter: from python", "pyprinter: to stderr"])
    } finally {
      await runner.close()
    }
  })

  it("a tool's failure classifies and prints as the child's error type in every language, as it would in process", async () => {
    const runner = SandboxRunner.make(testOptions)
    try {
      const codes = await Promise.all([
        activate(runner, source("python", { "__init__.py": "@tool(guidelines='g')\ndef main() -> int:\n    raise ValueError('bad value')\n" })),
        activate(runner, source("javascript", { "index.js": `export const main = tool({ description: "d" }, () => { throw new Error("plain") })` })),
        activate(runner, source("typescript", { "index.ts": `class QuotaError extends Error {}\nexport const main = tool({ description: "d" }, () => { throw new QuotaError("over quota") })` })),
        activate(runner, source("bash", { "main.sh": "echo broken >&2\nexit 4\n" }))
      ])
      const failures = await Promise.all(codes.map((code) => rejection(code.invoke({}))))
      for (const failure of failures) {
        expect(failure).toBeInstanceOf(ToolError.ToolError)
        expect(printed(failure)).toBe(`${ThrownValue.errorType(failure)}: ${ThrownValue.message(failure)}`)
      }
      expect(failures.map(printed)).toEqual([
        "ValueError: bad value",
        "Error: plain",
        "QuotaError: over quota",
        "NonZeroExit: main.sh exited with status 4: broken"
      ])
    } finally {
      await runner.close()
    }
  })

  it("invoke answers by activation id: an unknown one, a reused one and a passed deadline are refused", async () => {
    const runner = SandboxRunner.make(testOptions)
    try {
      const unknown = await rejection(runner.invoke(invocation("no-such-activation", {}), undefined))
      expect(unknown).toBeInstanceOf(HarnessError.PackageError)
      expect(unknown.reason).toBe("NoRunner")
      const code = source("javascript", { "index.js": `export const main = tool({ description: "d" }, () => 1)` })
      await runner.activate(code, host())
      const twice = await rejection(runner.activate(code, host()))
      expect(twice).toBeInstanceOf(HarnessError.PackageError)
      expect(twice.detail).toContain(code.activationId)
      const late = await rejection(runner.invoke(invocation(code.activationId, {}, { deadline: Date.now() - 1 }), undefined))
      expect(late).toBeInstanceOf(SandboxError.SandboxError)
      expect(late.reason).toBe("Timeout")
      expect(await runner.invoke(invocation(code.activationId, {}), undefined)).toBe(1)
    } finally {
      await runner.close()
    }
  })

  it("closing the runner while activations run rejects them with NoRunner", async () => {
    const runner = SandboxRunner.make(testOptions)
    const pending = [
      runner.activate(source("typescript", { "index.ts": `export const main = tool({ description: "d" }, () => 1)` }), host()),
      runner.activate(source("python", { "__init__.py": "@tool(guidelines='g')\ndef main() -> int:\n    return 1\n" }), host())
    ].map((activation) => rejection(activation))
    await runner.close()
    for (const error of await Promise.all(pending)) {
      expect(error).toBeInstanceOf(HarnessError.PackageError)
      expect(error.reason).toBe("NoRunner")
    }
    expect(runner.processes()).toEqual([])
  })

  it("reads a deadline against the clock it is given (the harness's), not the wall clock", async () => {
    const clock = { now: () => 1_000 }
    const runner = SandboxRunner.make({ ...testOptions, clock })
    try {
      const code = await activate(runner, source("javascript", { "index.js": `export const main = tool({ description: "d" }, () => 1)` }))
      // 60 s ahead of that clock, though long past by the wall clock
      expect(await code.invoke({}, { deadline: 61_000 })).toBe(1)
      const late = await rejection(code.invoke({}, { deadline: 999 }))
      expect(late.reason).toBe("Timeout")
    } finally {
      await runner.close()
    }
  })

  it("a child can only name the invocation it runs: a forged CallTool kills the child and never reaches the host", async () => {
    const runner = SandboxRunner.make(testOptions)
    try {
      const calls: Array<RecordedCall> = []
      const code = await activate(runner, source("python", {
        "__init__.py": [
          "import os",
          "@tool(guidelines='g')",
          "def main() -> int:",
          "    os.write(1, b'{\"_tag\":\"CallTool\",\"requestId\":\"forged\",\"invocationId\":\"999\",\"name\":\"secret\",\"args\":{}}\\n')",
          "    return harness.call_tool_sync('allowed')"
        ].join("\n")
      }), host({ calls, answer: () => 1 }))
      const error = await rejection(code.invoke({}, { callId: "the-call" }))
      expect(error).toMatchObject({ _tag: "SandboxError", reason: "ProtocolViolation" })
      expect((error as Error).message).toMatch(/naming invocation '999', which is not in flight on this child/)
      expect(calls).toEqual([])
    } finally {
      await runner.close()
    }
  })

  it("any number of runners share one process exit hook: twelve print no MaxListenersExceededWarning", async () => {
    const warnings: Array<Error> = []
    const onWarning = (warning: Error) => warnings.push(warning)
    process.on("warning", onWarning)
    const before = process.listenerCount("exit")
    const runners = Array.from({ length: 12 }, () => SandboxRunner.make(testOptions))
    try {
      expect(process.listenerCount("exit")).toBeLessThanOrEqual(before + 1)
      // Node emits the warning on a later tick
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      await Promise.all(runners.map((runner) => runner.close()))
      process.off("warning", onWarning)
    }
    expect(warnings.filter((warning) => warning.name === "MaxListenersExceededWarning")).toEqual([])
    expect(process.listenerCount("exit")).toBe(before)
  })

  it("reports every isolation layer as data, consistent with this host", () => {
    const layers = Isolation.describeIsolation()
    expect(layers.map((l) => l.layer)).toEqual([
      "scrubbed-environment",
      "inherited-descriptors",
      "private-working-directory",
      "process-group",
      "node-permission-model",
      "rlimits",
      "bubblewrap",
      "bounded-storage",
      "seccomp",
      "unprivileged-uid",
      "python",
      "bash",
      "csharp",
      "separate-kernel",
      "exec-restriction",
      "own-process-budget",
      "cgroups",
      "hidden-host-paths"
    ])
    const byName = Object.fromEntries(layers.map((l) => [l.layer, l]))
    const exists = (p: string) => fs.existsSync(p)
    expect(byName["rlimits"]!.active).toBe(exists("/usr/bin/prlimit") || exists("/bin/prlimit"))
    expect(byName["node-permission-model"]!.active).toBe(
      process.allowedNodeEnvironmentFlags.has("--permission") || process.allowedNodeEnvironmentFlags.has("--experimental-permission")
    )
    expect(byName["unprivileged-uid"]!.active).toBe(process.getuid?.() === 0)
    if (!exists("/usr/bin/bwrap")) expect(byName["bubblewrap"]!.active).toBe(false)
    expect(byName["python"]!.active).toBe(exists("/usr/bin/python3"))
    expect(byName["csharp"]!.active).toBe(exists("/usr/bin/mono") && exists("/usr/lib/mono/4.5/mcs.exe"))
    expect(Isolation.describeIsolation({ monoPath: "/nonexistent/mono" }).find((l) => l.layer === "csharp")).toMatchObject({
      active: false,
      detail: expect.stringContaining("/nonexistent/mono not found")
    })
    for (const layer of layers) expect(layer.detail.length).toBeGreaterThan(0)
    expect(Isolation.describeIsolation({ bubblewrap: false }).find((l) => l.layer === "bubblewrap")?.active).toBe(false)
  })
})

describe("SandboxConfig.optionsFromPolicy", () => {
  it("bounds environments by the policy and uses its long timeout as the per-call bound", () => {
    const policy = JitPolicy.make({ maximumRuntimeEnvironments: 3, invocationTimeoutSeconds: 600 })
    const config = SandboxConfig.make(SandboxConfig.optionsFromPolicy(policy))
    expect(config.maximumRuntimeEnvironments).toBe(3)
    expect(config.shortTimeoutMs).toBe(600_000)
  })
})
