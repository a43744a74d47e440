/**
 * The CPU time (user + system) a tree of processes has used, reaped children included, from /proc:
 * for every live process below and including the roots, `utime + stime` (its own threads) plus
 * `cutime + cstime` (the children it has reaped, which the kernel adds there together with what
 * those had reaped in turn). A short-lived child (a sandbox child retired and replaced) is counted
 * once reaped, by its parent's `cutime`; while it lives, by its own `utime`.
 *
 * Why per tree and not /proc/stat's machine-wide totals: the benchmark shares its machine with
 * other work, whose CPU the totals would count as the benchmark's. Rooted at the benchmark's own
 * process, the tree holds every process of both sides (the requester, nats-server, the workers and
 * their sandbox children, the raw responder and its children) and nothing else. What the tree does
 * not see: a process reparented away from it (a daemon escaping to init), and a child that has
 * exited and not been reaped yet between two readings (counted once reaped).
 *
 * @since 0.1.0
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"

interface Stat {
  readonly ppid: number
  /** utime + stime + cutime + cstime, in clock ticks. */
  readonly ticks: number
}

/** The fields after the command's closing parenthesis, from `state` on (`man 5 proc`). */
const statOf = (pid: number): Stat | undefined => {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
    // state ppid … utime(11) stime(12) cutime(13) cstime(14), counted from state (0)
    return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]) }
  } catch {
    return undefined
  }
}

const ticksPerSecond = (() => {
  try {
    const value = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim())
    return Number.isInteger(value) && value > 0 ? value : 100
  } catch {
    return 100
  }
})()

/** Every process of the machine: its stat, and the children of each pid. */
const scan = () => {
  const stats = new Map<number, Stat>()
  const children = new Map<number, Array<number>>()
  for (const entry of fs.readdirSync("/proc")) {
    const pid = Number(entry)
    if (!Number.isInteger(pid)) continue
    const stat = statOf(pid)
    if (stat === undefined) continue
    stats.set(pid, stat)
    children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), pid])
  }
  return { stats, children }
}

/** `roots` and every process below them, each once. */
const below = (roots: ReadonlyArray<number>, children: Map<number, Array<number>>): Array<number> => {
  const seen = new Set<number>()
  const walk = (pid: number) => {
    if (seen.has(pid)) return
    seen.add(pid)
    for (const child of children.get(pid) ?? []) walk(child)
  }
  for (const root of roots) walk(root)
  return [...seen]
}

/**
 * Pids of the live processes below `root` (not `root` itself), from /proc.
 *
 * @since 0.1.0
 * @category readings
 */
export const descendants = (root: number): Array<number> => below([root], scan().children).filter((pid) => pid !== root)

/**
 * Milliseconds of CPU used so far by `roots`, every live descendant and every child any of them
 * has reaped.
 *
 * @since 0.1.0
 * @category readings
 */
export const treeMs = (roots: ReadonlyArray<number>): number => {
  const { children, stats } = scan()
  const ticks = below(roots, children).reduce((total, pid) => total + (stats.get(pid)?.ticks ?? 0), 0)
  return ticks * 1000 / ticksPerSecond
}

/**
 * Starts a reading of the tree below `roots`; the function returned gives the milliseconds of CPU
 * it used since.
 *
 * @since 0.1.0
 * @category readings
 */
export const since = (roots: ReadonlyArray<number>): (() => number) => {
  const start = treeMs(roots)
  return () => treeMs(roots) - start
}
