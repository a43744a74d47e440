/**
 * Escapes a tool may try, each refused by at least one active layer, and failure modes of a child
 * that each fail the one invocation with a typed error and leave no process behind.
 */
import { HarnessError } from "@jitbox/core"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as ThrownValue from "../../core/src/ThrownValue.js"
import { Isolation, SandboxError, SandboxRunner, ToolError } from "../src/index.js"
import { activate, rejection, settleProcesses, source, testOptions } from "./helpers.js"

const SecretName = "JITBOX_TEST_SECRET"
const SecretValue = "s3cr3t-do-not-leak"
process.env[SecretName] = SecretValue

const isolation = Isolation.describeIsolation()
const active = (layer: string) => isolation.find((report) => report.layer === layer)?.active === true
const bwrap = active("bubblewrap")

const runner = SandboxRunner.make(testOptions)
let outside: string
beforeAll(() => {
  // world-writable, so only the sandbox (not file permissions) can stop a write
  outside = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-escape-"))
  fs.chmodSync(outside, 0o777)
})
afterAll(async () => {
  await runner.close()
  fs.rmSync(outside, { recursive: true, force: true })
})

const sandboxError = (error: unknown, reason: SandboxError.SandboxErrorReason) => {
  expect(error).toBeInstanceOf(SandboxError.SandboxError)
  expect((error as SandboxError.SandboxError).reason).toBe(reason)
}

