/**
 * A Bash child: the driver script (runtime/bash-driver.sh) runs one invocation at a time in a
 * pre-forked subshell. The host rewrites `in.json` with the arguments, sends the invocation id,
 * waits for `Output` (or, if the script exec'd or replaced its EXIT trap, `Reaped`) and reads the
 * part of `stdout` this call appended, which must hold exactly one JSON value (JT-CTR-06). The pool
 * gives a child one invocation at a time; a second one would queue here, and be sent only after the
 * driver reaped the previous one and killed what it left running, so nothing of an earlier call can
 * write into a later call's part of the files.
 *
 * The host creates the three files before the child starts and keeps them open; no file is created,
 * opened or truncated by path per call. Creating files on ext4 costs journal work, and truncating
 * one that was just written waits for its write-back to the disk (milliseconds, more than the
 * whole call otherwise takes). `in.json` is rewritten in place and cut to length (never to zero);
 * `stdout` and `stderr` only grow (the driver appends) and are emptied between calls once they pass
 * `RotateBytes`, so that a call always has most of RLIMIT_FSIZE for itself.
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Protocol from "../Protocol.js"
import type { SandboxErrorReason } from "../SandboxError.js"
import { ToolError } from "../ToolError.js"
import { cancelled, ChildBase, type ChildCall, type ChildHooks, classifyExit, encodeArgs, tick, timedOut } from "./child.js"

interface Job {
  id: string
  /** Where this call's output starts in `stdout` and `stderr`. */
  stdoutStart: number
  stderrStart: number
  /** Answered (by `Output` or `Reaped`); its subshell may still await `Reaped`. */
  answered: boolean
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
  /** Where the driver appends each call's stdout and stderr. */
  readonly stdout: string
  readonly stderr: string
}

/** Output files larger than this are emptied between calls. */
export const RotateBytes = 1024 * 1024

export class BashChild extends ChildBase {
  private readonly queue: Array<Job> = []
  private current: Job | undefined
  /** Jobs whose subshell the driver has not reaped yet, oldest first. */
  private readonly unreaped: Array<Job> = []
  private sequence = 0
  private readonly fds: { readonly input: number; readonly stdout: number; readonly stderr: number } | undefined

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
      const job: Job = {
        id: "",
        stdoutStart: 0,
        stderrStart: 0,
        answered: false,
        argsJson,
        context,
        resolve,
        reject,
        timer: undefined,
        onAbort: undefined
      }
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
      case "Output": {
        const job = this.current
        if (job === undefined || job.id !== message.invocationId) {
          return this.fail("ProtocolViolation", `an Output for invocation '${message.invocationId}', which is not running`)
        }
        return this.answer(job, message.exitCode)
      }
      case "Reaped": {
        const job = this.unreaped.shift()
        if (job === undefined) return this.fail("ProtocolViolation", "a Reaped with no invocation running")
        if (!job.answered && job === this.current) return this.answer(job, message.exitCode)
        return this.pump()
      }
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

  /** Sends the next queued invocation once the previous one is answered and reaped. */
  private pump(): void {
    if (this.current !== undefined || this.unreaped.length > 0 || this.state !== "ready" || this.fds === undefined) return
    const job = this.queue.shift()
    if (job === undefined) return
    this.current = job
    job.id = String(++this.sequence)
    try {
      job.stdoutStart = startOf(this.fds.stdout)
      job.stderrStart = startOf(this.fds.stderr)
      writeInput(this.fds.input, job.argsJson)
    } catch (error) {
      return this.fail("SpawnFailed", `cannot prepare the call's files: ${(error as Error).message}`)
    }
    this.unreaped.push(job)
    this.write(`${job.id}\n`)
  }

  private answer(job: Job, exitCode: number): void {
    job.answered = true
    this.current = undefined
    this.finishJob(job)
    this.settle(job, exitCode)
    this.afterJob()
  }

  private settle(job: Job, exitCode: number): void {
    if (exitCode !== 0) {
      const { detail, reason } = classifyExit(exitCode, null, "")
      if (reason === "LimitExceeded") return job.reject(this.error(reason, detail))
      const stderr = readTail(this.fds!.stderr, job.stderrStart)
      return job.reject(
        new ToolError({
          toolName: this.hooks.toolName,
          errorType: "NonZeroExit",
          message: `main.sh exited with status ${exitCode}${stderr.length > 0 ? `: ${stderr}` : ""}`
        })
      )
    }
    const output = readOutput(this.fds!.stdout, job.stdoutStart)
    if (typeof output === "string") return job.reject(this.error("ProtocolViolation", output))
    if (output.tooLarge) {
      return job.reject(this.error("OutputTooLarge", `main.sh wrote more than ${Protocol.MaxPayloadBytes} bytes of JSON`))
    }
    job.resolve(output.value)
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
 * Rewrites the arguments file in place and cuts it to length (never to zero, since JSON is never
 * empty: ext4 flushes a file on close after a truncation to zero).
 */
const writeInput = (fd: number, json: string): void => {
  const bytes = Buffer.from(json, "utf8")
  let written = 0
  while (written < bytes.length) written += fs.writeSync(fd, bytes, written, bytes.length - written, written)
  fs.ftruncateSync(fd, bytes.length)
}

/** Where the next call's output starts in an output file; a file past `RotateBytes` is emptied first. */
const startOf = (fd: number): number => {
  const size = fs.fstatSync(fd).size
  if (size <= RotateBytes) return size
  fs.ftruncateSync(fd, 0)
  return 0
}

/** The JSON value a call appended to an output file from `start` on. */
const readOutput = (fd: number, start: number): { readonly value: unknown; readonly tooLarge: false } | { readonly tooLarge: true } | string => {
  const size = fs.fstatSync(fd).size - start
  if (size < 0) return "stdout was cut short during the call"
  if (size > Protocol.MaxLineBytes) return { tooLarge: true }
  const buffer = Buffer.allocUnsafe(size)
  const read = fs.readSync(fd, buffer, 0, size, start)
  const text = buffer.subarray(0, read).toString("utf8").trim()
  if (text.length === 0) return "main.sh wrote nothing to stdout; it must write exactly one JSON value (JT-CTR-06)"
  if (Buffer.byteLength(text) > Protocol.MaxPayloadBytes) return { tooLarge: true }
  try {
    return { value: JSON.parse(text), tooLarge: false }
  } catch {
    return `main.sh must write exactly one JSON value to stdout (JT-CTR-06); it wrote ${JSON.stringify(Protocol.preview(text, 120))}`
  }
}

/** The last `max` bytes a call appended to an output file from `start` on. */
const readTail = (fd: number, start: number, max = 2000): string => {
  const end = fs.fstatSync(fd).size
  const length = Math.max(0, Math.min(end - start, max))
  const buffer = Buffer.allocUnsafe(length)
  const read = fs.readSync(fd, buffer, 0, length, end - length)
  return buffer.subarray(0, read).toString("utf8").trim()
}
