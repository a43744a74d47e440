/**
 * Descriptors the host process holds without close-on-exec (its launcher's, say) must not reach a
 * child: prlimit and bubblewrap pass them on, a directory descriptor opens the host's file system
 * around every mount, and the Node permission model does not check reads and writes on open
 * descriptors. A separate host process is started with a file and a directory open on descriptors
 * 20 and 100: above the 64 open files a child may have, and above the 0-15 to which Node's own
 * startup (libuv's uv_disable_stdio_inheritance) gives close-on-exec. Its Node, Python, Bash and C#
 * tools each try every descriptor from 3 up, with and without bubblewrap.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { source, testOptions } from "../helpers.js"

const repoRoot = fileURLToPath(new URL("../../../../", import.meta.url))
const hostScript = fileURLToPath(new URL("./inheritedDescriptorsHost.ts", import.meta.url))
const FileDescriptor = 20
const DirectoryDescriptor = 100
const Secret = "outside the sandbox"

// Each tool answers `fd=device:inode` for every descriptor from 3 up that it can stat, and tries to
// read and overwrite a file and to list and create a file in a directory through it.
const tools = () => [
  {
    name: "node",
    source: source("javascript", {
      "index.js": `import * as fs from "node:fs"
export const main = tool({ description: "d" }, () => {
  const reached = []
  for (let fd = 3; fd < 1024; fd++) {
    let stat
    try { stat = fs.fstatSync(fd) } catch { continue }
    reached.push(fd + "=" + stat.dev + ":" + stat.ino)
    if (stat.isFile()) {
      try { fs.readSync(fd, Buffer.alloc(64), 0, 64, 0) } catch {}
      try { fs.writeSync(fd, "node was here", 0) } catch {}
    }
  }
  return reached
})
`
    })
  },
  {
    name: "python",
    source: source("python", {
      "__init__.py": `import os, stat
@tool(guidelines='g')
def main() -> list:
    reached = []
    for name in os.listdir('/proc/self/fd'):
        fd = int(name)
        if fd < 3:
            continue
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        reached.append(f'{fd}={st.st_dev}:{st.st_ino}')
        try:
            if stat.S_ISDIR(st.st_mode):
                os.listdir(fd)
                os.close(os.open('python-was-here', os.O_CREAT | os.O_WRONLY, 0o666, dir_fd=fd))
            elif stat.S_ISREG(st.st_mode):
                os.pread(fd, 64, 0)
                os.pwrite(fd, b'python was here', 0)
        except OSError:
            pass
    return reached
`
    })
  },
  {
    name: "bash",
    source: source("bash", {
      "main.sh": `reached=()
for link in /proc/self/fd/*; do
  fd=\${link##*/}
  (( fd < 3 )) && continue
  id=$(stat -L -c %d:%i "$link" 2>/dev/null) || continue
  reached+=("\\"$fd=$id\\"")
  if [[ -d $link ]]; then
    ls "$link/" >/dev/null 2>&1
    echo bash was here 2>/dev/null >"$link/bash-was-here"
  elif [[ -f $link ]]; then
    echo bash was here 2>/dev/null >&$fd
  fi
done
IFS=,; echo "[\${reached[*]}]"
`
    })
  },
  {
    name: "csharp",
    source: source("csharp", {
      "Tool.cs": `using System.Collections.Generic;
