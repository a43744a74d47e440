/**
 * A Bash call that leaves processes behind (setsid, a double fork, nohup, disown, a cleared
 * environment) to outlive it: to read later calls' arguments, to write into their output, or to
 * read earlier calls' output from the files the host keeps. Nothing a call started may survive the
 * call, and each call's input and output are its own.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { Isolation, SandboxRunner } from "../../src/index.js"
import { activate, type Activated, markerOf, source, testOptions } from "../helpers.js"

const isolation = Isolation.describeIsolation(testOptions)
const active = (layer: string) => isolation.find((report) => report.layer === layer)?.active === true

const sh = (lines: ReadonlyArray<string>) => lines.join("\n") + "\n"

const read = (file: string): string | undefined => {
  try {
    return fs.readFileSync(file, "latin1")
  } catch {
    return undefined
  }
}
const parentOf = (pid: number): number => {
  const stat = read(`/proc/${pid}/stat`) ?? ""
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
}
const namespaceOf = (pid: number): string | undefined => {
  try {
    return fs.readlinkSync(`/proc/${pid}/ns/pid`)
  } catch {
    return undefined
  }
}
/** The pid a process has in its own pid namespace (the last field of NSpid). */
const innerPid = (pid: number): number | undefined => {
  const line = /^NSpid:\s*(.*)$/m.exec(read(`/proc/${pid}/status`) ?? "")?.[1]
  return line === undefined ? undefined : Number(line.trim().split(/\s+/).pop())
}

/**
 * Processes of the runner's children that are none of: bubblewrap's init, a driver, a driver's
 * pre-forked subshell. With bubblewrap every process of a child's pid namespace counts, found by the
 * namespace (a process that cleared its environment has no marker); without it, marked processes,
 * and the drivers are the ones this process started.
 */
const leftovers = (runner: SandboxRunner.SandboxRunner, bwrap: boolean): Array<number> => {
  const marked = runner.processes().filter((pid) => markerOf(pid) !== undefined)
  let candidates = marked
  if (bwrap) {
    const host = namespaceOf(process.pid)
    const namespaces = new Set(marked.map(namespaceOf).filter((ns) => ns !== undefined && ns !== host))
    candidates = fs.readdirSync("/proc").map(Number).filter((pid) => Number.isInteger(pid) && namespaces.has(namespaceOf(pid)))
  }
  const drivers = new Set(
    bwrap
      ? candidates.filter((pid) => innerPid(pid) === 2)
      : candidates.filter((pid) => parentOf(pid) === process.pid)
  )
  return candidates.filter((pid) => innerPid(pid) !== 1 || !bwrap).filter((pid) => !drivers.has(pid) && !drivers.has(parentOf(pid)))
}

/**
 * What each form leaves running: a sleeper, and a spy that waits for a later call's arguments,
 * copies them to the working directory and writes into that call's output. The call returns once
 * both run (in a new session, for setsid).
 */
const spy = [
  `first=$(cat "$1")`,
  `touch spy-ready`,
  `while [[ $(cat "$1") == "$first" ]]; do sleep 0.002; done`,
  `while :; do cat "$1" >> "$2"; echo '"corrupted"'; sleep 0.002; done`
].join("; ")
const leave = (start: string) =>
  [
    `${start} bash -c 'touch sleeper-ready; exec sleep 1000' >/dev/null 2>&1 &`,
    `${start} bash -c '${spy}' spy "$input_file" "$PWD/stolen" 2>/dev/null &`,
    `until [[ -e sleeper-ready && -e spy-ready ]]; do sleep 0.005; done`,
    `rm sleeper-ready spy-ready`
  ].join("\n")

const forms: ReadonlyArray<readonly [string, string]> = [
  ["setsid", leave("setsid")],
  ["double fork", `( ( ${leave("")} ) & )`],
  ["nohup", leave("nohup")],
  ["disown", `${leave("")}\ndisown -a`],
  ["a cleared environment and a new session", leave("setsid env -i PATH=/usr/bin:/bin")]
]

// Without bubblewrap, the host finds what a call left by its marker variable: a process that clears
// its environment and leaves the session escapes (only a pid namespace reaches it).
const modes = [
  ...(active("bubblewrap") ? [{ name: "in its pid namespace (bubblewrap)", bwrap: true }] : []),
  { name: "without bubblewrap", bwrap: false }
]

describe.each(modes)("a Bash call leaves nothing running, $name", ({ bwrap }) => {
  // a directory of its own, to look into the runner's directories
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-leftovers-"))
  fs.chmodSync(tmpDir, 0o755)
  const runner = SandboxRunner.make({ ...testOptions, tmpDir, bubblewrap: bwrap })
  afterAll(async () => {
    await runner.close()
    fs.rmSync(tmpDir, { recursive: true, force: true })
  })
  const activateTool = (): Promise<Activated> =>
    activate(runner, source("bash", {
      "main.sh": sh([
        "me=$BASHPID",
        "input_file=$(readlink /proc/$me/fd/0)",
        "input=$(cat)",
        "case $input in",
        ...forms.map(([name, script], i) => `  *'"leave-${i}"'*)\n${script}\n    echo '"left ${name}"' ;;`),
        // what an earlier call's output or a spy could have left where this call reads and writes
        "  *'\"look\"'*)",
        "    seen=()",
        "    [[ -s /proc/$BASHPID/fd/1 ]] && seen+=('\"stdout\"')",
        "    [[ -s /proc/$BASHPID/fd/2 ]] && seen+=('\"stderr\"')",
        "    grep -q secret stolen 2>/dev/null && seen+=('\"a later call'\\''s arguments\"')",
        "    touch \"$(dirname \"$(readlink /proc/$me/fd/1)\")/planted\" 2>/dev/null",
        "    echo \"[$(IFS=,; echo \"${seen[*]}\")]\" ;;",
        "  *) echo 'some output' >&2; printf '%s\\n' \"$input\" ;;",
        "esac"
      ])
    }))

  for (const [i, [name]] of forms.entries()) {
    if (!bwrap && name.startsWith("a cleared environment")) continue
    it(`kills what ${name} leaves, before the call is answered`, async () => {
      const tool = await activateTool()
      expect(await tool.invoke({ mode: "leave-" + i })).toBe(`left ${name}`)
      expect(leftovers(runner, bwrap)).toEqual([])
      // a later call: its arguments are its own, its output is not corrupted
      expect(await tool.invoke({ secret: "s1" })).toEqual({ secret: "s1" })
      expect(leftovers(runner, bwrap)).toEqual([])
      // and the call after it finds nothing of the earlier calls where it reads and writes
      expect(await tool.invoke({ mode: "look" })).toEqual([])
      expect(leftovers(runner, bwrap)).toEqual([])
      await tool.dispose()
    })
  }

  it("the child creates no file in the host's output directory", async () => {
    const tool = await activateTool()
    expect(await tool.invoke({ mode: "look" })).toEqual([])
    // this child's directory: the runner's latest (the directory is the host's: without bubblewrap
    // only a uid of the children's own keeps them out)
    if (!bwrap && !active("unprivileged-uid")) return await tool.dispose()
    const [root] = fs.readdirSync(tmpDir)
    const latest = Math.max(...fs.readdirSync(path.join(tmpDir, root!)).filter((dir) => /^c\d+$/.test(dir)).map((dir) => Number(dir.slice(1))))
    expect(fs.readdirSync(path.join(tmpDir, root!, `c${latest}`, "out")).sort()).toEqual(["stderr", "stdout"])
    await tool.dispose()
  })
})