describe("escapes", () => {
  it("writing outside the package directory is refused (Node, Python, Bash)", async () => {
    const target = (name: string) => path.join(outside, name)
    const node = await activate(runner, source("javascript", {
      "index.js": [
        `import * as fs from "node:fs"`,
        `export const main = tool({ description: "d" }, ({ target }) => {`,
        `  const attempt = (p) => { try { fs.writeFileSync(p, "x"); return "written" } catch (e) { return e.code } }`,
        `  return [attempt(target), attempt(new URL("./tool.mjs", import.meta.url).pathname)]`,
        `})`
      ].join("\n")
    }))
    expect(await node.invoke({ target: target("node") })).toEqual(["ERR_ACCESS_DENIED", "ERR_ACCESS_DENIED"])
    const python = await activate(runner, source("python", {
      "__init__.py": [
        "import os",
        "@tool(guidelines='g')",
        "def main(target: str) -> list:",
        "    def attempt(p):",
        "        try:",
        "            with open(p, 'w') as f:",
        "                f.write('x')",
        "            return 'written'",
        "        except OSError as e:",
        "            return type(e).__name__",
        "    return [attempt(target), attempt(os.path.join(os.path.dirname(__file__), 'evil.py')), attempt('work.txt')]"
      ].join("\n")
    }))
    const [outsideWrite, packageWrite, workWrite] = await python.invoke({ target: target("python") }) as Array<string>
    expect(outsideWrite).not.toBe("written")
    expect(packageWrite).not.toBe("written")
    expect(workWrite).toBe("written") // its private working directory is writable
    const bash = await activate(runner, source("bash", {
      "main.sh": "IFS= read -r t\nt=${t//\\\"/}\nif echo x > \"$t\" 2>/dev/null; then echo '\"written\"'; else echo '\"refused\"'; fi\n"
    }))
    expect(await bash.invoke(target("bash"))).toBe("refused")
    expect(fs.readdirSync(outside)).toEqual([])
    await Promise.all([node.dispose(), python.dispose(), bash.dispose()])
  })

  it("spawning a process or a worker is refused (Node: permission model; Python: seccomp)", async () => {
    const node = await activate(runner, source("javascript", {
      "index.js": [
        `import { execSync } from "node:child_process"`,
        `import { Worker } from "node:worker_threads"`,
        `export const main = tool({ description: "d" }, () => {`,
        `  const attempt = (f) => { try { f(); return "allowed" } catch (e) { return e.code } }`,
        `  return [attempt(() => execSync("true")), attempt(() => new Worker("1", { eval: true }))]`,
        `})`
      ].join("\n")
    }))
    expect(await node.invoke({})).toEqual(["ERR_ACCESS_DENIED", "ERR_ACCESS_DENIED"])
    await node.dispose()
    if (!active("seccomp")) return
    const python = await activate(runner, source("python", {
      "__init__.py": [
        "import os, subprocess",
        "@tool(guidelines='g')",
        "def main() -> list:",
        "    out = []",
        "    for attempt in (lambda: subprocess.run(['/bin/true']), os.fork):",
        "        try:",
        "            pid = attempt()",
        "            if pid == 0:",
        "                os._exit(0)",
        "            out.append('allowed')",
        "        except OSError as e:",
        "            out.append(type(e).__name__)",
        "    return out"
      ].join("\n")
    }))
    expect(await python.invoke({})).toEqual(["PermissionError", "PermissionError"])
    await python.dispose()
  })

  it("the parent's environment does not leak (Node, Python, Bash)", async () => {
    const node = await activate(runner, source("javascript", {
      "index.js": [
        `import * as fs from "node:fs"`,
        `export const main = tool({ description: "d" }, ({ hostPid }) => {`,
        `  let environ`,
        `  try { environ = fs.readFileSync("/proc/" + hostPid + "/environ", "utf8") } catch (e) { environ = e.code }`,
        `  return { secret: process.env.${SecretName} ?? null, caCerts: process.env.NODE_EXTRA_CA_CERTS ?? null,`,
        `    options: process.env.NODE_OPTIONS ?? null, keys: Object.keys(process.env).sort(), environ }`,
        `})`
      ].join("\n")
    }))
    const seen = await node.invoke({ hostPid: process.pid }) as Record<string, unknown>
    expect(seen.secret).toBeNull()
    expect(seen.caCerts).toBeNull()
    expect(seen.options).toBeNull()
    // bubblewrap adds PWD (the private working directory)
    expect((seen.keys as Array<string>).filter((key) => key !== "PWD")).toEqual([
      "HOME",
      "JITBOX_SANDBOX_CHILD",
      "LANG",
      "LC_ALL",
      "PATH",
      "TMPDIR",
      "UV_THREADPOOL_SIZE"
    ])
    expect(seen.environ).toBe("ERR_ACCESS_DENIED")
    const python = await activate(runner, source("python", {
      "__init__.py": [
        "import os",
        "@tool(guidelines='g')",
        "def main(host_pid: int) -> dict:",
        "    try:",
        "        with open(f'/proc/{host_pid}/environ', 'rb') as f:",
        "            environ = 'read' if b'" + SecretName + "' in f.read() else 'no secret'",
        "    except OSError as e:",
        "        environ = type(e).__name__",
        "    return {'secret': os.environ.get('" + SecretName + "'), 'environ': environ}"
      ].join("\n")
    }))
    const pythonSeen = await python.invoke({ host_pid: process.pid }) as Record<string, unknown>
    expect(pythonSeen.secret).toBeNull()
    expect(pythonSeen.environ).not.toBe("read")
    const bash = await activate(runner, source("bash", { "main.sh": `echo "\\"\${${SecretName}-unset}\\""\n` }))
    expect(await bash.invoke({})).toBe("unset")
    await Promise.all([node.dispose(), python.dispose(), bash.dispose()])
  })

  it("opening a network connection to the host is refused with bubblewrap, and its absence is reported", async () => {
    if (!bwrap) {
      // Without bubblewrap there is no network isolation: the report must say so, never stay silent.
      const report = Isolation.describeIsolation(testOptions).find((layer) => layer.layer === "bubblewrap")
      expect(report?.active).toBe(false)
      expect(report?.detail).toMatch(/.+/)
      return
    }
    let accepted = 0
    const server = net.createServer((socket) => {
      accepted++
      socket.end("hello\n")
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const port = (server.address() as net.AddressInfo).port
    try {
      const node = await activate(runner, source("javascript", {
        "index.js": [
          `import * as net from "node:net"`,
          `export const main = tool({ description: "d" }, ({ port }) => new Promise((resolve) => {`,
          `  const socket = net.connect(port, "127.0.0.1")`,
          `  socket.on("connect", () => { socket.destroy(); resolve("connected") })`,
          `  socket.on("error", (e) => resolve(e.code))`,
          `}))`
        ].join("\n")
      }))
      expect(await node.invoke({ port })).not.toBe("connected")
      const python = await activate(runner, source("python", {
        "__init__.py": [
          "import socket",
          "@tool(guidelines='g')",
          "def main(port: int) -> str:",
          "    try:",
          "        socket.create_connection(('127.0.0.1', port), timeout=2).close()",
          "        return 'connected'",
          "    except OSError as e:",
          "        return type(e).__name__"
        ].join("\n")
      }))
      expect(await python.invoke({ port })).not.toBe("connected")
      const bash = await activate(runner, source("bash", {
        "main.sh": "IFS= read -r port\nif exec 3<>/dev/tcp/127.0.0.1/$port 2>/dev/null; then echo '\"connected\"'; else echo '\"refused\"'; fi\n"
      }))
      expect(await bash.invoke(port)).toBe("refused")
      expect(accepted).toBe(0)
      await Promise.all([node.dispose(), python.dispose(), bash.dispose()])
    } finally {
      server.close()
    }
  })
})

describe("limits", () => {
  it("a fork bomb is bounded by RLIMIT_NPROC and leaves nothing behind (Bash)", async () => {
    // a uid of its own, so the process limit counts only this runner's processes
    const bombRunner = SandboxRunner.make({
      ...testOptions,
      shortTimeoutSeconds: 10,
      runAs: { uid: 64_123, gid: 64_123 },
      limits: { ...testOptions.limits, processes: 48 }
    })
    try {
      const code = await activate(bombRunner, source("bash", {
        "main.sh": "bomb() { bomb | bomb & }\nbomb 2>/dev/null\nsleep 0.5\necho '\"still here\"'\n"
      }))
      let peak = 0
      const sampler = setInterval(() => {
        peak = Math.max(peak, bombRunner.processes().length)
      }, 20)
      const outcome = await code.invoke({}).catch((error) => error)
      clearInterval(sampler)
      expect(outcome === "still here" || outcome instanceof SandboxError.SandboxError).toBe(true)
      expect(peak).toBeLessThanOrEqual(48 + 3)
      expect(await code.invoke({})).toBe("still here")
      await code.dispose()
      expect(await settleProcesses(bombRunner)).toBe(0)
    } finally {
      await bombRunner.close()
    }
  })

  it("an allocation loop hits the memory limit (Node: LimitExceeded, Python: MemoryError)", async () => {
    const small = SandboxRunner.make({ ...testOptions, limits: { ...testOptions.limits, memoryMiB: 96 } })
    const node = await activate(small, source("javascript", {
      "index.js": `let n = 0\nexport const main = tool({ description: "d" }, ({ grow }) => {\n  if (!grow) return ++n\n  const keep = []\n  for (;;) keep.push(new Array(1e6).fill(n))\n})`
    }))
    expect(await node.invoke({})).toBe(1)
    sandboxError(await rejection(node.invoke({ grow: true })), "LimitExceeded")
    expect(await node.invoke({})).toBe(1) // a replacement child: module state restarted
    const python = await activate(small, source("python", {
      "__init__.py": "@tool(guidelines='g')\ndef main() -> int:\n    keep = []\n    while True:\n        keep.append(bytearray(16 << 20))\n"
    }))
    const error = await rejection(python.invoke({}))
    expect(error).toBeInstanceOf(ToolError.ToolError)
    expect(ThrownValue.errorType(error)).toBe("MemoryError")
    await small.close()
  })

  it("an infinite loop is stopped by the CPU limit (Python, Bash)", async () => {
    const cpuRunner = SandboxRunner.make({ ...testOptions, limits: { ...testOptions.limits, cpuSeconds: 1 } })
    try {
      const python = await activate(cpuRunner, source("python", { "__init__.py": "@tool(guidelines='g')\ndef main() -> int:\n    while True:\n        pass\n" }))
      sandboxError(await rejection(python.invoke({})), "LimitExceeded")
      const bash = await activate(cpuRunner, source("bash", { "main.sh": "while :; do :; done\n" }))
      sandboxError(await rejection(bash.invoke({})), "LimitExceeded")
    } finally {
      await cpuRunner.close()
    }
    expect(cpuRunner.processes()).toEqual([])
  })
})

describe("misbehaving children", () => {
  const quick = SandboxRunner.make({ ...testOptions, shortTimeoutSeconds: 1, maxLogBytes: 64 * 1024 })
  afterAll(() => quick.close())

  it("an infinite loop or a child that never answers times out, and the next call gets a fresh child", async () => {
    const node = await activate(quick, source("javascript", {
      "index.js": `let n = 0\nexport const main = tool({ description: "d" }, ({ mode }) => {\n  n++\n  if (mode === "spin") for (;;) {}\n  if (mode === "hang") return new Promise(() => {})\n  return n\n})`
    }))
    expect(await node.invoke({})).toBe(1)
    sandboxError(await rejection(node.invoke({ mode: "spin" })), "Timeout")
    expect(await node.invoke({})).toBe(1)
    sandboxError(await rejection(node.invoke({ mode: "hang" })), "Timeout")
    const python = await activate(quick, source("python", { "__init__.py": "import time\n@tool(guidelines='g')\ndef main() -> int:\n    time.sleep(60)\n" }))
    sandboxError(await rejection(python.invoke({})), "Timeout")
    await Promise.all([node.dispose(), python.dispose()])
  })

  it("output flooding is cut off with OutputTooLarge (prints, an endless line, a huge stdout)", async () => {
    const node = await activate(quick, source("javascript", {
      "index.js": `export const main = tool({ description: "d" }, () => { for (;;) console.log("x".repeat(1000)) })`
    }))
    sandboxError(await rejection(node.invoke({})), "OutputTooLarge")
    const python = await activate(quick, source("python", {
      "__init__.py": "import os\n@tool(guidelines='g')\ndef main() -> int:\n    while True:\n        os.write(1, b'x' * 65536)\n"
    }))
    sandboxError(await rejection(python.invoke({})), "OutputTooLarge")
    const bash = await activate(quick, source("bash", { "main.sh": "printf '\"'; head -c 300000 /dev/zero | tr '\\0' x; printf '\"'\n" }))
    sandboxError(await rejection(bash.invoke({})), "OutputTooLarge")
    await Promise.all([node.dispose(), python.dispose(), bash.dispose()])
  })

  it("garbage on the protocol channel is a ProtocolViolation and the child is replaced", async () => {
    const python = await activate(quick, source("python", {
      "__init__.py": "import os\nn = 0\n@tool(guidelines='g')\ndef main(garbage: bool = False) -> int:\n    global n\n    n += 1\n    if garbage:\n        os.write(1, b'this is not json\\n')\n    return n\n"
    }))
    expect(await python.invoke({})).toBe(1)
    sandboxError(await rejection(python.invoke({ garbage: true })), "ProtocolViolation")
    expect(await python.invoke({})).toBe(1)
    await python.dispose()
  })

  it("a child that closes stdout early or exits fails the invocation", async () => {
    const python = await activate(quick, source("python", {
      "__init__.py": "import os\n@tool(guidelines='g')\ndef main() -> int:\n    os.close(1)\n    return 1\n"
    }))
    const closed = await rejection(python.invoke({}))
    expect(closed).toBeInstanceOf(SandboxError.SandboxError)
    expect(["ProtocolViolation", "ChildExited"]).toContain(closed.reason)
    const node = await activate(quick, source("javascript", { "index.js": `export const main = tool({ description: "d" }, () => process.exit(7))` }))
    const exited = await rejection(node.invoke({}))
    sandboxError(exited, "ChildExited")
    expect(exited.message).toContain("exit code 7")
    await Promise.all([python.dispose(), node.dispose()])
  })

  it("cancellation through the AbortSignal kills the process group and rejects with ToolCancelled", async () => {
    for (const [language, files] of [
      ["javascript", { "index.js": `export const main = tool({ description: "d" }, () => new Promise((r) => setTimeout(r, 60_000)))` }],
      ["python", { "__init__.py": "import time\n@tool(guidelines='g')\ndef main() -> int:\n    time.sleep(60)\n" }],
      ["bash", { "main.sh": "sleep 60\n" }]
    ] as const) {
      const code = await activate(quick, source(language, files))
      const controller = new AbortController()
      setTimeout(() => controller.abort(), 100)
      const error = await rejection(code.invoke({}, { callId: `cancel-${language}`, signal: controller.signal }))
      expect(error).toBeInstanceOf(HarnessError.ToolCancelled)
      // not a Timeout: the runner's 1 s bound would have said so
      expect(error.callId).toBe(`cancel-${language}`)
      await code.dispose()
    }
    expect(await settleProcesses(quick)).toBe(0)
  })
})

describe("no process left behind", () => {
  it("counts this suite's sandbox processes before and after closing runners", async () => {
    const local = SandboxRunner.make(testOptions)
    expect(local.processes()).toEqual([])
    const codes = await Promise.all([
      activate(local, source("javascript", { "index.js": `export const main = tool({ description: "d" }, () => 1)` })),
      activate(local, source("python", { "__init__.py": "@tool(guidelines='g')\ndef main() -> int:\n    return 1\n" }))
    ])
    expect(local.processes().length).toBeGreaterThan(0)
    for (const code of codes) expect(await code.invoke({})).toBe(1)
    await local.close()
    expect(local.processes()).toEqual([])
  })
})