using System.IO;
using System.Runtime.InteropServices;
public static class Main {
  [DllImport("libc")] static extern int fstat(int fd, byte[] stat);
  [DllImport("libc")] static extern long pread(int fd, byte[] buffer, long count, long offset);
  [DllImport("libc")] static extern long pwrite(int fd, byte[] buffer, long count, long offset);
  public static string Run(string inputJson) {
    var reached = new List<object>();
    foreach (var link in Directory.GetFileSystemEntries("/proc/self/fd")) {
      var fd = int.Parse(Path.GetFileName(link));
      var stat = new byte[256];
      if (fd < 3 || fstat(fd, stat) != 0) continue;
      reached.Add(fd + "=" + System.BitConverter.ToUInt64(stat, 0) + ":" + System.BitConverter.ToUInt64(stat, 8));
      if ((System.BitConverter.ToUInt32(stat, 24) & 0xF000) == 0x8000) {
        pread(fd, new byte[64], 64, 0);
        var text = System.Text.Encoding.UTF8.GetBytes("csharp was here");
        pwrite(fd, text, text.Length, 0);
      }
    }
    return Jitbox.Json.Write(reached);
  }
}
`
    }, { entrypoint: "Main" })
  }
]

let outside: string
let file: string
beforeAll(() => {
  // world-writable, so only the sandbox (not file permissions) can stop a write
  outside = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-descriptors-"))
  fs.chmodSync(outside, 0o777)
  file = path.join(outside, "secret.txt")
  fs.writeFileSync(file, Secret)
  fs.chmodSync(file, 0o666)
})
afterAll(() => fs.rmSync(outside, { recursive: true, force: true }))

/** Runs the host script with `file` and `dir` open on their descriptors; its JSON answer. */
const runHost = async (input: unknown, fileFd: number, dirFd: number): Promise<any> => {
  const stdio = Array.from({ length: DirectoryDescriptor + 1 }, (_, i) =>
    i < 3 ? "pipe" as const : i === FileDescriptor ? fileFd : i === DirectoryDescriptor ? dirFd : "ignore" as const
  )
  const child = spawn(process.execPath, ["--conditions=@jitbox/source", "--import", "tsx", hostScript, JSON.stringify(input)], {
    cwd: repoRoot,
    stdio
  })
  let stdout = ""
  let stderr = ""
  child.stdout!.on("data", (chunk) => (stdout += chunk))
  child.stderr!.on("data", (chunk) => (stderr += chunk))
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on("error", reject)
    child.on("close", resolve)
  })
  expect({ code, stderr }).toEqual({ code: 0, stderr: "" })
  return JSON.parse(stdout)
}

describe("inherited descriptors", () => {
  it("a child holds none of the host's descriptors: Node, Python, Bash and C#, with and without bubblewrap", async () => {
    const fileFd = fs.openSync(file, "r+")
    const dirFd = fs.openSync(outside, "r")
    const runs = [{ name: "default", options: testOptions }, { name: "no bubblewrap", options: { ...testOptions, bubblewrap: false } }]
    let answer: any
    try {
      answer = await runHost({
        held: [FileDescriptor, DirectoryDescriptor],
        runs: runs.map((run) => ({ options: run.options, tools: tools() }))
      }, fileFd, dirFd)
    } finally {
      fs.closeSync(fileFd)
      fs.closeSync(dirFd)
    }
    // the host really holds both without close-on-exec, so a child would inherit them
    expect(answer.held).toEqual({ [FileDescriptor]: true, [DirectoryDescriptor]: true })

    const identity = (p: string) => {
      const stat = fs.statSync(p)
      return `${stat.dev}:${stat.ino}`
    }
    const outsideIdentities = new Map([[identity(file), "the outside file"], [identity(outside), "the outside directory"]])
    const reached: Array<string> = []
    answer.results.forEach((byTool: Record<string, Array<string>>, run: number) => {
      expect(Object.keys(byTool)).toEqual(["node", "python", "bash", "csharp"])
      for (const [tool, entries] of Object.entries(byTool)) {
        expect(Array.isArray(entries)).toBe(true)
        for (const entry of entries) {
          const [fd, id] = entry.split("=")
          const what = outsideIdentities.get(id!)
          if (what !== undefined) reached.push(`${runs[run]!.name}: ${tool} reached ${what} on descriptor ${fd}`)
        }
      }
    })
    expect(reached).toEqual([])
    expect(fs.readFileSync(file, "utf8")).toBe(Secret)
    expect(fs.readdirSync(outside)).toEqual(["secret.txt"])
  }, 60_000)
})
