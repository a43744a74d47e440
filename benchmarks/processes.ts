/**
 * The processes a benchmark starts: every one is killed with what it started when the benchmark
 * exits, on success, failure or a signal, unless it was stopped before.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"
import { ProcessCpu } from "@jitbox/bench"

const { descendants } = ProcessCpu

const started = new Set<ChildProcess>()
const here = path.dirname(new URL(import.meta.url).pathname)

export const killTree = (child: ChildProcess) => {
  const below = child.pid === undefined ? [] : descendants(child.pid)
  child.kill("SIGKILL")
  for (const pid of below) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // gone meanwhile
    }
  }
}

/** Kills every process still running that was started here. */
export const killAll = () => {
  for (const child of started) killTree(child)
}

export interface Started {
  readonly child: ChildProcess
  /** What it wrote to stderr so far (also forwarded to this process's stderr). */
  readonly stderr: () => string
}

/** Starts `args` with this Node, resolving once a line of its stdout matches `ready`. */
export const startCommand = (args: ReadonlyArray<string>, extraEnv: Record<string, string>, ready: RegExp): Promise<Started> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] })
    started.add(child)
    let out = ""
    let err = ""
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      if (ready.test(out)) resolve({ child, stderr: () => err })
    })
    child.stderr!.on("data", (chunk: Buffer) => {
      err += chunk.toString()
      process.stderr.write(chunk)
    })
    child.once("exit", (code, signal) => {
      started.delete(child)
      reject(new Error(`${args.join(" ")} exited (${code ?? signal}) before it was ready`))
    })
  })

/** Starts the benchmark script `script` with this Node and tsx; resolves once it prints `ready`. */
export const startProcess = (script: string, extraEnv: Record<string, string>, nodeFlags: ReadonlyArray<string> = []): Promise<ChildProcess> =>
  startCommand([...nodeFlags, "--import", "tsx", path.join(here, script)], extraEnv, /^ready$/m).then(({ child }) => child)

/** SIGTERM (the process drains and exits), SIGKILL of what is left after 5 s. */
export const stopProcess = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      started.delete(child)
      return resolve()
    }
    const timer = setTimeout(() => killTree(child), 5_000)
    child.once("exit", () => {
      clearTimeout(timer)
      started.delete(child)
      resolve()
    })
    child.kill("SIGTERM")
  })

process.on("exit", killAll)
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    killAll()
    process.exit(130)
  })
}
