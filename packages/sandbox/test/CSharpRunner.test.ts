import { HarnessError } from "@jitbox/core"
import { afterAll, describe, expect, it } from "vitest"
import * as ThrownValue from "../../core/src/ThrownValue.js"
import { SandboxError, SandboxRunner, ToolError } from "../src/index.js"
import { activate, host, MiniHarness, type RecordedCall, rejection, settleProcesses, source, testOptions } from "./helpers.js"

const runner = SandboxRunner.make(testOptions)
afterAll(() => runner.close())

const cs = (lines: ReadonlyArray<string>) => ["using System;", "using System.Collections.Generic;", "using Jitbox;", ...lines].join("\n") + "\n"

/** A C# package whose entry type is `Main` unless named otherwise. */
const csharp = (files: Record<string, string>, options: { readonly entrypoint?: string } = {}) =>
  source("csharp", files, { entrypoint: "Main", ...options })

/** A tool whose Run is `body`, with the entry type `Main`. */
const tool = (body: ReadonlyArray<string>, members: ReadonlyArray<string> = []) =>
  cs(["public static class Main {", ...members, "  public static string Run(string inputJson) {", ...body, "  }", "}"])

describe("CSharpRunner", () => {
  it("is one of the runner's languages where Mono is installed", () => {
    expect(runner.languages).toContain("csharp")
    expect(runner.isolation.find((layer) => layer.layer === "csharp")?.active).toBe(true)
  })

  it("compiles a package of several files, reports the entry type's metadata and keeps static state between calls", async () => {
    const code = await activate(runner, csharp({
      "Tool.cs": cs([
        "namespace Text.Tools {",
        "public static class Summarize {",
        "  public const string Description = \"Summarize lines.\";",
        "  public static string Guidelines { get { return \"Use to summarize lines.\"; } }",
        "  public const string Parameters = \"{\\\"type\\\": \\\"object\\\",\\n \\\"required\\\": [\\\"text\\\"]}\";",
        "  public const string ExecutionMode = \"serial\";",
        "  static int calls;",
        "  public static string Run(string inputJson) {",
        "    var args = (Dictionary<string, object>)Json.Parse(inputJson);",
        "    calls++;",
        "    Console.WriteLine(\"summarizing \" + calls);",
        "    return Json.Write(new Dictionary<string, object> { { \"summary\", Helpers.Lines.Count((string)args[\"text\"]) }, { \"calls\", calls } });",
        "  }",
        "}",
        "}"
      ]),
      "Helpers/Lines.cs": cs(["namespace Helpers {", "public static class Lines {", "  public static int Count(string text) { return text.Split('\\n').Length; }", "}", "}"])
    }, { entrypoint: "Text.Tools.Summarize" }))
    expect(code.metadata).toEqual({
      description: "Summarize lines.",
      guidelines: "Use to summarize lines.",
      parameters: { type: "object", required: ["text"] },
      executionMode: "serial"
    })
    expect(await code.invoke({ text: "a\nbb" })).toEqual({ summary: 2, calls: 1 })
    expect(await code.invoke({ text: "ccc" })).toEqual({ summary: 1, calls: 2 })
    await code.dispose()
  })

  it("passes non-ASCII and nested JSON intact both ways, and refuses output that is not one JSON value", async () => {
    const code = await activate(runner, csharp({
      "Tool.cs": tool([
        "    var args = (Dictionary<string, object>)Json.Parse(inputJson);",
        "    if (args.ContainsKey(\"raw\")) return (string)args[\"raw\"];",
        "    return Json.Write(new Dictionary<string, object> { { \"echo\", args }, { \"pi\", 3.25 }, { \"big\", 1L << 40 } });"
      ])
    }))
    const args = { text: "héllo ✓ 𝄞", list: [1, -2.5, true, null, { deep: ["x"] }], quote: "\"\\\n" }
    expect(await code.invoke(args)).toEqual({ echo: args, pi: 3.25, big: 2 ** 40 })
    expect(await code.invoke({ raw: "{\n\"multi\": [1,\n2]\n}" })).toEqual({ multi: [1, 2] })
    const invalid = await rejection(code.invoke({ raw: "{not json" }))
    expect(invalid).toBeInstanceOf(ToolError.ToolError)
    expect(ThrownValue.errorType(invalid)).toBe("InvalidOutput")
    expect(ThrownValue.errorType(await rejection(code.invoke({ raw: "[1] [2]" })))).toBe("InvalidOutput")
    expect(await code.invoke({ text: "still alive" })).toMatchObject({ echo: { text: "still alive" } })
    await code.dispose()
  })

  it("rejects with what Run threw, classified by the exception's type name and message", async () => {
    const code = await activate(runner, csharp({
      "Tool.cs": cs([
        "public class QuotaException : Exception { public QuotaException(string m) : base(m) {} }",
        "public static class Main {",
        "  public static string Run(string inputJson) {",
        "    var kind = (string)((Dictionary<string, object>)Json.Parse(inputJson))[\"kind\"];",
        "    if (kind == \"argument\") throw new ArgumentException(\"bad value\");",
        "    if (kind == \"custom\") throw new QuotaException(\"over quota\");",
        "    return Json.Write(new object());",
        "  }",
        "}"
      ])
    }))
    const value = await rejection(code.invoke({ kind: "argument" }))
    expect(value).toBeInstanceOf(ToolError.ToolError)
    expect([ThrownValue.errorType(value), ThrownValue.message(value)]).toEqual(["ArgumentException", "bad value"])
    expect(ThrownValue.errorType(await rejection(code.invoke({ kind: "custom" })))).toBe("QuotaException")
    expect(ThrownValue.errorType(await rejection(code.invoke({ kind: "object" })))).toBe("JsonException")
    expect(ThrownValue.errorType(await rejection(code.invoke({})))).toBe("KeyNotFoundException")
    await code.dispose()
  })

  describe("activation errors", () => {
    const loadError = async (files: Record<string, string>, entrypoint = "Main") => {
      const error = await rejection(runner.activate(csharp(files, { entrypoint }), host()))
      expect(error).toBeInstanceOf(HarnessError.PackageError)
      return error as HarnessError.PackageError
    }

    it("a compile error is a CompileError naming the file, line and column", async () => {
      const error = await loadError({
        "Tool.cs": tool(["    return Helper.Twice(inputJson);"]),
        "Lib/Helper.cs": ["public static class Helper {", "  public static string Twice(string s) {", "    return s + s", "  }", "}"].join("\n")
      })
      expect(error.reason).toBe("CompileError")
      expect(error.path).toBe("Lib/Helper.cs")
      expect(error.detail).toBe("Lib/Helper.cs:4:2: error CS1525: Unexpected symbol `}', expecting `;'")
    })

    it("a missing entry type is MissingEntrypoint, one without Run(string) is EntrypointNotATool", async () => {
      const missing = await loadError({ "Tool.cs": tool(["    return inputJson;"]) }, "Other")
      expect([missing.reason, missing.path]).toEqual(["MissingEntrypoint", "Tool.cs"])
      const notATool = await loadError({ "Tool.cs": cs(["public static class Main { public static int Run(int x) { return x; } }"]) })
      expect(notATool.reason).toBe("EntrypointNotATool")
    })

    it("a static constructor that throws is an ActivationError, and so is Parameters that is not a JSON object", async () => {
      const throws = await loadError({ "Tool.cs": tool(["    return inputJson;"], ["  static Main() { throw new InvalidOperationException(\"no config\"); }"]) })
      expect(throws.reason).toBe("ActivationError")
      expect(throws.detail).toContain("InvalidOperationException: no config")
      const parameters = await loadError({ "Tool.cs": tool(["    return inputJson;"], ["  public const string Parameters = \"[1]\";"]) })
      expect(parameters.reason).toBe("ActivationError")
      expect(parameters.detail).toContain("JSON Schema object")
    })

    it("a package without Tool.cs is refused before anything runs", async () => {
      const error = await loadError({ "Main.cs": "class A {}\n" })
      expect([error.reason, error.path]).toEqual(["MissingFile", "Tool.cs"])
    })
  })

  describe("composition (D-24)", () => {
    it("Harness.CallTool sends a nested call naming the invocation and answers the value as JSON", async () => {
      const calls: Array<RecordedCall> = []
      const code = await activate(runner, csharp({
        "Tool.cs": tool([
          "    var value = (long)((Dictionary<string, object>)Json.Parse(inputJson))[\"value\"];",
          "    var sum = Harness.CallTool(\"add\", Json.Write(new Dictionary<string, object> { { \"left\", value }, { \"right\", value } }));",
          "    return Json.Write(new Dictionary<string, object> { { \"sum\", Json.Parse(sum) }, { \"callId\", Harness.CallId }, { \"depth\", Harness.Depth } });"
        ])
      }), host({ calls, answer: (_, a) => a.left + a.right }))
      expect(await code.invoke({ value: 21 }, { callId: "outer", depth: 2 })).toEqual({ sum: 42, callId: "outer", depth: 2 })
      expect(calls).toEqual([{ parentCallId: "outer", name: "add", args: { left: 21, right: 21 } }])
      await code.dispose()
    })

    it("a tool that calls itself through the host re-enters its own child: a recursion takes one child", async () => {
      const single = SandboxRunner.make({ ...testOptions, maximumRuntimeEnvironments: 1 })
      try {
        const harness = new MiniHarness(single)
        await harness.add("Main", csharp({
          "Tool.cs": tool([
            "    var n = (long)((Dictionary<string, object>)Json.Parse(inputJson))[\"n\"];",
            "    if (n == 0) return \"0\";",
            "    return (n + long.Parse(Harness.CallTool(\"Main\", \"{\\\"n\\\": \" + (n - 1) + \"}\"))).ToString();"
          ])
        }, { entrypoint: "Main" }))
        expect(await harness.call("Main", { n: 4 })).toBe(10)
        expect(single.poolSize()).toBe(1)
        expect(harness.calls.map((call) => call.depth)).toEqual([1, 2, 3, 4, 5])
      } finally {
        await single.close()
      }
    })

    it("a failed nested call throws ToolCallException with the nested type; let through, it rejects with the host's own error", async () => {
      const original = new HarnessError.ValidationError({ name: "strict", issues: "value must be >= 0" })
      const code = await activate(runner, csharp({
        "Tool.cs": tool([
          "    if (inputJson.Contains(\"catch\")) {",
          "      try { Harness.CallTool(\"strict\", \"{\\\"value\\\": -1}\"); }",
          "      catch (ToolCallException error) { return Json.Write(new Dictionary<string, object> { { \"type\", error.ErrorType }, { \"message\", error.Message } }); }",
          "    }",
          "    return Harness.CallTool(\"strict\", \"{\\\"value\\\": -1}\");"
        ])
      }), { sessionId: "session-1", callTool: () => Promise.reject(original) })
      expect(await code.invoke({ catch: true })).toEqual({ type: "ValidationError", message: "invalid arguments for 'strict': value must be >= 0" })
      expect(await rejection(code.invoke({}))).toBe(original)
      await code.dispose()
    })

    it("refuses Harness.CallTool outside an invocation: at load and from another thread", async () => {
      const code = await activate(runner, csharp({
        "Tool.cs": tool([
          "    string fromThread = null;",
          "    var thread = new System.Threading.Thread(() => { try { Harness.CallTool(\"x\", \"{}\"); } catch (ToolCallException e) { fromThread = e.ErrorType; } });",
          "    thread.Start(); thread.Join();",
          "    return Json.Write(new Dictionary<string, object> { { \"atLoad\", AtLoad }, { \"fromThread\", fromThread } });"
        ], [
          "  static readonly string AtLoad = Probe();",
          "  static string Probe() { try { Harness.CallTool(\"x\", \"{}\"); return \"called\"; } catch (ToolCallException e) { return e.ErrorType; } }"
        ])
      }))
      expect(await code.invoke({})).toEqual({ atLoad: "ToolRejected", fromThread: "ToolRejected" })
      await code.dispose()
    })
  })

  describe("ending a call", () => {
    it("a cancelled call kills its child and rejects with ToolCancelled; the next call starts another", async () => {
      const code = await activate(runner, csharp({ "Tool.cs": tool(["    if (inputJson.Contains(\"spin\")) while (true) {}", "    return \"1\";"]) }))
      const controller = new AbortController()
      const call = code.invoke({ spin: true }, { signal: controller.signal })
      setTimeout(() => controller.abort(), 200)
      expect(await rejection(call)).toBeInstanceOf(HarnessError.ToolCancelled)
      expect(await code.invoke({})).toBe(1)
      await code.dispose()
    })

    it("a call past its deadline is killed with Timeout", async () => {
      const code = await activate(runner, csharp({ "Tool.cs": tool(["    System.Threading.Thread.Sleep(60000);", "    return \"1\";"]) }))
      const error = await rejection(code.invoke({}, { deadline: Date.now() + 500 }))
      expect(error).toBeInstanceOf(SandboxError.SandboxError)
      expect(error.reason).toBe("Timeout")
      await code.dispose()
    })

    it("a child that crashes (Environment.FailFast, Environment.Exit) is a typed error, and the tool keeps serving", async () => {
      const code = await activate(runner, csharp({
        "Tool.cs": tool([
          "    if (inputJson.Contains(\"failfast\")) Environment.FailFast(\"boom\");",
          "    if (inputJson.Contains(\"exit\")) Environment.Exit(3);",
          "    return \"\\\"ok\\\"\";"
        ])
      }))
      for (const kind of ["failfast", "exit"]) {
        const error = await rejection(code.invoke({ [kind]: true }))
        expect(error).toBeInstanceOf(SandboxError.SandboxError)
        expect(error.reason).toBe("ChildExited")
      }
      expect(await code.invoke({})).toBe("ok")
      await code.dispose()
      expect(await settleProcesses(runner)).toBe(0)
    })
  })
})
