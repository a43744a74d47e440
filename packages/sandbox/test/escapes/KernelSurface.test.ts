/**
 * Reaching kernel surface a tool has no use for: new namespaces (a nested user namespace gives a
 * child every capability inside it), io_uring, perf events, ptrace and cross-process memory access,
 * userfaultfd, the kernel keyring. Each is refused with EPERM by the seccomp program of every child,
 * Bash included, while threads (Node, Python) and processes (Bash) keep working.
 */
import { afterAll, describe, expect, it } from "vitest"
import { Isolation, SandboxRunner } from "../../src/index.js"
import { activate, source, testOptions } from "../helpers.js"

const isolation = Isolation.describeIsolation(testOptions)
const seccomp = isolation.find((layer) => layer.layer === "seccomp")?.active === true

/** Without the seccomp layer (no bubblewrap, not x86_64) the report must say what stays open, never stay silent. */
const reportsOpenKernel = () => {
  const kernel = isolation.find((layer) => layer.layer === "separate-kernel")
  expect(kernel?.active).toBe(false)
  expect(kernel?.detail).toContain("user namespaces")
}

const runner = SandboxRunner.make(testOptions)
afterAll(() => runner.close())

/**
 * Raw system calls through ctypes, each answered with "allowed" or its errno name. Arguments are
 * chosen so that a call the kernel accepts does no harm: what it opens is closed, a process it
 * creates exits at once.
 */
const Probe = `import ctypes, errno, os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def syscall(nr, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    if result < 0:
        return None, errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
    return result, 'allowed'

def opened(nr, *args):
    fd, outcome = syscall(nr, *args)
    if fd is not None:
        os.close(fd)
    return outcome

def address(buffer):
    return ctypes.addressof(buffer)

def clone_new_user():
    CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
    pid, outcome = syscall(56, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
    if pid == 0:
        os._exit(0)
    if pid is not None:
        os.waitpid(pid, 0)
    return outcome

def perf_event_open():
    attr = ctypes.create_string_buffer(128)
    ctypes.c_uint32.from_buffer(attr, 0).value = 1      # PERF_TYPE_SOFTWARE
    ctypes.c_uint32.from_buffer(attr, 4).value = 128    # size
    ctypes.c_uint64.from_buffer(attr, 8).value = 1      # PERF_COUNT_SW_TASK_CLOCK
    ctypes.c_uint64.from_buffer(attr, 40).value = 0b1100001  # disabled, exclude_kernel, exclude_hv
    return opened(298, address(attr), 0, -1, -1, 0)

def probe():
    io_uring_params = ctypes.create_string_buffer(120)
    # unshare last: where the kernel allows it, the process is in a new user namespace afterwards
    return {
        'clone': clone_new_user(),
        'clone3': syscall(435, 0, 0)[1],
        'setns': syscall(308, -1, 0)[1],
        'io_uring_setup': opened(425, 1, address(io_uring_params)),
        'perf_event_open': perf_event_open(),
        'ptrace': syscall(101, 16, 999999, 0, 0)[1],          # PTRACE_ATTACH
        'process_vm_readv': syscall(310, os.getpid(), 0, 0, 0, 0, 0)[1],
        'userfaultfd': opened(323, 1),                       # UFFD_USER_MODE_ONLY
        'keyctl': syscall(250, 0, -3, 0)[1],                 # KEYCTL_GET_KEYRING_ID of the session keyring
        'unshare': syscall(272, 0x10000000)[1],              # CLONE_NEWUSER
    }
`

const refused = {
  unshare: "EPERM",
  clone: "EPERM",
  clone3: "ENOSYS",
  setns: "EPERM",
  io_uring_setup: "EPERM",
  perf_event_open: "EPERM",
  ptrace: "EPERM",
  process_vm_readv: "EPERM",
  userfaultfd: "EPERM",
  keyctl: "EPERM"
}

