/**
 * The `jitbox` command as a child process of a test: spawned from its sources
 * (`node --conditions=@jitbox/source --import tsx packages/cli/src/bin.ts …`), its stdout read
 * line by line, and the process tree of a pid read from /proc.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

const bin = fileURLToPath(new URL("../src/bin.ts", import.meta.url))
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url))

/** Text without the ANSI colours the help is printed with. */
export const plain = (text: string): string => text.replace(/\x1b\[[0-9;]*m/g, "")

export interface CliProcess {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly stderr: () => string
  /** Resolves with the first stdout line matching `pattern` (rejects if the process exits first or after `ms`). */
  readonly line: (pattern: RegExp, ms?: number) => Promise<string>
  /** Resolves with the exit code (null when a signal ended it) once the process has exited. */
  readonly exited: () => Promise<number | null>
  /** SIGKILL if it still runs. */
  readonly kill: () => void
}

/** A shell word for `text`. */
const quoted = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`

/**
 * Spawns `jitbox <args>`; the environment is this one's with `env` over it (an `undefined` value
 * unsets it). With `terminal`, the command runs on a pseudo-terminal (util-linux
 * `script -qfec "…" /dev/null`), so its stdout is a TTY; what it writes there arrives on `stdout`.
 */
export const spawnCli = (args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}, options: { readonly terminal?: boolean } = {}): CliProcess => {
  const merged: NodeJS.ProcessEnv = { ...process.env }
  for (const name of Object.keys(merged)) if (name.startsWith("JITBOX_")) delete merged[name]
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete merged[name]
    else merged[name] = value
  }
  const argv = ["--conditions=@jitbox/source", "--import", "tsx", bin, ...args]
  const child = spawn(options.terminal === true ? "script" : process.execPath, options.terminal === true ? ["-qfec", `exec ${[process.execPath, ...argv].map(quoted).join(" ")}`, "/dev/null"] : argv, {
    cwd: repoRoot,
    env: merged,
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  let err = ""
  const waiting = new Set<() => void>()
  const wake = () => {
    for (const waiter of [...waiting]) waiter()
  }
  child.stdout!.on("data", (chunk: Buffer) => {
    out += chunk.toString()
    wake()
  })
  child.stderr!.on("data", (chunk: Buffer) => {
    err += chunk.toString()
  })
  const exit = new Promise<number | null>((resolve) => {
    child.once("close", (code) => {
      resolve(code)
      wake()
    })
  })
  const done = () => child.exitCode !== null || child.signalCode !== null
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    line: (pattern, ms = 60_000) =>
      new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`no line ${pattern} within ${ms} ms; stdout:\n${out}\nstderr:\n${err}`)), ms)
        const finish = (error: Error | undefined, line?: string) => {
          clearTimeout(timer)
          waiting.delete(check)
          if (error === undefined) resolve(line!)
          else reject(error)
        }
        const check = () => {
          const found = out.split("\n").find((candidate) => pattern.test(candidate))
          if (found !== undefined) return finish(undefined, found)
          if (done()) finish(new Error(`exited (${child.exitCode ?? child.signalCode}) before a line ${pattern}; stdout:\n${out}\nstderr:\n${err}`))
        }
        waiting.add(check)
        check()
      }),
    exited: () => exit,
    kill: () => {
      if (!done()) child.kill("SIGKILL")
    }
  }
}

/** Pids of `root` and every process below it, from /proc. */
export const descendants = (root: number): Array<number> => {
  const parents = new Map<number, number>()
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]))
    } catch {
      // gone meanwhile
    }
  }
  const found = [root]
  for (let i = 0; i < found.length; i++) for (const [pid, parent] of parents) if (parent === found[i]) found.push(pid)
  return found
}

/** Whether `pid` is a live process (a zombie counts as gone). */
export const alive = (pid: number): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"
  } catch {
    return false
  }
}

/** Resolves once `check` holds (polling every 20 ms); rejects after `ms`. */
export const waitUntil = async (what: string, check: () => boolean, ms = 20_000): Promise<void> => {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
