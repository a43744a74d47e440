/**
 * A Bash child: the driver script (runtime/bash-driver.sh) runs one invocation at a time in a
 * pre-forked subshell. The host rewrites `in.json` with the arguments and sends an empty line; the
 * driver answers `Reaped` once the subshell has exited and everything the call started is dead (with
 * bubblewrap the driver kills its whole pid namespace but itself; without it the host kills what
 * carries the child's marker, see `sweep`). Only then is the call answered, from the output files,
 * which must hold exactly one JSON value on stdout (JT-CTR-06); then the files are emptied. So each
 * call reads only its own arguments and output, nothing of a call survives it, and a driver that
 * dies during a call (the tool killed it) fails that call and never serves another one.
 *
 * The pool gives a child one invocation at a time; a second one would queue here and be sent after
 * the previous one's `Reaped`.
 *
 * The host creates the three files before the child starts and keeps them open; no file is created
 * or opened by path per call. Creating files on ext4 costs journal work; `in.json` is rewritten in
 * place and cut to length (never to zero: ext4 flushes a file truncated to zero when it is closed);
 * `stdout` and `stderr` are emptied after each call, which is cheap because the driver keeps them
 * open (see bash-driver.sh).
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Protocol from "../Protocol.js"
import type { SandboxErrorReason } from "../SandboxError.js"
import { ToolError } from "../ToolError.js"
import { cancelled, ChildBase, type ChildCall, type ChildHooks, classifyExit, encodeArgs, signalName, tick, timedOut } from "./child.js"
import { killMarked, markedProcesses } from "./spawn.js"

interface Job {
  readonly argsJson: string
  readonly context: ChildCall
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
  timer: NodeJS.Timeout | undefined
  onAbort: (() => void) | undefined
}

/** Host paths of the child's files, created by the host before the child starts. */
export interface BashFiles {
  /** The arguments file the driver feeds to main.sh (read-only for the child). */
  readonly input: string
  /** Where a call's stdout and stderr go; the host empties them after each call. */
  readonly stdout: string
  readonly stderr: string
}

export class BashChild extends ChildBase {
  private readonly queue: Array<Job> = []
  /** The job sent to the driver and not yet reaped. */
  private current: Job | undefined
  private readonly fds: { readonly input: number; readonly stdout: number; readonly stderr: number } | undefined
  /** The length of `in.json`, so that it is cut only when the next arguments are shorter. */
  private inputBytes = 0
  /** Without a pid namespace: the last pid the kernel gave out when the call was sent. */
  private lastPidBefore: string | undefined

  /**
   * `sweepMarker` is set when the child has no pid namespace of its own: the processes a call
   * leaves outside its process group are then found by their marker variable.
   */
  constructor(proc: ChildProcessWithoutNullStreams, hooks: ChildHooks, files: BashFiles) {
    super(proc, hooks)
    const opened: Array<number> = []
    try {
      for (const file of [files.input, files.stdout, files.stderr]) opened.push(openOwn(file))
      this.fds = { input: opened[0]!, stdout: opened[1]!, stderr: opened[2]! }
    } catch (error) {
      for (const fd of opened) fs.closeSync(fd)
      queueMicrotask(() => this.fail("SpawnFailed", `cannot open the child's files: ${(error as Error).message}`))
    }
    void this.exited.then(() => {
      for (const fd of this.fds !== undefined ? Object.values(this.fds) : []) fs.close(fd, () => {})
    })
  }

  invoke(args: unknown, context: ChildCall): Promise<unknown> {
    const gone = this.unavailable()
    if (gone !== undefined) return Promise.reject(gone)
    const argsJson = encodeArgs(args)
    if (typeof argsJson !== "string") return Promise.reject(this.error(argsJson.reason, argsJson.detail))
    if (context.signal?.aborted === true) return Promise.reject(cancelled(this.hooks.toolName, context))
    return new Promise((resolve, reject) => {
      const job: Job = { argsJson, context, resolve, reject, timer: undefined, onAbort: undefined }
      job.timer = setTimeout(() => this.timedOut(job), context.timeoutMs)
      if (context.signal !== undefined) {
        job.onAbort = () => this.cancel(job)
        context.signal.addEventListener("abort", job.onAbort, { once: true })
      }
      this.queue.push(job)
      if (this.inflight === 0) this.printedBytes = 0
      this.inflight++
      this.lastUsed = tick()
      this.pump()
    })
  }

