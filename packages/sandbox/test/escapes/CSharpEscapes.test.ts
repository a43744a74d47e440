/**
 * Escapes a C# tool may try, each refused by at least one active layer, as Escapes.test.ts checks
 * them for Node, Python and Bash: the file system outside the working directory, the host's
 * environment, the network, new processes (Process.Start and fork through P/Invoke), the kernel
 * surface seccomp refuses (reached through P/Invoke), a thread bomb
 * (threads count against RLIMIT_NPROC), unbounded allocation, and protocol lines forged by hand.
 */
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as ThrownValue from "../../../core/src/ThrownValue.js"
import { Isolation, SandboxError, SandboxRunner, ToolError } from "../../src/index.js"
import { activate, rejection, settleProcesses, source, testOptions } from "../helpers.js"

const SecretName = "JITBOX_TEST_SECRET"
process.env[SecretName] = "s3cr3t-do-not-leak"

const bwrap = Isolation.describeIsolation().find((report) => report.layer === "bubblewrap")?.active === true
const seccomp = Isolation.describeIsolation().find((report) => report.layer === "seccomp")?.active === true

const runner = SandboxRunner.make(testOptions)
let outside: string
beforeAll(() => {
  // world-writable, so only the sandbox (not file permissions) can stop a write
  outside = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-escape-cs-"))
  fs.chmodSync(outside, 0o777)
})
afterAll(async () => {
  await runner.close()
  fs.rmSync(outside, { recursive: true, force: true })
})

/** A C# package whose entry type `Main` runs `body` with `args` (the parsed arguments) in scope. */
const csharp = (body: ReadonlyArray<string>, members: ReadonlyArray<string> = []) =>
  source("csharp", {
    "Tool.cs": [
      "using System;",
      "using System.Collections.Generic;",
      "using System.IO;",
      "using System.Runtime.InteropServices;",
      "using Jitbox;",
      "public static class Main {",
      ...members,
      "  public static string Run(string inputJson) {",
      "    var args = (Dictionary<string, object>)Json.Parse(inputJson);",
      ...body,
      "  }",
      "}"
    ].join("\n")
  }, { entrypoint: "Main" })

const sandboxError = (error: unknown, reason: SandboxError.SandboxErrorReason) => {
  expect(error).toBeInstanceOf(SandboxError.SandboxError)
  expect((error as SandboxError.SandboxError).reason).toBe(reason)
}

