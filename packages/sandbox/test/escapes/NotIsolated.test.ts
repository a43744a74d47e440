/**
 * What `describeIsolation()` reports as not isolated is true: a child shares the host kernel, may
 * exec programs, shares RLIMIT_NPROC with every child of its uid, and sees the host paths of what
 * is bound into its sandbox. A report that hid one of these would be worse than the gap itself.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { Isolation, SandboxConfig, SandboxError, SandboxRunner } from "../../src/index.js"
import { activate, eventually, rejection, settleProcesses, source, testOptions } from "../helpers.js"

const layer = (name: string, options: SandboxConfig.SandboxOptions = testOptions) => {
  const report = Isolation.describeIsolation(options).find((entry) => entry.layer === name)
  expect(report, `a report of ${name}`).toBeDefined()
  return report!
}
const bwrap = Isolation.describeIsolation(testOptions).find((entry) => entry.layer === "bubblewrap")?.active === true

// the runner's own, to find its directories in a child's mount table; children (uid 65534) pass through it
const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-not-isolated-"))
fs.chmodSync(tmpDir, 0o755)
const runner = SandboxRunner.make({ ...testOptions, tmpDir })
afterAll(async () => {
  await runner.close()
  fs.rmSync(tmpDir, { recursive: true, force: true })
})

describe("not isolated, and reported so", () => {
  it("children share the host kernel", async () => {
    expect(layer("separate-kernel")).toMatchObject({ active: false, detail: expect.stringContaining("share the host kernel") })
    const bash = await activate(runner, source("bash", { "main.sh": `printf '"%s"\\n' "$(uname -r)"\n` }))
    expect(await bash.invoke({})).toBe(os.release())
    await bash.dispose()
  })

  it("children may exec programs: Bash runs them, Python can replace its own process", async () => {
    expect(layer("exec-restriction")).toMatchObject({ active: false, detail: expect.stringContaining("os.execv") })
    const bash = await activate(runner, source("bash", { "main.sh": `printf '%s\\n' "$(/usr/bin/id -u)"\n` }))
    expect(typeof await bash.invoke({})).toBe("number")
    const python = await activate(runner, source("python", {
      "__init__.py": "import os\n@tool(guidelines='g')\ndef main() -> int:\n    os.execv('/bin/true', ['true'])\n"
    }))
    // not a PermissionError from the tool: /bin/true replaced the child and exited
    const error = await rejection(python.invoke({}))
    expect(error).toBeInstanceOf(SandboxError.SandboxError)
    expect(error.reason).toBe("ChildExited")
    expect(error.message).toContain("exit code 0")
    await Promise.all([bash.dispose(), python.dispose()])
  })

  it("a C# tool can replace its own process through P/Invoke, and its JIT's pages are writable and executable", async () => {
    expect(layer("exec-restriction")).toMatchObject({ detail: expect.stringContaining("execv through P/Invoke") })
    expect(layer("csharp")).toMatchObject({ active: true, detail: expect.stringContaining("W+X") })
    const csharp = await activate(runner, source("csharp", {
      "Tool.cs": [
        "using System.Runtime.InteropServices;",
        "public static class Main {",
        "  [DllImport(\"libc\")] static extern int execv(string path, string[] argv);",
        "  public static string Run(string inputJson) {",
        "    if (inputJson.Contains(\"maps\")) {",
        "      var writableCode = 0;",
        "      foreach (var line in System.IO.File.ReadAllLines(\"/proc/self/maps\")) if (line.Contains(\" rwxp \")) writableCode++;",
        "      return writableCode.ToString();",
        "    }",
        "    execv(\"/bin/true\", new[] { \"true\", null });",
        "    return \"\\\"not replaced\\\"\";",
        "  }",
        "}"
      ].join("\n")
    }, { entrypoint: "Main" }))
    expect(await csharp.invoke({ maps: true })).toBeGreaterThan(0)
    const error = await rejection(csharp.invoke({}))
    expect(error).toBeInstanceOf(SandboxError.SandboxError)
    expect(error.reason).toBe("ChildExited")
    expect(error.message).toContain("exit code 0")
    await csharp.dispose()
  })

  it("RLIMIT_NPROC is shared by every child of a uid: one tool's processes keep another child from starting", async () => {
    const limits = { ...testOptions.limits, processes: 16 }
    // a uid of its own, so only this runner's processes count
    const options = { ...testOptions, runAs: { uid: 64_126, gid: 64_126 }, limits }
    expect(layer("own-process-budget", options)).toMatchObject({ active: false, detail: expect.stringContaining("RLIMIT_NPROC (16)") })
    const shared = SandboxRunner.make(options)
    try {
      const hog = await activate(shared, source("bash", { "main.sh": "for i in $(seq 32); do sleep 60 & done 2>/dev/null\nwait\n" }))
      const controller = new AbortController()
      const holding = hog.invoke({}, { signal: controller.signal }).catch((error) => error)
      await eventually(() => shared.processes().length >= limits.processes, "the hog to take the whole budget")
      const python = { "__init__.py": "@tool(guidelines='g')\ndef main() -> int:\n    return 1\n" }
      const starved = await rejection(activate(shared, source("python", python)))
      expect(String(starved)).toContain("Resource temporarily unavailable") // EAGAIN: no process left for the uid
      controller.abort()
      await holding
      await hog.dispose()
      expect(await settleProcesses(shared)).toBe(0)
      const fed = await activate(shared, source("python", python))
      expect(await fed.invoke({})).toBe(1)
    } finally {
      await shared.close()
    }
  })

  it("a child's mount table shows the host paths of the directories bound into its sandbox", async () => {
    expect(layer("hidden-host-paths")).toMatchObject({ active: false, detail: expect.stringContaining("host path") })
    const python = await activate(runner, source("python", {
      "__init__.py": "@tool(guidelines='g')\ndef main() -> str:\n    with open('/proc/self/mountinfo') as f:\n        return f.read()\n"
    }))
    const mountinfo = await python.invoke({}) as string
    expect(mountinfo).toContain(`${fs.realpathSync(tmpDir)}/jitbox-sandbox-`)
    if (bwrap) expect(mountinfo).toMatch(/jitbox-sandbox-\S+ \/mnt\/pkg /)
    await python.dispose()
  })
})
