/**
 * Filling storage: every place a child can write stops at a bound from the runner's options (the
 * working directory and /tmp are sized tmpfs, /dev/shm links into /tmp, /, /dev and /mnt are
 * read-only), memory held outside the address space (System V segments) is refused, and the host's
 * shared memory does not grow past the bounds. Small limits keep the amounts written small.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { Isolation, SandboxRunner } from "../../src/index.js"
import { activate, source, testOptions } from "../helpers.js"

const MiB = 1024 * 1024
const BoundMiB = 4
/** Each place is offered this much, in files of 1 MiB (below the file-size limit, so only the place's bound can stop it). */
const AttemptMiB = 24
/** Shared memory other processes of this host may take meanwhile. */
const SlackMiB = 4

const limits = { ...testOptions.limits, tmpfsMiB: BoundMiB, workDirMiB: BoundMiB, fileSizeMiB: 8 }
const options = { ...testOptions, limits }
const bwrap = Isolation.describeIsolation(options).find((layer) => layer.layer === "bubblewrap")?.active === true

// the runner's own, so the test can look for host directories of its children; children (uid 65534) pass through it
const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-storage-test-"))
fs.chmodSync(tmpDir, 0o755)
const runner = SandboxRunner.make({ ...options, tmpDir })
afterAll(async () => {
  await runner.close()
  fs.rmSync(tmpDir, { recursive: true, force: true })
})

/** Where a child may try to write, and the most each may take: /dev/shm shares /tmp's bound. */
const places: ReadonlyArray<readonly [string, number]> = [
  ["/dev", 0],
  ["/dev/shm", BoundMiB],
  ["work", BoundMiB],
  ["/tmp", BoundMiB],
  ["/mnt", 0],
  ["/", 0]
]

interface Filled {
  readonly written: number
  readonly error: string | null
  readonly shmemGrowth: number
}

const PythonFiller = `import ctypes, errno, os

def shmem():
    with open('/proc/meminfo') as f:
        for line in f:
            if line.startswith('Shmem:'):
                return int(line.split()[1]) * 1024

def fill(place, attempt_mib):
    place = os.getcwd() if place == 'work' else place
    chunk = b'x' * (1 << 20)
    files, error = [], None
    before = shmem()
    try:
        while len(files) < attempt_mib:
            files.append(os.path.join(place, 'jitbox-fill-%d' % len(files)))
            with open(files[-1], 'wb') as f:
                f.write(chunk)
    except OSError as e:
        error = errno.errorcode.get(e.errno, str(e.errno))
    written = sum(os.stat(p).st_size for p in files if os.path.exists(p))
    growth = shmem() - before
    for p in files:
        try:
            os.remove(p)
        except OSError:
            pass
    return {'written': written, 'error': error, 'shmemGrowth': growth}

def sysv_shared_memory():
    libc = ctypes.CDLL(None, use_errno=True)
    segment = libc.shmget(0, 8 << 20, 0o1600)
    if segment >= 0:
        libc.shmctl(segment, 0, None)  # IPC_RMID
        return 'created'
    return errno.errorcode.get(ctypes.get_errno(), '?')

def memfd(attempt):
    fd = os.memfd_create('jitbox-fill')
    chunk = b'x' * (1 << 20)
    try:
        while os.fstat(fd).st_size < attempt:
            os.write(fd, chunk)
        return {'written': os.fstat(fd).st_size, 'error': None}
    except OSError as e:
        return {'written': os.fstat(fd).st_size, 'error': errno.errorcode.get(e.errno, str(e.errno))}
    finally:
        os.close(fd)

@tool(guidelines='g')
def main(places: list, attempt_mib: int, file_size: int) -> dict:
    return {
        'dev': sorted(os.listdir('/dev')),
        'filled': {place: fill(place, attempt_mib) for place in places},
        'sysv': sysv_shared_memory(),
        'memfd': memfd(file_size + (4 << 20)),
    }
`

const BashFiller = `IFS= read -r attempt
fill() {
  local n=0
  while (( n < attempt )); do
    head -c 1048576 /dev/zero 2>/dev/null >"$1/jitbox-fill-$n" || break
    n=$((n + 1))
  done
  local written
  written=$(cat "$1"/jitbox-fill-* 2>/dev/null | wc -c)
  rm -f "$1"/jitbox-fill-*
  printf '"%s":%d' "$2" "$written"
}
printf '{'
fill /dev dev; printf ','
fill /dev/shm shm; printf ','
fill "$PWD" work; printf ','
fill /tmp tmp; printf ','
fill /mnt mnt; printf ','
fill / root
printf '}\\n'
`

