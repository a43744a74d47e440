import { HarnessError } from "@jitbox/core"
import * as fs from "node:fs"
import { afterAll, describe, expect, it } from "vitest"
import * as ThrownValue from "../../core/src/ThrownValue.js"
import { SandboxError, SandboxRunner, ToolError } from "../src/index.js"
import { activate, host, type RecordedCall, rejection, source, testOptions } from "./helpers.js"

const runner = SandboxRunner.make(testOptions)
afterAll(() => runner.close())

describe("NodeRunner", () => {
  it("activates a TypeScript package with sub-folders, reports metadata and keeps module state warm", async () => {
    const code = await activate(runner, source("typescript", {
      "index.ts": [
        `import { double } from "./lib/math.js"`,
        `import { label } from "./lib/text"`,
        `let calls = 0`,
        `interface Args { readonly x: number }`,
        `export const main = tool({`,
        `  description: "Doubles x",`,
        `  guidelines: "Use to double a number.",`,
        `  parameters: { type: "object", properties: { x: { type: "number" } }, required: ["x"] },`,
        `  executionMode: ToolExecutionMode.Serial`,
        `}, (args: Args) => ({ value: double(args.x), label: label(args.x), calls: ++calls }))`
      ].join("\n"),
      "lib/math.ts": "export const double = (x: number): number => x * 2\n",
      "lib/text.ts": "export function label(x: number): string { return `x=${x}` }\n"
    }))
    expect(code.metadata).toEqual({
      description: "Doubles x",
      guidelines: "Use to double a number.",
      parameters: { type: "object", properties: { x: { type: "number" } }, required: ["x"] },
      executionMode: "serial"
    })
    expect(await code.invoke({ x: 2 })).toEqual({ value: 4, label: "x=2", calls: 1 })
    expect(await code.invoke({ x: 5 })).toEqual({ value: 10, label: "x=5", calls: 2 })
    await code.dispose()
  })

  it("runs JavaScript, async handlers and handlers that return nothing", async () => {
    const code = await activate(runner, source("javascript", {
      "index.js": [
        `export const main = tool({ description: "d", guidelines: "g" }, async (args, ctx) => {`,
        `  await new Promise((resolve) => setTimeout(resolve, 5))`,
        `  if (args.nothing) return undefined`,
        `  return { callId: ctx.callId, depth: ctx.depth, harnessCallId: harness.callId }`,
        `})`
      ].join("\n")
    }))
    expect(code.metadata).toEqual({ description: "d", guidelines: "g" })
    expect(await code.invoke({}, { callId: "c-7", depth: 3 })).toEqual({ callId: "c-7", depth: 3, harnessCallId: "c-7" })
    expect(await code.invoke({ nothing: true })).toBeNull()
    await code.dispose()
  })

  it("runs a Node child on 4 threads, even after work on libuv's thread pool: each thread counts against the children's shared process limit", async () => {
    const code = await activate(runner, source("javascript", {
      "index.js": [
        `import * as crypto from "node:crypto"`,
        `const hash = () => new Promise((resolve, reject) => crypto.pbkdf2("a", "b", 1000, 32, "sha256", (e, key) => e ? reject(e) : resolve(key.length)))`,
        `export const main = tool({ description: "d", guidelines: "g" }, async () => (await Promise.all([hash(), hash(), hash(), hash()])).length)`
      ].join("\n")
    }))
    expect(await code.invoke({})).toBe(4)
    const threads = runner.processes()
      .filter((pid) => readProc(`/proc/${pid}/comm`)?.trim() === "node")
      .map((pid) => fs.readdirSync(`/proc/${pid}/task`).length)
    expect(threads.length).toBeGreaterThan(0)
    // main, one V8 platform worker (--v8-pool-size=1), one libuv pool thread (UV_THREADPOOL_SIZE=1), libuv's signal thread; 10 without both
    for (const count of threads) expect(count).toBeLessThanOrEqual(4)
    await code.dispose()
  })

  it("rejects with what the tool threw, classified as in process: its type name and its message", async () => {
    const code = await activate(runner, source("javascript", {
      "index.js": [
        `class QuotaError extends Error {}`,
        `export const main = tool({ description: "d" }, (args) => {`,
        `  if (args.kind === "type") null.x`,
        `  if (args.kind === "custom") throw new QuotaError("over quota")`,
        `  if (args.kind === "plain") throw new Error("plain")`,
        `  if (args.kind === "string") throw "a string"`,
        `  throw new RangeError("out of range")`,
        `})`
      ].join("\n")
    }))
    const classified = async (kind: string) => {
      const error = await rejection(code.invoke({ kind }))
      expect(error).toBeInstanceOf(ToolError.ToolError)
      return [ThrownValue.errorType(error), ThrownValue.message(error)]
    }
    expect((await classified("type"))[0]).toBe("TypeError")
    expect(await classified("custom")).toEqual(["QuotaError", "over quota"])
    expect(await classified("plain")).toEqual(["Error", "plain"])
    expect((await classified("string"))[0]).toBe("string")
    expect(await classified("range")).toEqual(["RangeError", "out of range"])
    await code.dispose()
  })

  describe("load errors are typed and name the file", () => {
    const loadError = async (files: Record<string, string>, entrypoint = "main") => {
      const error = await rejection(runner.activate(source("typescript", files, { entrypoint }), host()))
      expect(error).toBeInstanceOf(HarnessError.PackageError)
      return error as HarnessError.PackageError
    }

    it("a syntax error in a helper file is a CompileError naming the helper", async () => {
      const error = await loadError({
        "index.ts": `import { f } from "./helpers/broken.js"\nexport const main = tool({ description: "d" }, () => f())`,
        "helpers/broken.ts": "export const f = () => {\n  return 1 +\n}\n"
      })
      expect(error.reason).toBe("CompileError")
      expect(error.path).toBe("helpers/broken.ts")
      expect(error.detail).toMatch(/^helpers\/broken\.ts:3:/)
    })

    it("a syntax error in a file nothing imports is still a CompileError", async () => {
      const error = await loadError({
        "index.ts": `export const main = tool({ description: "d" }, () => 1)`,
        "unused.ts": "export const = 1\n"
      })
      expect(error.reason).toBe("CompileError")
      expect(error.path).toBe("unused.ts")
    })

    it("a broken relative import is an ImportError naming the importing file", async () => {
      const error = await loadError({
        "index.ts": `import { f } from "./lib/a.js"\nexport const main = tool({ description: "d" }, () => f())`,
        "lib/a.ts": `import { g } from "../missing.js"\nexport const f = () => g()\n`
      })
      expect(error.reason).toBe("ImportError")
      expect(error.path).toBe("lib/a.ts")
      expect(error.detail).toContain("../missing.js")
    })

    it("a bare package import is an ImportError", async () => {
      const error = await loadError({ "index.ts": `import _ from "lodash"\nexport const main = tool({ description: "d" }, () => _)` })
      expect(error.reason).toBe("ImportError")
      expect(error.detail).toContain("lodash")
    })

    it("a missing entry point is MissingEntrypoint", async () => {
      const error = await loadError({ "index.ts": `export const other = tool({ description: "d" }, () => 1)` })
      expect(error.reason).toBe("MissingEntrypoint")
      expect(error.path).toBe("index.ts")
      expect(error.detail).toContain("other")
    })

    it("an entry point that is not a tool(...) value is EntrypointNotATool", async () => {
      const error = await loadError({ "index.ts": `export const main = (x: number) => x` })
      expect(error.reason).toBe("EntrypointNotATool")
    })

    it("a module that throws while loading is an ActivationError naming the file", async () => {
      const error = await loadError({
        "index.ts": `import { config } from "./config.js"\nexport const main = tool({ description: "d" }, () => config)`,
        "config.ts": `export const config = JSON.parse("{not json")\n`
      })
      expect(error.reason).toBe("ActivationError")
      expect(error.path).toBe("config.ts")
      expect(error.detail).toContain("SyntaxError")
    })
  })

  describe("composition", () => {
    it("forwards harness.callTool to the host, naming the call id of the invocation it came from, after awaits too", async () => {
      const calls: Array<RecordedCall> = []
      const answer = (name: string, args: any) => name === "add" ? args.left + args.right : `#${args.value}`
      const code = await activate(runner, source("typescript", {
        "index.ts": [
          `export const main = tool({ description: "d" }, async (args: { n: number }) => {`,
          `  await new Promise((resolve) => setTimeout(resolve, 10 * args.n))`,
          `  const first = await harness.callTool("add", { left: args.n, right: args.n })`,
          `  await new Promise((resolve) => setTimeout(resolve, 5))`,
          `  const second = await harness.callTool("label", { value: first })`,
          `  return { first, second }`,
          `})`
        ].join("\n")
      }), host({ calls, answer }))
      const [a, b] = await Promise.all([
        code.invoke({ n: 3 }, { callId: "outer-a", depth: 1 }),
        code.invoke({ n: 1 }, { callId: "outer-b", depth: 4 })
      ])
      expect(a).toEqual({ first: 6, second: "#6" })
      expect(b).toEqual({ first: 2, second: "#2" })
      const byParent = (id: string) => calls.filter((call) => call.parentCallId === id).map(({ args, name }) => ({ name, args }))
      expect(byParent("outer-a")).toEqual([{ name: "add", args: { left: 3, right: 3 } }, { name: "label", args: { value: 6 } }])
      expect(byParent("outer-b")).toEqual([{ name: "add", args: { left: 1, right: 1 } }, { name: "label", args: { value: 2 } }])
      expect(calls).toHaveLength(4)
      await code.dispose()
    })

    it("a failing nested call rejects inside the tool with the nested error type", async () => {
      const code = await activate(runner, source("javascript", {
        "index.js": [
          `export const main = tool({ description: "d" }, async () => {`,
          `  try { await harness.callTool("missing", {}) } catch (error) { return { caught: error.name, message: error.message } }`,
          `})`
        ].join("\n")
      }), { sessionId: "session-1", callTool: () => Promise.reject(new HarnessError.ToolNotFound({ name: "missing" })) })
      const result = await code.invoke({})
      expect(result).toEqual({ caught: "ToolNotFound", message: "no tool named 'missing' exists in this harness" })
      await code.dispose()
    })

    it("a nested failure the tool lets propagate rejects with the host's own error", async () => {
      const original = new HarnessError.ValidationError({ name: "strict", issues: "value must be >= 0" })
      const code = await activate(runner, source("javascript", {
        "index.js": `export const main = tool({ description: "d" }, async () => { await harness.callTool("strict", { value: -1 }) })`
      }), { sessionId: "session-1", callTool: () => Promise.reject(original) })
      expect(await rejection(code.invoke({}))).toBe(original)
      await code.dispose()
    })

    it("harness.callTool outside an invocation is refused", async () => {
      const code = await activate(runner, source("javascript", {
        "index.js": [
          `let early`,
          `await harness.callTool("x", {}).catch((error) => { early = error.name })`,
          `export const main = tool({ description: "d" }, () => early)`
        ].join("\n")
      }))
      expect(await code.invoke({})).toBe("ToolRejected")
      await code.dispose()
    })
  })

  it("refuses arguments over 256 KiB and results over 256 KiB without killing the child", async () => {
    const code = await activate(runner, source("javascript", {
      "index.js": `let n = 0\nexport const main = tool({ description: "d" }, (args) => args.big ? "x".repeat(262144) : ++n)`
    }))
    expect(await code.invoke({})).toBe(1)
    const input = await rejection(code.invoke({ pad: "y".repeat(262144) }))
    expect(input).toBeInstanceOf(SandboxError.SandboxError)
    expect(input.reason).toBe("InputTooLarge")
    const output = await rejection(code.invoke({ big: true }))
    expect(output.reason).toBe("OutputTooLarge")
    expect(await code.invoke({})).toBe(2)
    await code.dispose()
  })
})

const readProc = (file: string): string | undefined => {
  try {
    return fs.readFileSync(file, "utf8")
  } catch {
    return undefined
  }
}
