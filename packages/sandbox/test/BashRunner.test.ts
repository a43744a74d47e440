import { HarnessError } from "@jitbox/core"
import * as fs from "node:fs"
import { afterAll, describe, expect, it } from "vitest"
import * as ThrownValue from "../../core/src/ThrownValue.js"
import { SandboxError, SandboxRunner, ToolError } from "../src/index.js"
import { activate, host, rejection, source, testOptions } from "./helpers.js"

const runner = SandboxRunner.make(testOptions)
afterAll(() => runner.close())

const sh = (lines: ReadonlyArray<string>) => lines.join("\n") + "\n"

describe("BashRunner", () => {
  it("reads one JSON value on stdin, writes one on stdout, declares no metadata", async () => {
    const code = await activate(runner, source("bash", {
      "main.sh": sh([
        "IFS= read -r -d '' input",
        "source ./lib/quote.sh 2>/dev/null || source \"${BASH_SOURCE%/*}/lib/quote.sh\"",
        "printf '{\"input\": %s, \"quoted\": %s}\\n' \"$input\" \"$(quote hello)\""
      ]),
      "lib/quote.sh": "quote() { printf '\"%s\"' \"$1\"; }\n"
    }, { entrypoint: "" }))
    expect(code.metadata).toEqual({})
    expect(await code.invoke({ a: [1, 2] })).toEqual({ input: { a: [1, 2] }, quoted: "hello" })
    expect(await code.invoke({ b: "two words" })).toEqual({ input: { b: "two words" }, quoted: "hello" })
    await code.dispose()
  })

  it("runs each invocation in a fresh subshell: no state leaks, exit and exec behave as in a script", async () => {
    const code = await activate(runner, source("bash", {
      "main.sh": sh([
        "count=$((count + 1))",
        "mode=$(cat)",
        "case $mode in",
        "  *exit*) echo '\"exited\"'; exit 0 ;;",
        "  *exec*) exec echo '\"exec\"' ;;",
        "  *untrap*) trap - EXIT; echo '\"untrapped\"'; exit 0 ;;",
        "esac",
        "echo \"$count\""
      ])
    }))
    expect(await code.invoke("plain")).toBe(1)
    expect(await code.invoke("plain")).toBe(1)
    expect(await code.invoke("exit")).toBe("exited")
    expect(await code.invoke("exec")).toBe("exec")
    expect(await code.invoke("untrap")).toBe("untrapped")
    expect(await code.invoke("plain")).toBe(1)
    await code.dispose()
  })

  it("a syntax error in main.sh is a CompileError with its line", async () => {
    const error = await rejection(runner.activate(source("bash", { "main.sh": sh(["echo 1", "if true; then", "  echo 2", "fi fi"]) }), host()))
    expect(error).toBeInstanceOf(HarnessError.PackageError)
    expect([error.reason, error.path]).toEqual(["CompileError", "main.sh"])
    expect(error.detail).toMatch(/main\.sh line 4: syntax error/)
  })

  it("a package without main.sh is MissingEntrypoint", async () => {
    const error = await rejection(runner.activate(source("bash", { "other.sh": "echo 1\n" }), host()))
    expect([error.reason, error.path]).toEqual(["MissingEntrypoint", "main.sh"])
  })

  it("anything but exactly one JSON value on stdout is a typed error (JT-CTR-06)", async () => {
    const code = await activate(runner, source("bash", {
      "main.sh": sh([
        "mode=$(cat)",
        "case $mode in",
        "  *two*) echo '{\"a\":1}'; echo '{\"b\":2}' ;;",
        "  *text*) echo 'hello world' ;;",
        "  *none*) : ;;",
        "  *fail*) echo 'something broke' >&2; exit 3 ;;",
        "  *) echo '  [1, 2]  ' ;;",
        "esac"
      ])
    }))
    for (const mode of ["two", "text", "none"]) {
      const error = await rejection(code.invoke(mode))
      expect(error).toBeInstanceOf(SandboxError.SandboxError)
      expect(error.reason).toBe("ProtocolViolation")
    }
    const failed = await rejection(code.invoke("fail"))
    expect(failed).toBeInstanceOf(ToolError.ToolError)
    expect(ThrownValue.errorType(failed)).toBe("NonZeroExit")
    expect(ThrownValue.message(failed)).toContain("status 3: something broke")
    expect(await code.invoke("ok")).toEqual([1, 2])
    await code.dispose()
  })

  it("kills what a script leaves running in the background when it returns", async () => {
    const code = await activate(runner, source("bash", {
      "main.sh": sh([
        "left=0",
        "for p in /proc/[0-9]*; do [[ -r $p/cmdline ]] && [[ $(tr '\\0' ' ' < $p/cmdline) == 'sleep 60 '* ]] && left=$((left + 1)); done",
        "sleep 60 &",
        "sleep 60 &",
        "echo \"$left\""
      ])
    }))
    // the second run sees none of the first run's sleeps: they were killed before it started
    expect(await code.invoke({})).toBe(0)
    expect(await code.invoke({})).toBe(0)
    // and on the host, the last run's sleeps go too while the child itself stays warm
    const sleeps = () =>
      runner.processes().filter((pid) => {
        try {
          return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith("sleep\u000060")
        } catch {
          return false
        }
      }).length
    const deadline = Date.now() + 3_000
    while (sleeps() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25))
    expect(sleeps()).toBe(0)
    expect(runner.processes().length).toBeGreaterThan(0)
    await code.dispose()
  })

  it("gives each call exactly its own arguments, output and error text, however long the earlier ones were", async () => {
    const code = await activate(runner, source("bash", {
      "main.sh": sh([
        "input=$(cat)",
        "case $input in",
        "  *big-out*) head -c 1200000 /dev/zero | tr '\\0' x; exit 0 ;;",
        "  *big-err*) head -c 1200000 /dev/zero | tr '\\0' y >&2; echo '\"quiet\"'; exit 0 ;;",
        "  *fail*) echo \"failed on $input\" >&2; exit 4 ;;",
        "esac",
        "echo \"$input\" >&2",
        "printf '%s\\n' \"$input\""
      ])
    }))
    const long = { text: "z".repeat(20_000) }
    expect(await code.invoke(long)).toEqual(long)
    // a shorter argument after a longer one: stdin holds exactly the new JSON
    expect(await code.invoke({ a: 1 })).toEqual({ a: 1 })
    // more than a MiB of stdout: too large for a result, and the next call starts clean
    expect((await rejection(code.invoke({ mode: "big-out" }))).reason).toBe("OutputTooLarge")
    expect(await code.invoke({ b: 2 })).toEqual({ b: 2 })
    expect(await code.invoke({ mode: "big-err" })).toBe("quiet")
    // the failure's detail is this call's stderr only, not what earlier calls printed there
    const failed = await rejection(code.invoke({ mode: "fail" }))
    expect(ToolError.isToolError(failed)).toBe(true)
    expect(failed.message).toContain(`status 4: failed on {"mode":"fail"}`)
    expect(failed.message).not.toContain("yyy")
    expect(failed.message).not.toContain(`{"b":2}`)
    expect(await code.invoke({ c: 3 })).toEqual({ c: 3 })
    await code.dispose()
  })

  it("a background process that writes after its call returned cannot reach the next call's output", async () => {
    const code = await activate(runner, source("bash", {
      "main.sh": sh([
        "n=$(cat)",
        "( sleep 0.2; echo '\"late\"'; echo late >&2 ) &",
        "echo \"$n\""
      ])
    }))
    expect(await code.invoke(1)).toBe(1)
    expect(await code.invoke(2)).toBe(2)
    await new Promise((resolve) => setTimeout(resolve, 400))
    expect(await code.invoke(3)).toBe(3)
    await code.dispose()
  })

  it("runs concurrent invocations of one version in separate children", async () => {
    const code = await activate(runner, source("bash", { "main.sh": sh(["IFS= read -r x", "sleep 1", "printf '[%s, \"%s\"]' \"$x\" \"$JITBOX_SANDBOX_CHILD\""]) }))
    const results = await Promise.all([1, 2].map((n) => code.invoke(n))) as Array<[number, string]>
    expect(results.map(([n]) => n)).toEqual([1, 2])
    expect(new Set(results.map(([, child]) => child)).size).toBe(2)
    await code.dispose()
  })
})
