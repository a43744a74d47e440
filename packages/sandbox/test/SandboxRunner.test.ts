import { CodeRunner, HarnessError, JitPolicy } from "@jitbox/core"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as ThrownValue from "../../core/src/ThrownValue.js"
import { Isolation, SandboxConfig, SandboxRunner, ToolError } from "../src/index.js"
import { context, rejection, source, testOptions } from "./helpers.js"

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
          const code = yield* Effect.promise(() =>
            codeRunner.activate(source("typescript", { "index.ts": `export const main = tool({ description: "d" }, (a: { x: number }) => a.x + 1)` }))
          )
          expect(processes().length).toBeGreaterThan(0)
          return yield* Effect.promise(() => Promise.resolve(code.invoke({ x: 41 }, context())))
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
      const error = await rejection(runner.activate({ ...source("javascript", {}), language: "powershell" as never }))
      expect(error).toBeInstanceOf(HarnessError.PackageError)
      expect(error.reason).toBe("NoRunner")
    } finally {
      await runner.close()
    }
    const closed = await rejection(runner.activate(source("javascript", { "index.js": "" })))
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
      const node = await runner.activate(source("javascript", {
        "index.js": `console.log("loading")\nexport const main = tool({ description: "d" }, () => { console.error("from node"); return 1 })`
      }, { toolName: "printer" }))
      const python = await runner.activate(source("python", {
        "__init__.py": "import sys\n@tool(guidelines='g')\ndef main() -> int:\n    print('from', 'python')\n    print('to stderr', file=sys.stderr)\n    return 2\n"
      }, { toolName: "pyprinter" }))
      expect([await node.invoke({}, context()), await python.invoke({}, context())]).toEqual([1, 2])
      expect(lines).toEqual(["printer: loading", "printer: from node", "pyprinter: from python", "pyprinter: to stderr"])
    } finally {
      await runner.close()
    }
  })

  it("a tool's failure classifies and prints as the child's error type in every language, as it would in process", async () => {
    const runner = SandboxRunner.make(testOptions)
    try {
      const codes = await Promise.all([
        runner.activate(source("python", { "__init__.py": "@tool(guidelines='g')\ndef main() -> int:\n    raise ValueError('bad value')\n" })),
        runner.activate(source("javascript", { "index.js": `export const main = tool({ description: "d" }, () => { throw new Error("plain") })` })),
        runner.activate(source("typescript", { "index.ts": `class QuotaError extends Error {}\nexport const main = tool({ description: "d" }, () => { throw new QuotaError("over quota") })` })),
        runner.activate(source("bash", { "main.sh": "echo broken >&2\nexit 4\n" }))
      ])
      const failures = await Promise.all(codes.map((code) => rejection(code.invoke({}, context()))))
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
      "private-working-directory",
      "process-group",
      "node-permission-model",
      "rlimits",
      "bubblewrap",
      "seccomp-no-fork",
      "unprivileged-uid",
      "python",
      "bash"
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