  protected onLine(line: string): void {
    const message = Protocol.decodeBashLine(line)
    if (typeof message === "string") return this.fail("ProtocolViolation", message)
    switch (message._tag) {
      case "Loaded":
      case "LoadFailed":
        if (!this.resolveLoad(message)) this.fail("ProtocolViolation", `unexpected ${message._tag}`)
        return this.pump()
      case "Reaped": {
        const job = this.current
        if (job === undefined) return this.fail("ProtocolViolation", "a Reaped with no invocation running")
        if (this.hooks.sweepMarker !== undefined && this.forkedSince() && !this.sweep(this.hooks.sweepMarker)) {
          return this.fail("ChildExited", "the processes the invocation left running could not all be killed")
        }
        this.current = undefined
        this.finishJob(job)
        this.settle(job, message.exitCode)
        // off the answer's path: what awaits the answer runs first
        setImmediate(this.afterAnswer)
        return this.afterJob()
      }
    }
  }

  /**
   * A driver that ends while a call runs was killed by that call (the host's own kills mark the
   * child dead first), unless its own CPU time ran out.
   */
  protected override exitError(code: number | null, signal: NodeJS.Signals | null): { readonly reason: SandboxErrorReason; readonly detail: string } {
    const name = signalName(code, signal)
    if (this.current === undefined || name === "SIGXCPU") return super.exitError(code, signal)
    const how = name !== undefined ? `was killed by ${name}` : `exited with code ${code}`
    return {
      reason: "ChildExited",
      detail: `the Bash driver ${how} while main.sh ran: the tool killed its own driver (for example with \`kill -9 -1\`); the child is replaced`
    }
  }

  protected rejectAll(reason: SandboxErrorReason, detail: string): void {
    const jobs = this.current !== undefined ? [this.current, ...this.queue] : [...this.queue]
    this.current = undefined
    this.queue.length = 0
    for (const job of jobs) {
      this.finishJob(job)
      job.reject(this.error(reason, detail))
    }
  }

  /**
   * Empties the output files, so that the next call sees nothing of this one's, then lets the
   * driver fork the next subshell (an empty line; it may come after the next call's, which the
   * driver then takes as this one: the subshell starts on the second line, after the files are
   * emptied). A fork takes longer than the answer and would run first on a busy CPU.
   */
  private readonly afterAnswer = (): void => {
    if (this.state === "dead") return
    try {
      for (const fd of [this.fds!.stdout, this.fds!.stderr]) {
        if (fs.fstatSync(fd).size > 0) fs.ftruncateSync(fd, 0)
      }
    } catch (error) {
      return this.fail("ChildExited", `cannot empty the child's output files: ${(error as Error).message}`)
    }
    this.write("\n")
  }

  /** Sends the next queued invocation once the previous one is reaped. */
  private pump(): void {
    if (this.current !== undefined || this.state !== "ready" || this.fds === undefined) return
    const job = this.queue.shift()
    if (job === undefined) return
    this.current = job
    try {
      this.inputBytes = writeInput(this.fds.input, job.argsJson, this.inputBytes)
    } catch (error) {
      return this.fail("SpawnFailed", `cannot prepare the call's files: ${(error as Error).message}`)
    }
    if (this.hooks.sweepMarker !== undefined) this.lastPidBefore = lastPid()
    this.write("\n")
  }

  /** Whether any process was created on the host since the call was sent (or it cannot be known). */
  private forkedSince(): boolean {
    const now = lastPid()
    return now === undefined || now !== this.lastPidBefore
  }

  /**
   * Without a pid namespace, kills every process carrying this child's marker except the driver
   * and its next pre-forked subshell, until none is left (a process may fork while it is killed).
   * It reads the environment of every process on the host (milliseconds), so it runs only when a
   * process was created since the call was sent (the kernel's last pid changed). A process that
   * cleared its environment and left the call's process group is not found: only bubblewrap's pid
   * namespace reaches it.
   */
  private sweep(marker: string): boolean {
    const driver = this.pid
    for (let round = 0; round < 20; round++) {
      const left = markedOthers(marker, driver)
      if (left.length === 0) return true
      for (const pid of left) {
        try {
          process.kill(pid, "SIGKILL")
        } catch {
          // gone meanwhile
        }
      }
    }
    killMarked(`${marker}\0`)
    return false
  }

  private settle(job: Job, exitCode: number): void {
    const fds = this.fds!
    if (exitCode !== 0) return job.reject(this.exitFailure(exitCode, fds.stderr))
    const output = readOutput(fds.stdout)
    if ("reason" in output) return job.reject(this.error(output.reason, output.detail))
    job.resolve(output.value)
  }

  private exitFailure(exitCode: number, stderrFd: number): unknown {
    const name = exitCode > 128 ? signalName(exitCode, null) : undefined
    if (name === "SIGKILL") {
      return this.error(
        "ChildExited",
        "main.sh was killed by SIGKILL (status 137): by the tool itself (for example `kill -KILL 0`), or by the kernel (its OOM killer, or the CPU hard limit of a process that ignored SIGXCPU)"
      )
    }
    const { detail, reason } = classifyExit(exitCode, null, "")
    if (reason === "LimitExceeded") return this.error(reason, detail)
    const stderr = readTail(stderrFd)
    return new ToolError({
      toolName: this.hooks.toolName,
      errorType: "NonZeroExit",
      message: `main.sh exited with status ${exitCode}${stderr.length > 0 ? `: ${stderr}` : ""}`
    })
  }