describe("C# escapes", () => {
  it("writes outside the working directory, into the package or its compiled assembly are refused", async () => {
    const code = await activate(runner, csharp([
      "    var results = new List<object>();",
      "    foreach (var target in new[] { (string)args[\"outside\"], args[\"package\"] + \"/tool.dll\", args[\"package\"] + \"/new.cs\" }) {",
      "      try { File.WriteAllText(target, \"x\"); results.Add(\"written\"); }",
      "      catch (Exception e) { results.Add(e.GetType().Name); }",
      "    }",
      "    File.WriteAllText(\"scratch.txt\", \"mine\");",
      "    results.Add(File.ReadAllText(\"scratch.txt\"));",
      "    return Json.Write(results);"
    ]))
    const target = path.join(outside, "csharp")
    const answer = await code.invoke({ outside: target, package: bwrap ? "/mnt/pkg" : "/nonexistent" }) as Array<string>
    expect(answer.slice(0, 3).every((outcome) => outcome !== "written")).toBe(true)
    expect(answer[3]).toBe("mine")
    expect(fs.existsSync(target)).toBe(false)
    await code.dispose()
  })

  it("sees none of the host's environment, neither its own nor through /proc", async () => {
    const code = await activate(runner, csharp([
      "    string environ;",
      "    try { environ = File.ReadAllText(\"/proc/\" + args[\"host_pid\"] + \"/environ\").Contains(\"" + SecretName + "\") ? \"read\" : \"no secret\"; }",
      "    catch (Exception e) { environ = e.GetType().Name; }",
      "    var keys = new List<string>();",
      "    foreach (System.Collections.DictionaryEntry entry in Environment.GetEnvironmentVariables()) keys.Add((string)entry.Key);",
      "    keys.Sort(StringComparer.Ordinal);",
      "    return Json.Write(new Dictionary<string, object> { { \"secret\", Environment.GetEnvironmentVariable(\"" + SecretName + "\") }, { \"environ\", environ }, { \"keys\", keys } });"
    ]))
    const seen = await code.invoke({ host_pid: process.pid }) as { secret: unknown; environ: string; keys: Array<string> }
    expect(seen.secret).toBeNull()
    expect(seen.environ).not.toBe("read")
    expect(seen.keys.filter((key) => key !== "PWD")).toEqual([
      "HOME",
      "JITBOX_INHERITED_FDS",
      "JITBOX_SANDBOX_CHILD",
      "LANG",
      "LC_ALL",
      "MONO_GC_PARAMS",
      "PATH",
      "TMPDIR"
    ])
    await code.dispose()
  })

  it("opening a network connection to the host is refused with bubblewrap", async () => {
    let accepted = 0
    const server = net.createServer((socket) => {
      accepted++
      socket.end("hello\n")
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const port = (server.address() as net.AddressInfo).port
    try {
      const code = await activate(runner, csharp([
        "    try { using (var client = new System.Net.Sockets.TcpClient(\"127.0.0.1\", (int)(long)args[\"port\"])) return \"\\\"connected\\\"\"; }",
        "    catch (Exception e) { return Json.Write(e.GetType().Name); }"
      ]))
      const outcome = await code.invoke({ port })
      if (bwrap) {
        expect(outcome).not.toBe("connected")
        expect(accepted).toBe(0)
      } else {
        expect(outcome).toBe("connected")
      }
      await code.dispose()
    } finally {
      server.close()
    }
  })

  it("starting a process is refused: Process.Start and fork through P/Invoke", async () => {
    const code = await activate(runner, csharp([
      "    string start;",
      "    try { System.Diagnostics.Process.Start(\"/bin/true\").WaitForExit(); start = \"started\"; }",
      "    catch (Exception e) { start = e.GetType().Name; }",
      "    var pid = fork();",
      "    if (pid == 0) _exit(0);",
      "    return Json.Write(new Dictionary<string, object> { { \"start\", start }, { \"fork\", pid < 0 ? \"refused\" : \"forked\" } });"
    ], ["  [DllImport(\"libc\")] static extern int fork();", "  [DllImport(\"libc\")] static extern void _exit(int code);"]))
    const outcome = await code.invoke({})
    if (seccomp) expect(outcome).toEqual({ start: "Win32Exception", fork: "refused" })
    else expect(outcome).toMatchObject({ fork: "forked" })
    await code.dispose()
  })

  it("the kernel surface seccomp refuses is refused through P/Invoke too: user namespaces, ptrace, io_uring", async () => {
    const code = await activate(runner, csharp([
      "    var errno = new Func<int, int>((result) => result == -1 ? Marshal.GetLastWin32Error() : 0);",
      "    return Json.Write(new Dictionary<string, object> {",
      "      { \"unshare\", errno(unshare(0x10000000)) },",
      "      { \"ptrace\", errno((int)ptrace(0, 0, IntPtr.Zero, IntPtr.Zero)) },",
      "      { \"io_uring_setup\", errno((int)syscall(425, 8, new byte[120])) }",
      "    });"
    ], [
      "  [DllImport(\"libc\", SetLastError = true)] static extern int unshare(int flags);",
      "  [DllImport(\"libc\", SetLastError = true)] static extern long ptrace(int request, int pid, IntPtr addr, IntPtr data);",
      "  [DllImport(\"libc\", SetLastError = true)] static extern long syscall(long number, int entries, byte[] parameters);"
    ]))
    const EPERM = 1
    if (seccomp) expect(await code.invoke({})).toEqual({ unshare: EPERM, ptrace: EPERM, io_uring_setup: EPERM })
    await code.dispose()
  })

  it("a thread bomb is bounded by RLIMIT_NPROC and leaves nothing behind", async () => {
    // a uid of its own, so the process limit counts only this runner's threads
    const bombRunner = SandboxRunner.make({ ...testOptions, runAs: { uid: 64_125, gid: 64_125 }, limits: { ...testOptions.limits, processes: 32 } })
    try {
      const code = await activate(bombRunner, csharp([
        "    if (!args.ContainsKey(\"bomb\")) return \"\\\"still here\\\"\";",
        "    var started = 0;",
        "    try { for (var i = 0; i < 1000; i++) { new System.Threading.Thread(() => System.Threading.Thread.Sleep(60000)).Start(); started++; } }",
        "    catch (Exception e) { return Json.Write(new Dictionary<string, object> { { \"started\", started }, { \"error\", e.GetType().Name } }); }",
        "    return Json.Write(started);"
      ]))
      const outcome = await code.invoke({ bomb: true }).catch((error: unknown) => error)
      if (outcome instanceof SandboxError.SandboxError) expect(outcome.reason).toMatch(/ChildExited|LimitExceeded/)
      else expect((outcome as { started: number }).started).toBeLessThan(32)
      expect(await code.invoke({})).toBe("still here")
      await code.dispose()
      expect(await settleProcesses(bombRunner)).toBe(0)
    } finally {
      await bombRunner.close()
    }
  })

  it("an allocation loop hits the heap bound: OutOfMemoryException fails the call, and the tool keeps serving", async () => {
    const small = SandboxRunner.make({ ...testOptions, limits: { ...testOptions.limits, memoryMiB: 96 } })
    try {
      const code = await activate(small, csharp([
        "    if (!args.ContainsKey(\"grow\")) return \"1\";",
        "    var keep = new List<byte[]>();",
        "    while (true) keep.Add(new byte[16 << 20]);"
      ]))
      const error = await rejection(code.invoke({ grow: true }))
      if (error instanceof ToolError.ToolError) expect(ThrownValue.errorType(error)).toBe("OutOfMemoryException")
      else sandboxError(error, "ChildExited")
      expect(await code.invoke({})).toBe(1)
      await code.dispose()
    } finally {
      await small.close()
    }
  })

  it("a CallTool line written by hand for an invocation not in flight kills the child and never reaches the host", async () => {
    const calls: Array<string> = []
    const code = await activate(runner, csharp([
      "    var line = System.Text.Encoding.UTF8.GetBytes(\"{\\\"_tag\\\":\\\"CallTool\\\",\\\"requestId\\\":\\\"x\\\",\\\"invocationId\\\":\\\"7\\\",\\\"name\\\":\\\"secret\\\",\\\"args\\\":{}}\\n\");",
      "    foreach (var fd in new[] { 1, 3, 4, 5, 6, 7, 8, 9, 10 }) write(fd, line, (IntPtr)line.Length);",
      "    return Harness.CallTool(\"allowed\", \"{}\");"
    ], ["  [DllImport(\"libc\")] static extern IntPtr write(int fd, byte[] buffer, IntPtr count);"]), {
      sessionId: "session-1",
      callTool: async (_parent, name) => calls.push(name)
    })
    const error = await rejection(code.invoke({}))
    expect(error).toMatchObject({ _tag: "SandboxError", reason: "ProtocolViolation" })
    expect(calls).toEqual([])
  })
})