describe("storage", () => {
  it("every place a Python child writes stops at its bound, and host shared memory grows by no more", async () => {
    if (!bwrap) {
      // Without bubblewrap the working directory is a host directory bounded per file only: the report must say so.
      const report = Isolation.describeIsolation(options).find((layer) => layer.layer === "bounded-storage")
      expect(report?.active).toBe(false)
      expect(report?.detail).toContain("bounded only per file")
      return
    }
    const python = await activate(runner, source("python", { "__init__.py": PythonFiller }))
    const seen = await python.invoke({
      places: places.map(([place]) => place),
      attempt_mib: AttemptMiB,
      file_size: limits.fileSizeMiB * MiB
    }) as { dev: Array<string>; filled: Record<string, Filled>; sysv: string; memfd: { written: number; error: string | null } }
    for (const [place, boundMiB] of places) {
      const filled = seen.filled[place]!
      expect({ place, written: filled.written <= boundMiB * MiB }).toEqual({ place, written: true })
      expect({ place, stopped: filled.error !== null }).toEqual({ place, stopped: true })
      expect({ place, shmem: filled.shmemGrowth <= (boundMiB + SlackMiB) * MiB }).toEqual({ place, shmem: true })
    }
    expect(seen.filled["/dev"]!.error).toBe("EROFS")
    expect(seen.filled["/tmp"]!.error).toBe("ENOSPC")
    expect(seen.filled["work"]!.error).toBe("ENOSPC")
    // only the device nodes a runtime needs
    expect(seen.dev).toEqual(["fd", "full", "null", "random", "shm", "stderr", "stdin", "stdout", "urandom", "zero"])
    // a System V segment would outlive the mapping that counted against the address space
    expect(seen.sysv).toBe("EPERM")
    // an anonymous file is a file: RLIMIT_FSIZE bounds it
    expect(seen.memfd).toEqual({ written: limits.fileSizeMiB * MiB, error: "EFBIG" })
    await python.dispose()
  })

  it("the working directory has no host directory behind it", async () => {
    if (!bwrap) return
    const python = await activate(runner, source("python", {
      "__init__.py": "import os\n@tool(guidelines='g')\ndef main() -> str:\n    with open('kept.txt', 'w') as f:\n        f.write('x')\n    return os.getcwd()\n"
    }))
    expect(await python.invoke({})).toBe("/mnt/work")
    // the child is alive and its file is kept: nothing of it is on the host
    const found: Array<string> = []
    const walk = (dir: string) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        if (entry.name === "work" || entry.name === "kept.txt") found.push(path.join(dir, entry.name))
        if (entry.isDirectory()) walk(path.join(dir, entry.name))
      }
    }
    walk(tmpDir)
    expect(found).toEqual([])
    await python.dispose()
  })

  it("every place a Bash child writes stops at its bound", async () => {
    if (!bwrap) return
    const bash = await activate(runner, source("bash", { "main.sh": BashFiller }))
    const written = await bash.invoke(AttemptMiB) as Record<string, number>
    expect(written).toEqual({
      dev: 0,
      shm: expect.any(Number),
      work: expect.any(Number),
      tmp: expect.any(Number),
      mnt: 0,
      root: 0
    })
    for (const place of ["shm", "work", "tmp"]) {
      expect({ place, written: written[place]! <= BoundMiB * MiB }).toEqual({ place, written: true })
    }
    await bash.dispose()
  })

  it("a Node child cannot write at all (permission model)", async () => {
    const node = await activate(runner, source("javascript", {
      "index.js": [
        `import * as fs from "node:fs"`,
        `export const main = tool({ description: "d" }, ({ places }) => places.map((place) => {`,
        `  try { fs.writeFileSync((place === "work" ? process.cwd() : place) + "/jitbox-fill", "x"); return "written" } catch (e) { return e.code }`,
        `}))`
      ].join("\n")
    }))
    expect(await node.invoke({ places: places.map(([place]) => place) })).toEqual(places.map(() => "ERR_ACCESS_DENIED"))
    await node.dispose()
  })
})
