/**
 * A Bash child: the driver script (runtime/bash-driver.sh) runs one invocation at a time in a
 * pre-forked subshell. The host writes the arguments to `in.json`, sends the invocation id, waits
 * for `Output` (or, if the script exec'd or replaced its EXIT trap, `Reaped`) and reads the
 * script's stdout back from a file, which must hold exactly one JSON value (JT-CTR-06). The pool
 * gives a child one invocation at a time; a second one would queue here.
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
  /** Answered (by `Output` or `Reaped`); its subshell may still await `Reaped`. */
  answered: boolean
  readonly argsJson: string
  readonly context: ChildCall
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
  timer: NodeJS.Timeout | undefined
  onAbort: (() => void) | undefined
}

export interface BashFiles {
  /** Host path of the arguments file the driver feeds to main.sh. */
  readonly input: string
  /** Host directory where the driver writes `stdout` and `stderr`. */
  readonly output: string
}

export class BashChild extends ChildBase {
  private readonly queue: Array<Job> = []
  private current: Job | undefined
  /** Jobs whose subshell the driver has not reaped yet, oldest first. */
  private readonly unreaped: Array<Job> = []
  private sequence = 0

  constructor(proc: ChildProcessWithoutNullStreams, hooks: ChildHooks, private readonly files: BashFiles) {
    super(proc, hooks)
  }

  invoke(args: unknown, context: ChildCall): Promise<unknown> {
    const gone = this.unavailable()
    if (gone !== undefined) return Promise.reject(gone)
    const argsJson = encodeArgs(args)
    if (typeof argsJson !== "string") return Promise.reject(this.error(argsJson.reason, argsJson.detail))
    if (context.signal?.aborted === true) return Promise.reject(cancelled(this.hooks.toolName, context))
    return new Promise((resolve, reject) => {
      const job: Job = { id: "", answered: false, argsJson, context, resolve, reject, timer: undefined, onAbort: undefined }
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
        if (!job.answered && job === this.current) this.answer(job, message.exitCode)
        return
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

  private pump(): void {
    if (this.current !== undefined || this.state !== "ready") return
    const job = this.queue.shift()
    if (job === undefined) return
    this.current = job
    job.id = String(++this.sequence)
    try {
      writeInput(this.files.input, job.argsJson)
    } catch (error) {
      return this.fail("SpawnFailed", `cannot write the arguments file: ${(error as Error).message}`)
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
      const stderr = readTail(path.join(this.files.output, "stderr"))
      return job.reject(
        new ToolError({
          toolName: this.hooks.toolName,
          errorType: "NonZeroExit",
          message: `main.sh exited with status ${exitCode}${stderr.length > 0 ? `: ${stderr}` : ""}`
        })
      )
    }
    const output = readOutput(path.join(this.files.output, "stdout"))
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

const writeInput = (file: string, json: string): void => {
  const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_NOFOLLOW, 0o644)
  try {
    fs.writeSync(fd, json)
  } finally {
    fs.closeSync(fd)
  }
}

/** Opens a file the sandbox could have tampered with: never through a symlink, only a regular file. */
const openRegular = (file: string): { readonly fd: number; readonly size: number } | string => {
  let fd: number
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK)
  } catch (error) {
    return `cannot open ${path.basename(file)}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`
  }
  const stat = fs.fstatSync(fd)
  if (!stat.isFile() || stat.nlink !== 1) {
    fs.closeSync(fd)
    return `${path.basename(file)} is not a regular file`
  }
  return { fd, size: stat.size }
}

const readOutput = (file: string): { readonly value: unknown; readonly tooLarge: false } | { readonly tooLarge: true } | string => {
  const opened = openRegular(file)
  if (typeof opened === "string") return opened
  try {
    if (opened.size > Protocol.MaxLineBytes) return { tooLarge: true }
    const buffer = Buffer.alloc(opened.size)
    const read = fs.readSync(opened.fd, buffer, 0, opened.size, 0)
    const text = buffer.subarray(0, read).toString("utf8").trim()
    if (text.length === 0) return "main.sh wrote nothing to stdout; it must write exactly one JSON value (JT-CTR-06)"
    if (Buffer.byteLength(text) > Protocol.MaxPayloadBytes) return { tooLarge: true }
    try {
      return { value: JSON.parse(text), tooLarge: false }
    } catch {
      return `main.sh must write exactly one JSON value to stdout (JT-CTR-06); it wrote ${JSON.stringify(Protocol.preview(text, 120))}`
    }
  } finally {
    fs.closeSync(opened.fd)
  }
}

const readTail = (file: string, max = 2000): string => {
  const opened = openRegular(file)
  if (typeof opened === "string") return ""
  try {
    const length = Math.min(opened.size, max)
    const buffer = Buffer.alloc(length)
    const read = fs.readSync(opened.fd, buffer, 0, length, opened.size - length)
    return buffer.subarray(0, read).toString("utf8").trim()
  } finally {
    fs.closeSync(opened.fd)
  }
}
