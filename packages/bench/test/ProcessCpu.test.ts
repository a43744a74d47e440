/**
 * CPU of a process tree, reaped children included, against real processes: a child that starts a
 * grandchild burning 400 ms of CPU and reaps it, then burns 200 ms itself. The tree's reading sees
 * both; the child's own utime + stime sees only its own 200 ms (the grandchild's time is only in the
 * child's cutime, once reaped).
 */
import { ProcessCpu } from "@jitbox/bench"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { expect, it } from "vitest"

/** Burns `ms` milliseconds of this process's own CPU (not of wall-clock time). */
const burn = `const burn = (ms) => { const start = process.cpuUsage(); let x = 1
  while (true) { for (let i = 0; i < 1e5; i++) x = (x * 31 + i) | 0
    const used = process.cpuUsage(start); if ((used.user + used.system) / 1000 >= ms) return x } }
`

const parent = `${burn}
const { spawnSync } = require("node:child_process")
process.stdout.write("ready\\n")
process.stdin.once("data", () => {
  const grandchild = spawnSync(process.execPath, ["-e", ${JSON.stringify(`${burn}burn(400)`)}], { stdio: "inherit" })
  if (grandchild.status !== 0) process.exit(1)
  burn(200)
  process.stdout.write("done\\n")
})
`

/** This process's own utime + stime, in clock ticks (no reaped children). */
const ownTicks = (pid: number): number => {
  const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
  return Number(fields[11]) + Number(fields[12])
}

it("counts a process's own CPU and that of the children it reaped", async () => {
  const child = spawn(process.execPath, ["-e", parent], { stdio: ["pipe", "pipe", "inherit"] })
  try {
    const lines: Array<string> = []
    const line = (text: string) =>
      new Promise<void>((resolve, reject) => {
        const check = (chunk: Buffer) => {
          lines.push(chunk.toString())
          if (lines.join("").includes(`${text}\n`)) resolve()
        }
        child.stdout!.on("data", check)
        child.once("exit", (code) => reject(new Error(`the child exited (${code}) before printing ${text}`)))
      })
    await line("ready")
    const reading = ProcessCpu.since([child.pid!])
    const ownBefore = ownTicks(child.pid!)
    const done = line("done")
    child.stdin!.write("go\n")
    await done
    const tree = reading()
    const own = ownTicks(child.pid!) - ownBefore
    // 400 + 200 ms burnt, plus the grandchild's start; a clock tick of slack per process
    expect(tree).toBeGreaterThanOrEqual(580)
    expect(tree).toBeLessThan(3_000)
    // the child's own time holds its 200 ms, not the grandchild's 400
    expect(own * 10).toBeLessThan(400)
  } finally {
    child.kill("SIGKILL")
  }
}, 60_000)

it("sums every root's tree once, and nothing of an unrelated tree", () => {
  const self = ProcessCpu.treeMs([process.pid])
  expect(ProcessCpu.treeMs([process.pid, process.pid])).toBeGreaterThanOrEqual(self)
  expect(ProcessCpu.treeMs([process.pid, process.pid])).toBeLessThan(self + 50)
  expect(ProcessCpu.treeMs([2 ** 22 + 1])).toBe(0)
})
