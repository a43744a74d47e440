/**
 * A `jitbox` command started by an example in a process of its own, from the same sources (or
 * build) as the example, its stdout kept as lines and `ready` resolved by its `ready …` line.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

const jitboxBin = fileURLToPath(new URL("../packages/cli/src/bin.ts", import.meta.url))

/** A `jitbox` command in its own process, its stdout kept as lines. */
export interface JitboxProcess {
  readonly name: string
  readonly child: ChildProcess
  readonly lines: Array<string>
  readonly ready: Promise<string>
  readonly exited: Promise<number | null>
}

export const jitbox = (name: string, args: ReadonlyArray<string>, env: Record<string, string>): JitboxProcess => {
  // the same node flags as this process (the sources through tsx, or the build)
  const child = spawn(process.execPath, [...process.execArgv, jitboxBin, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"]
  })
  const lines: Array<string> = []
  let partial = ""
  let onReady: (line: string) => void = () => {}
  const exited = new Promise<number | null>((resolve) => child.once("close", resolve))
  const ready = new Promise<string>((resolve, reject) => {
    onReady = resolve
    void exited.then((code) => reject(new Error(`${name} exited (${code}) before it was ready`)))
  })
  ready.catch(() => {})
  child.stdout!.on("data", (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split("\n")
    partial = parts.pop()!
    for (const line of parts) {
      lines.push(line)
      if (line.startsWith("ready ")) onReady(line)
    }
  })
  return { name, child, lines, ready, exited }
}