  private afterJob(): void {
    this.inflight--
    if (this.inflight === 0 && this.state === "ready") this.becameIdle()
    this.pump()
  }

  private finishJob(job: Job): void {
    if (job.timer !== undefined) clearTimeout(job.timer)
    if (job.onAbort !== undefined) job.context.signal?.removeEventListener("abort", job.onAbort)
  }

  private timedOut(job: Job): void {
    const error = timedOut(this.hooks.toolName, job.context)
    this.abandon(job, error, `the child was killed because invocation ${job.context.callId} timed out`)
  }

  private cancel(job: Job): void {
    this.abandon(job, cancelled(this.hooks.toolName, job.context), `the child was killed to cancel invocation ${job.context.callId}`)
  }

  /** A queued job just leaves the queue; the running one takes the child down with it. */
  private abandon(job: Job, error: unknown, detail: string): void {
    this.finishJob(job)
    if (this.current === job) {
      this.current = undefined
      job.reject(error)
      this.fail("ChildExited", detail)
      return
    }
    const index = this.queue.indexOf(job)
    if (index === -1) return
    this.queue.splice(index, 1)
    job.reject(error)
    this.inflight--
    if (this.inflight === 0 && this.state === "ready") this.becameIdle()
  }
}

/** Opens a file the host created for the child: never through a symlink, only a regular file. */
const openOwn = (file: string): number => {
  const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK)
  const stat = fs.fstatSync(fd)
  if (!stat.isFile() || stat.nlink !== 1) {
    fs.closeSync(fd)
    throw new Error(`${path.basename(file)} is not a regular file`)
  }
  return fd
}

/**
 * Rewrites the arguments file in place and cuts it when it was longer (never to zero, since JSON is
 * never empty: ext4 flushes a file on close after a truncation to zero). Returns the new length.
 */
const writeInput = (fd: number, json: string, previousBytes: number): number => {
  const bytes = Buffer.from(json, "utf8")
  let written = 0
  while (written < bytes.length) written += fs.writeSync(fd, bytes, written, bytes.length - written, written)
  if (bytes.length < previousBytes) fs.ftruncateSync(fd, bytes.length)
  return bytes.length
}

/** The JSON value a call wrote to stdout. */
const readOutput = (
  fd: number
): { readonly value: unknown } | { readonly reason: "OutputTooLarge" | "ProtocolViolation"; readonly detail: string } => {
  const tooLarge = { reason: "OutputTooLarge", detail: `main.sh wrote more than ${Protocol.MaxPayloadBytes} bytes of JSON` } as const
  const size = fs.fstatSync(fd).size
  if (size > Protocol.MaxLineBytes) return tooLarge
  const buffer = Buffer.allocUnsafe(size)
  const read = fs.readSync(fd, buffer, 0, size, 0)
  const text = buffer.subarray(0, read).toString("utf8").trim()
  if (text.length === 0) {
    return { reason: "ProtocolViolation", detail: "main.sh wrote nothing to stdout; it must write exactly one JSON value (JT-CTR-06)" }
  }
  if (Buffer.byteLength(text) > Protocol.MaxPayloadBytes) return tooLarge
  if (Protocol.nestsDeeperThan(text, Protocol.MaxNestingDepth)) {
    return {
      reason: "OutputTooLarge",
      detail: `main.sh wrote JSON nested deeper than ${Protocol.MaxNestingDepth} levels of arrays and objects`
    }
  }
  try {
    return { value: JSON.parse(text) }
  } catch {
    return {
      reason: "ProtocolViolation",
      detail: `main.sh must write exactly one JSON value to stdout (JT-CTR-06); it wrote ${JSON.stringify(Protocol.preview(text, 120))}`
    }
  }
}

/** The last `max` bytes a call wrote to an output file. */
const readTail = (fd: number, max = 2000): string => {
  const end = fs.fstatSync(fd).size
  const length = Math.max(0, Math.min(end, max))
  const buffer = Buffer.allocUnsafe(length)
  const read = fs.readSync(fd, buffer, 0, length, end - length)
  return buffer.subarray(0, read).toString("utf8").trim()
}

/** The last pid the kernel gave out in the host's pid namespace; a new process changes it. */
const lastPid = (): string | undefined => {
  try {
    return fs.readFileSync("/proc/sys/kernel/ns_last_pid", "latin1")
  } catch {
    return undefined
  }
}

/** Live processes with the exact marker `marker`, other than `driver` and the driver's children. */
const markedOthers = (marker: string, driver: number | undefined): Array<number> =>
  markedProcesses(`${marker}\0`).filter((pid) => pid !== driver && parentOf(pid) !== driver)

const parentOf = (pid: number): number | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "latin1")
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ", 2)[1])
  } catch {
    return undefined
  }
}