describe("kernel surface", () => {
  it("a Python child is refused namespaces, io_uring, perf events, ptrace, userfaultfd and the keyring; its threads run", async () => {
    if (!seccomp) return reportsOpenKernel()
    const python = await activate(runner, source("python", {
      "__init__.py": [
        Probe,
        "import threading",
        "from concurrent.futures import ThreadPoolExecutor",
        "@tool(guidelines='g')",
        "def main() -> dict:",
        "    seen = []",
        "    threads = [threading.Thread(target=seen.append, args=(i,)) for i in range(4)]",
        "    for t in threads:",
        "        t.start()",
        "    for t in threads:",
        "        t.join()",
        "    with ThreadPoolExecutor(4) as pool:",
        "        squares = list(pool.map(lambda i: i * i, range(4)))",
        "    return {'refused': probe(), 'threads': sorted(seen), 'pool': squares}"
      ].join("\n")
    }))
    expect(await python.invoke({})).toEqual({ refused, threads: [0, 1, 2, 3], pool: [0, 1, 4, 9] })
    await python.dispose()
  })

  it("a Bash child is refused the same (raw calls and util-linux unshare); its pipelines and subshells run", async () => {
    if (!seccomp) return reportsOpenKernel()
    const bash = await activate(runner, source("bash", {
      "main.sh": [
        "probe=$(python3 - <<'EOF'",
        Probe,
        "import json",
        "print(json.dumps(probe()))",
        "EOF",
        ")",
        "unshare -U true 2>/dev/null && unshared=allowed || unshared=refused",
        "piped=$(echo abc | tr a-c x-z | cat)",
        "( exit 3 ); sub=$?",
        "sleep 0.01 & wait $! && background=done",
        "printf '{\"refused\":%s,\"unshare\":\"%s\",\"piped\":\"%s\",\"subshell\":%d,\"background\":\"%s\"}\\n' \"$probe\" \"$unshared\" \"$piped\" \"$sub\" \"$background\""
      ].join("\n")
    }))
    expect(await bash.invoke({})).toEqual({ refused, unshare: "refused", piped: "xyz", subshell: 3, background: "done" })
    await bash.dispose()
  })

  it("a Node child's threads run (libuv pool, V8 platform)", async () => {
    const node = await activate(runner, source("javascript", {
      "index.js": [
        `import { pbkdf2 } from "node:crypto"`,
        `import { gzip } from "node:zlib"`,
        `export const main = tool({ description: "d" }, async () => {`,
        `  const key = await new Promise((resolve, reject) => pbkdf2("a", "b", 1000, 8, "sha256", (e, k) => e ? reject(e) : resolve(k.length)))`,
        `  const zipped = await new Promise((resolve, reject) => gzip("x".repeat(1000), (e, z) => e ? reject(e) : resolve(z.length > 0)))`,
        `  return { key, zipped }`,
        `})`
      ].join("\n")
    }))
    expect(await node.invoke({})).toEqual({ key: 8, zipped: true })
    await node.dispose()
  })

  it("no child can write another process's memory through /proc (the Bash driver's included): /proc is read-only", async () => {
    if (Isolation.describeIsolation(testOptions).find((layer) => layer.layer === "bubblewrap")?.active !== true) {
      return reportsOpenKernel()
    }
    const bash = await activate(runner, source("bash", {
      "main.sh": `if { exec 9<>/proc/2/mem; } 2>/dev/null; then echo '"opened"'; else echo '"refused"'; fi\n`
    }))
    const python = await activate(runner, source("python", {
      "__init__.py": [
        "@tool(guidelines='g')",
        "def main() -> str:",
        "    try:",
        "        open('/proc/self/mem', 'r+b').close()",
        "        return 'opened'",
        "    except OSError as error:",
        "        return error.strerror",
        ""
      ].join("\n")
    }))
    expect(await bash.invoke({})).toBe("refused")
    expect(await python.invoke({})).toBe("Read-only file system")
    await Promise.all([bash.dispose(), python.dispose()])
  })
})
