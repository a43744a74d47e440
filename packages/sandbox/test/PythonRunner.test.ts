import { HarnessError } from "@jitbox/core"
import { afterAll, describe, expect, it } from "vitest"
import * as ThrownValue from "../../core/src/ThrownValue.js"
import { SandboxError, SandboxRunner, ToolError } from "../src/index.js"
import { activate, host, MiniHarness, type RecordedCall, rejection, settleProcesses, source, testOptions } from "./helpers.js"

const runner = SandboxRunner.make(testOptions)
afterAll(() => runner.close())

const py = (lines: ReadonlyArray<string>) => lines.join("\n") + "\n"

describe("PythonRunner", () => {
  it("imports a package with relative imports and sub-packages, infers parameters and keeps module state", async () => {
    const code = await activate(runner, source("python", {
      "__init__.py": py([
        "from .batch import summarize",
        "from .parsers.lines import split",
        "calls = 0",
        "",
        "@tool(guidelines=\"Use to summarize lines.\")",
        "def main(text: str, limit: int = 3, tags: list[str] | None = None) -> dict:",
        "    \"\"\"Summarize text line by line.\"\"\"",
        "    global calls",
        "    calls += 1",
        "    print('summarizing', calls)",
        "    return {\"summary\": summarize(split(text)[:limit]), \"calls\": calls}"
      ]),
      "batch.py": py(["def summarize(lines):", "    return [f'{len(line)}:{line}' for line in lines]"]),
      "parsers/__init__.py": "",
      "parsers/lines.py": py(["def split(text):", "    return text.split('\\n')"])
    }))
    expect(code.metadata).toEqual({
      description: "Summarize text line by line.",
      guidelines: "Use to summarize lines.",
      parameters: {
        type: "object",
        properties: {
          text: { type: "string" },
          limit: { type: "integer" },
          tags: { anyOf: [{ type: "array", items: { type: "string" } }, { type: "null" }] }
        },
        required: ["text"],
        additionalProperties: false
      }
    })
    expect(await code.invoke({ text: "a\nbb" })).toEqual({ summary: ["1:a", "2:bb"], calls: 1 })
    expect(await code.invoke({ text: "ccc" })).toEqual({ summary: ["3:ccc"], calls: 2 })
    await code.dispose()
  })

  it("takes explicit metadata, the call form of tool(...) and ToolExecutionMode", async () => {
    const code = await activate(runner, source("python", {
      "__init__.py": py([
        "from jitbox import tool as jitbox_tool",
        "def handler(**args):",
        "    return sorted(args)",
        "main = jitbox_tool(handler, description='Lists keys', guidelines='g',",
        "                   parameters={'type': 'object'}, execution_mode=ToolExecutionMode.SERIAL)"
      ])
    }))
    expect(code.metadata).toEqual({ description: "Lists keys", guidelines: "g", parameters: { type: "object" }, executionMode: "serial" })
    expect(await code.invoke({ b: 1, a: 2 })).toEqual(["a", "b"])
    await code.dispose()
  })

  it("rejects with what the tool raised, classified by its Python type name and message", async () => {
    const code = await activate(runner, source("python", {
      "__init__.py": py([
        "class QuotaError(Exception):",
        "    pass",
        "@tool(guidelines='g')",
        "def main(kind: str) -> int:",
        "    if kind == 'value':",
        "        raise ValueError('bad value')",
        "    if kind == 'custom':",
        "        raise QuotaError('over quota')",
        "    if kind == 'exit':",
        "        raise SystemExit(3)",
        "    return {1, 2}"
      ])
    }))
    const value = await rejection(code.invoke({ kind: "value" }))
    expect(value).toBeInstanceOf(ToolError.ToolError)
    expect([ThrownValue.errorType(value), ThrownValue.message(value)]).toEqual(["ValueError", "bad value"])
    const type = async (args: unknown) => ThrownValue.errorType(await rejection(code.invoke(args)))
    expect(await type({ kind: "custom" })).toBe("QuotaError")
    expect(await type({ kind: "exit" })).toBe("SystemExit")
    expect(await type({ kind: "set" })).toBe("TypeError")
    expect(await type({ unknown: 1 })).toBe("TypeError")
    await code.dispose()
  })

  it("passes large and non-ASCII arguments and results intact, and refuses results over 256 KiB without killing the child", async () => {
    const code = await activate(runner, source("python", {
      "__init__.py": py([
        "n = 0",
        "@tool(guidelines='g')",
        "def main(text: str = '', repeat: int = 0) -> dict:",
        "    global n",
        "    n += 1",
        "    return {'text': text * repeat if repeat else text, 'n': n}"
      ])
    }))
    // more than one 64 KiB read of the child's stdin, several bytes per character
    const text = "é€😀 \"quoted\"\n".repeat(8_000)
    expect(await code.invoke({ text })).toEqual({ text, n: 1 })
    // 200,000 bytes of JSON: under the bound although it is more than a quarter of it in characters
    expect(await code.invoke({ text: "é", repeat: 100_000 })).toEqual({ text: "é".repeat(100_000), n: 2 })
    // 280,000 bytes in 140,000 characters: over the bound
    const tooLarge = await rejection(code.invoke({ text: "é", repeat: 140_000 }))
    expect(tooLarge).toBeInstanceOf(SandboxError.SandboxError)
    expect(tooLarge.reason).toBe("OutputTooLarge")
    expect(await code.invoke({ text: "ok" })).toEqual({ text: "ok", n: 4 })
    await code.dispose()
  })

  it("retires a warm child that used half of its CPU limit once it is idle", async () => {
    const limited = SandboxRunner.make({ ...testOptions, limits: { ...testOptions.limits, cpuSeconds: 2 } })
    try {
      const code = await activate(limited, source("python", {
        "__init__.py": py([
          "import time",
          "n = 0",
          "@tool(guidelines='g')",
          "def main(burn_ms: int = 0) -> int:",
          "    global n",
          "    start = time.process_time()",
          "    while (time.process_time() - start) * 1000 < burn_ms:",
          "        pass",
          "    n += 1",
          "    return n"
        ])
      }))
      expect(await code.invoke({})).toBe(1)
      expect(await code.invoke({})).toBe(2)
      expect(await code.invoke({ burn_ms: 1_000 })).toBe(3)
      expect(await code.invoke({})).toBe(1) // the retired child was replaced before its CPU rlimit
    } finally {
      await limited.close()
    }
    expect(await settleProcesses(limited)).toBe(0)
  })

  describe("load errors are typed and name the file", () => {
    const loadError = async (files: Record<string, string>, entrypoint = "main") => {
      const error = await rejection(runner.activate(source("python", files, { entrypoint }), host()))
      expect(error).toBeInstanceOf(HarnessError.PackageError)
      return error as HarnessError.PackageError
    }

    it("a SyntaxError in a helper module is a CompileError naming the helper", async () => {
      const error = await loadError({
        "__init__.py": py(["from .helpers.broken import f", "@tool(guidelines='g')", "def main() -> int:", "    return f()"]),
        "helpers/__init__.py": "",
        "helpers/broken.py": py(["def f():", "    return (1 +"])
      })
      expect(error.reason).toBe("CompileError")
      expect(error.path).toBe("helpers/broken.py")
      expect(error.detail).toContain("SyntaxError")
    })

    it("a broken relative import is an ImportError naming the importing file", async () => {
      const error = await loadError({
        "__init__.py": py(["from .batch import summarize", "@tool(guidelines='g')", "def main() -> int:", "    return 1"]),
        "batch.py": py(["from .missing import helper", "def summarize():", "    return helper()"])
      })
      expect(error.reason).toBe("ImportError")
      expect(error.path).toBe("batch.py")
      expect(error.detail).toContain("missing")
    })

    it("a missing entry point is MissingEntrypoint", async () => {
      const error = await loadError({ "__init__.py": py(["@tool(guidelines='g')", "def other() -> int:", "    return 1"]) })
      expect([error.reason, error.path]).toEqual(["MissingEntrypoint", "__init__.py"])
    })

    it("an entry point that is not decorated is EntrypointNotATool", async () => {
      const error = await loadError({ "__init__.py": py(["def main() -> int:", "    return 1"]) })
      expect(error.reason).toBe("EntrypointNotATool")
    })

    it("a module that raises while loading is an ActivationError naming the file", async () => {
      const error = await loadError({
        "__init__.py": py(["from . import settings", "@tool(guidelines='g')", "def main() -> int:", "    return 1"]),
        "settings.py": py(["import json", "CONFIG = json.loads('{not json')"])
      })
      expect([error.reason, error.path]).toEqual(["ActivationError", "settings.py"])
      expect(error.detail).toContain("JSONDecodeError")
    })

    it("a package without __init__.py is refused before anything runs", async () => {
      const error = await loadError({ "main.py": "x = 1\n" })
      expect([error.reason, error.path]).toEqual(["MissingFile", "__init__.py"])
    })
  })

  describe("composition (D-24)", () => {
    it("a def tool composes with harness.call_tool_sync, its calls naming its invocation", async () => {
      const calls: Array<RecordedCall> = []
      const code = await activate(runner, source("python", {
        "__init__.py": py([
          "@tool(guidelines='Use to add an integer to itself.')",
          "def main(value: int) -> int:",
          "    \"\"\"Add the same integer twice.\"\"\"",
          "    return harness.call_tool_sync('add', left=value, right=value)"
        ])
      }), host({ calls, answer: (_, a) => a.left + a.right }))
      const result = await code.invoke({ value: 21 }, { callId: "outer", depth: 2 })
      expect(result).toBe(42)
      expect(calls).toEqual([{ parentCallId: "outer", name: "add", args: { left: 21, right: 21 } }])
      await code.dispose()
    })

    it("an async tool awaits harness.call_tool, concurrently, each call tied to its own invocation", async () => {
      const calls: Array<RecordedCall> = []
      const answer = (_: string, args: any) => "x".repeat(args.path.length)
      const code = await activate(runner, source("python", {
        "__init__.py": py([
          "import asyncio",
          "from .batch import summarize",
          "@tool(guidelines='Use to summarize every requested file in one call.')",
          "async def main(paths: list[str]) -> str:",
          "    \"\"\"Read many files in code and return one compact summary.\"\"\"",
          "    return await summarize(harness, paths)"
        ]),
        "batch.py": py([
          "import asyncio",
          "async def summarize(harness, paths):",
          "    texts = await asyncio.gather(*(harness.call_tool('read_file', path=path) for path in paths))",
          "    return '\\n'.join(f'{path}: {len(text)} characters' for path, text in zip(paths, texts))"
        ])
      }), host({ calls, answer }))
      const [a, b] = await Promise.all([
        code.invoke({ paths: ["a", "bb"] }, { callId: "first" }),
        code.invoke({ paths: ["ccc"] }, { callId: "second" })
      ])
      expect(a).toBe("a: 1 characters\nbb: 2 characters")
      expect(b).toBe("ccc: 3 characters")
      expect(calls.filter((c) => c.parentCallId === "first").map((c) => c.args)).toEqual([{ path: "a" }, { path: "bb" }])
      expect(calls.filter((c) => c.parentCallId === "second").map((c) => c.args)).toEqual([{ path: "ccc" }])
      await code.dispose()
    })

    it("a def tool that calls itself through the host re-enters its own child: a recursion takes one child", async () => {
      const single = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 1 })
      try {
        const harness = new MiniHarness(single)
        await harness.add("main", source("python", {
          "__init__.py": py([
            "import os",
            "@tool(guidelines='g')",
            "def main(n: int) -> dict:",
            "    here = os.environ['JITBOX_SANDBOX_CHILD']",
            "    if n == 0:",
            "        return {'sum': 0, 'children': [here]}",
            "    inner = harness.call_tool_sync('main', n=n - 1)",
            "    return {'sum': n + inner['sum'], 'children': [here] + inner['children']}"
          ])
        }))
        const result = await harness.call("main", { n: 4 }) as { sum: number; children: Array<string> }
        expect(result.sum).toBe(10)
        expect(new Set(result.children).size).toBe(1)
        expect(single.poolSize()).toBe(1)
        expect(harness.calls.map((call) => call.depth)).toEqual([1, 2, 3, 4, 5])
      } finally {
        await single.close()
      }
    })

    it("a failed nested call raises in Python with the nested error type", async () => {
      const original = new HarnessError.ValidationError({ name: "strict", issues: "value must be >= 0" })
      const code = await activate(runner, source("python", {
        "__init__.py": py([
          "@tool(guidelines='g')",
          "def main() -> dict:",
          "    try:",
          "        harness.call_tool_sync('strict', value=-1)",
          "    except harness.ToolCallError as error:",
          "        return {'type': type(error).__name__, 'message': str(error)}"
        ])
      }), { sessionId: "session-1", callTool: () => Promise.reject(original) })
      expect(await code.invoke({})).toEqual({ type: "ValidationError", message: "invalid arguments for 'strict': value must be >= 0" })
      await code.dispose()
    })

    it("a nested failure the tool lets propagate rejects with the host's own error", async () => {
      const original = new HarnessError.ValidationError({ name: "strict", issues: "value must be >= 0" })
      const code = await activate(runner, source("python", {
        "__init__.py": py(["@tool(guidelines='g')", "def main() -> int:", "    return harness.call_tool_sync('strict', value=-1)"])
      }), { sessionId: "session-1", callTool: () => Promise.reject(original) })
      expect(await rejection(code.invoke({}))).toBe(original)
      await code.dispose()
    })

    it("refuses call_tool_sync from async code and harness calls outside an invocation", async () => {
      const code = await activate(runner, source("python", {
        "__init__.py": py([
          "try:",
          "    harness.call_tool_sync('x')",
          "except Exception as error:",
          "    EARLY = type(error).__name__",
          "@tool(guidelines='g')",
          "async def main() -> list:",
          "    try:",
          "        harness.call_tool_sync('x')",
          "    except RuntimeError as error:",
          "        return [EARLY, str(error)]"
        ])
      }))
      expect(await code.invoke({})).toEqual([
        "ToolRejected",
        "do not call call_tool_sync from async code; use await harness.call_tool"
      ])
      await code.dispose()
    })
  })
})
