/**
 * One running child process and the host side of its protocol. `ChildBase` owns the process:
 * stdout framing with a line-length cap, a stderr tail for error details, the printed-bytes cap,
 * exit classification, and `fail`, which kills the whole process group and rejects everything in
 * flight. `JsonLinesChild` speaks the JSON-lines protocol of Node and Python children and
 * tells invocations apart by `invocationId`. The pool gives a child one invocation at a time (see
 * `WarmPool`), so killing a child's process group ends exactly one invocation.
 */
import type { CodeRunner } from "@jitbox/core"
import { HarnessError, ThrownValue } from "@jitbox/core"
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import * as os from "node:os"
import * as Protocol from "../Protocol.js"
import type * as SandboxConfig from "../SandboxConfig.js"
import { SandboxError, type SandboxErrorReason } from "../SandboxError.js"
import { ToolError } from "../ToolError.js"
import { killGroup } from "./spawn.js"

export type ChildState = "starting" | "ready" | "dead"

export interface ChildHooks {
  readonly toolName: string
  readonly versionId: string
  readonly config: SandboxConfig.SandboxConfig
  /** Marker value to sweep /proc for when the process group alone may not reach every descendant. */
  readonly sweepMarker: string | undefined
  /** The child has nothing in flight any more, or just loaded; the pool may evict others. */
  readonly onIdle: (child: ChildBase) => void
  /** The child is dead (killed, crashed or retired); it never serves again. */
  readonly onDead: (child: ChildBase) => void
  /** The process is gone; its directories can be removed. */
  readonly onExit: (child: ChildBase) => void
}

export type LoadAnswer = typeof Protocol.Loaded.Type | typeof Protocol.LoadFailed.Type

/**
 * One invocation as a child runs it: the host's own record of the call (a child's nested calls go
 * to `host` naming `callId`, whatever the child claims), and its time bound.
 */
export interface ChildCall {
  readonly callId: string
  readonly toolName: string
  readonly depth: number
  readonly signal: AbortSignal | undefined
  /** Milliseconds until the invocation is abandoned and the child's process group killed. */
  readonly timeoutMs: number
  /** What the timeout means: `did not finish within 20000 ms`, `ran past its deadline`. */
  readonly timeoutReason: string
  readonly host: CodeRunner.CallHost
}

/** The error of an invocation whose time ran out. */
export const timedOut = (toolName: string, call: ChildCall): SandboxError =>
  new SandboxError({ reason: "Timeout", toolName, detail: `the invocation ${call.timeoutReason}; its process group was killed` })

let clock = 0
/** A monotonic use counter for least-recently-used eviction. */
export const tick = (): number => ++clock

const StderrTailBytes = 8 * 1024

export abstract class ChildBase {
  state: ChildState = "starting"
  inflight = 0
  lastUsed = tick()
  /** Retired children finish what they run and are killed when idle. */
  retiring = false
  readonly exited: Promise<void>
  readonly pid: number | undefined

  protected stderrTail = ""
  protected printedBytes = 0
  private partial: Array<Buffer> = []
  private partialBytes = 0
  private exitInfo: { readonly code: number | null; readonly signal: NodeJS.Signals | null } | undefined
  private stdoutEnded = false
  private finishTimer: NodeJS.Timeout | undefined
  private loadWaiter:
    | {
      readonly resolve: (answer: LoadAnswer) => void
      readonly reject: (error: SandboxError) => void
      readonly timer: NodeJS.Timeout
    }
    | undefined
  private resolveExited!: () => void

  constructor(
    protected readonly proc: ChildProcessWithoutNullStreams,
    readonly hooks: ChildHooks
  ) {
    this.pid = proc.pid
    this.exited = new Promise((resolve) => {
      this.resolveExited = resolve
    })
    proc.unref()
    for (const stream of [proc.stdin, proc.stdout, proc.stderr]) {
      ;(stream as unknown as { unref?: () => void }).unref?.()
    }
    proc.stdin.on("error", () => {})
    proc.stdout.on("data", (chunk: Buffer) => this.onStdout(chunk))
    proc.stdout.on("end", () => {
      this.stdoutEnded = true
      this.scheduleFinish()
    })
    proc.stderr.on("data", (chunk: Buffer) => this.onStderr(chunk))
    proc.on("error", (error) => {
      this.fail("SpawnFailed", `the child could not be started: ${error.message}`)
      if (this.pid === undefined) this.processGone()
    })
    proc.on("exit", (code, signal) => {
      this.exitInfo = { code, signal }
      this.scheduleFinish()
      this.processGone()
    })
  }

  get busy(): boolean {
    return this.inflight > 0 || this.state === "starting"
  }

  get usable(): boolean {
    return this.state === "ready" && !this.retiring
  }

  /** Waits for the child's first answer (`Loaded` or `LoadFailed`); `line` is sent first when given. */
  load(line: string | undefined, timeoutMs: number): Promise<LoadAnswer> {
    return new Promise((resolve, reject) => {
      if (this.state === "dead") {
        return reject(this.error("SpawnFailed", `the child ended before it loaded${this.stderrDetail()}`))
      }
      const timer = setTimeout(() => {
        this.loadWaiter = undefined
        reject(this.error("Timeout", `activation did not finish within ${timeoutMs} ms`))
        this.fail("ChildExited", "killed after an activation timeout")
      }, timeoutMs)
      this.loadWaiter = { resolve, reject, timer }
      if (line !== undefined) this.write(line)
    })
  }

  /** Kill the process group now; everything in flight fails with `reason`. */
  fail(reason: SandboxErrorReason, detail: string): void {
    if (this.state === "dead") return
    this.state = "dead"
    killGroup(this.pid, this.hooks.sweepMarker)
    // keep the event loop alive until the exit is observed, so `close()` can await it
    if (!this.gone) this.proc.ref()
    const waiter = this.loadWaiter
    if (waiter !== undefined) {
      this.loadWaiter = undefined
      clearTimeout(waiter.timer)
      waiter.reject(this.error(reason, detail))
    }
    this.rejectAll(reason, detail)
    this.inflight = 0
    this.hooks.onDead(this)
  }

  protected abstract onLine(line: string, bytes: number): void
  protected abstract rejectAll(reason: SandboxErrorReason, detail: string): void

  protected write(line: string): void {
    this.proc.stdin.write(line)
  }

  protected error(reason: SandboxErrorReason, detail: string): SandboxError {
    return new SandboxError({ reason, toolName: this.hooks.toolName, detail })
  }

  protected resolveLoad(answer: LoadAnswer): boolean {
    const waiter = this.loadWaiter
    if (waiter === undefined) return false
    this.loadWaiter = undefined
    clearTimeout(waiter.timer)
    this.printedBytes = 0
    if (answer._tag === "Loaded") {
      this.state = "ready"
      this.lastUsed = tick()
    }
    waiter.resolve(answer)
    // a freshly loaded child is the most recently used: trimming the pool now evicts older idle ones
    if (answer._tag === "Loaded") this.hooks.onIdle(this)
    return true
  }

  protected becameIdle(): void {
    this.printedBytes = 0
    if (this.retiring) this.fail("ChildExited", "retired")
    else this.hooks.onIdle(this)
  }

  protected unavailable(): SandboxError | undefined {
    return this.state === "ready" ? undefined : this.error("ChildExited", "the child has ended; retry to get a new one")
  }

  protected log(line: string): void {
    const onLog = this.hooks.config.onLog
    if (onLog === undefined) return
    try {
      onLog({ toolName: this.hooks.toolName, versionId: this.hooks.versionId, line })
    } catch {
      // a failing log sink must not take the protocol down
    }
  }

  protected countPrinted(bytes: number): void {
    this.printedBytes += bytes
    if (this.printedBytes > this.hooks.config.maxLogBytes && this.busy) {
      this.fail("OutputTooLarge", `the tool printed more than ${this.hooks.config.maxLogBytes} bytes`)
    }
  }

  protected stderrDetail(): string {
    const tail = this.stderrTail.trim()
    return tail.length === 0 ? "" : `: ${tail.length > 2000 ? `…${tail.slice(-2000)}` : tail}`
  }

  private onStdout(chunk: Buffer): void {
    let start = 0
    while (this.state !== "dead") {
      const newline = chunk.indexOf(10, start)
      if (newline === -1) {
        if (start < chunk.length) {
          this.partial.push(start === 0 ? chunk : chunk.subarray(start))
          this.partialBytes += chunk.length - start
          if (this.partialBytes > Protocol.MaxLineBytes) {
            this.fail("OutputTooLarge", `the child wrote a line longer than ${Protocol.MaxLineBytes} bytes`)
          }
        }
        return
      }
      let line: Buffer
      if (this.partialBytes > 0) {
        this.partial.push(chunk.subarray(start, newline))
        line = Buffer.concat(this.partial)
        this.partial = []
        this.partialBytes = 0
      } else {
        line = chunk.subarray(start, newline)
      }
      start = newline + 1
      if (line.length > Protocol.MaxLineBytes) {
        return this.fail("OutputTooLarge", `the child wrote a line longer than ${Protocol.MaxLineBytes} bytes`)
      }
      this.onLine(line.toString("utf8"), line.length)
    }
  }

  private onStderr(chunk: Buffer): void {
    const text = chunk.toString("utf8")
    this.stderrTail = (this.stderrTail + text).slice(-StderrTailBytes)
    if (this.state !== "dead") this.countPrinted(chunk.length)
  }

  private scheduleFinish(): void {
    if (this.exitInfo !== undefined && this.stdoutEnded) return this.finish()
    if (this.finishTimer === undefined) {
      this.finishTimer = setTimeout(() => this.finish(), 200)
      this.finishTimer.unref()
    }
  }

  private finish(): void {
    if (this.finishTimer !== undefined) clearTimeout(this.finishTimer)
    if (this.state === "dead") return
    const exit = this.exitInfo
    if (exit === undefined) {
      return this.fail("ProtocolViolation", "the child closed its stdout while still running")
    }
    const { detail, reason } = this.exitError(exit.code, exit.signal)
    this.fail(reason, `${detail}${this.stderrDetail()}`)
  }

  /** What the child's unexpected exit means for the work in flight. */
  protected exitError(code: number | null, signal: NodeJS.Signals | null): { readonly reason: SandboxErrorReason; readonly detail: string } {
    return classifyExit(code, signal, this.stderrTail)
  }

  private gone = false
  private processGone(): void {
    if (this.gone) return
    this.gone = true
    this.resolveExited()
    this.hooks.onExit(this)
  }
}

interface Pending {
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
  readonly context: ChildCall
  readonly timer: NodeJS.Timeout
  readonly onAbort: (() => void) | undefined
  /** The host-side errors of this invocation's failed nested calls, by request id. */
  nested?: Map<string, unknown>
}

/** A Node or Python child: JSON lines, invocations told apart by `invocationId`. */
export class JsonLinesChild extends ChildBase {
  private readonly pending = new Map<string, Pending>()
  private sequence = 0

  invoke(args: unknown, context: ChildCall): Promise<unknown> {
    const gone = this.unavailable()
    if (gone !== undefined) return Promise.reject(gone)
    const argsJson = encodeArgs(args)
    if (typeof argsJson !== "string") return Promise.reject(this.error(argsJson.reason, argsJson.detail))
    if (context.signal?.aborted === true) return Promise.reject(cancelled(this.hooks.toolName, context))
    const id = String(++this.sequence)
    const timeoutMs = context.timeoutMs
    if (this.inflight === 0) this.printedBytes = 0
    return new Promise((resolve, reject) => {
      let onAbort: (() => void) | undefined
      if (context.signal !== undefined) {
        onAbort = () => this.cancel(id)
        context.signal.addEventListener("abort", onAbort, { once: true })
      }
      this.pending.set(id, { resolve, reject, context, timer: setTimeout(this.onTimeout, timeoutMs, id), onAbort })
      this.inflight++
      this.lastUsed = tick()
      this.write(
        `{"_tag":"Invoke","invocationId":"${id}","callId":${JSON.stringify(context.callId)},"depth":${context.depth},"toolName":${
          JSON.stringify(context.toolName)
        },"cancellable":${context.signal !== undefined},"args":${argsJson}}\n`
      )
    })
  }

  protected onLine(line: string, bytes: number): void {
    const message = Protocol.decodeChildLine(line)
    if (typeof message === "string") return this.fail("ProtocolViolation", message)
    switch (message._tag) {
      case "Result": {
        const pending = this.take(message.invocationId)
        if (pending === undefined) return
        this.noteCpu(message.cpuMs)
        if (bytes > Protocol.MaxPayloadBytes && jsonBytes(message.value) > Protocol.MaxPayloadBytes) {
          pending.reject(this.error("OutputTooLarge", `the result exceeds ${Protocol.MaxPayloadBytes} bytes of JSON`))
        } else {
          pending.resolve(message.value)
        }
        return this.settled()
      }
      case "Failed": {
        const pending = this.take(message.invocationId)
        if (pending === undefined) return
        this.noteCpu(message.cpuMs)
        const propagated = message.error.nestedRequestId === undefined
          ? undefined
          : pending.nested?.get(message.error.nestedRequestId)
        pending.reject(
          message.error.type === "OutputTooLarge"
            ? this.error("OutputTooLarge", message.error.message)
            : propagated !== undefined
            ? propagated
            : new ToolError({ toolName: this.hooks.toolName, errorType: message.error.type, message: message.error.message })
        )
        return this.settled()
      }
      case "CallTool":
        return this.forwardCall(message, bytes)
      case "Log":
        this.log(message.line)
        return this.countPrinted(bytes)
      case "Loaded":
      case "LoadFailed":
        if (!this.resolveLoad(message)) this.fail("ProtocolViolation", `unexpected ${message._tag}`)
        return
    }
  }

  protected rejectAll(reason: SandboxErrorReason, detail: string): void {
    for (const pending of this.pending.values()) {
      clear(pending)
      pending.reject(this.error(reason, detail))
    }
    this.pending.clear()
  }

  private take(invocationId: string): Pending | undefined {
    const pending = this.pending.get(invocationId)
    if (pending === undefined) {
      this.fail("ProtocolViolation", `an answer for invocation '${invocationId}', which is not running`)
      return undefined
    }
    this.pending.delete(invocationId)
    clear(pending)
    this.inflight--
    return pending
  }

  private settled(): void {
    if (this.inflight === 0 && this.state === "ready") this.becameIdle()
  }

  private noteCpu(cpuMs: number | undefined): void {
    if (cpuMs !== undefined && cpuMs > this.hooks.config.limits.cpuSeconds * 500) this.retiring = true
  }

  private readonly onTimeout = (id: string): void => {
    const pending = this.pending.get(id)
    if (pending === undefined) return
    this.pending.delete(id)
    clear(pending)
    pending.reject(timedOut(this.hooks.toolName, pending.context))
    this.fail("ChildExited", `the child was killed because invocation ${pending.context.callId} timed out`)
  }

  private cancel(id: string): void {
    const pending = this.pending.get(id)
    if (pending === undefined) return
    this.pending.delete(id)
    clear(pending)
    pending.reject(cancelled(this.hooks.toolName, pending.context))
    this.fail("ChildExited", `the child was killed to cancel invocation ${pending.context.callId}`)
  }

  private forwardCall(message: typeof Protocol.CallTool.Type, bytes: number): void {
    const pending = this.pending.get(message.invocationId)
    const answer = (ok: boolean, payload: string) => {
      if (this.state === "dead") return
      this.write(`{"_tag":"CallResult","requestId":${JSON.stringify(message.requestId)},"ok":${ok},${payload}}\n`)
    }
    const failWith = (type: string, text: string) =>
      answer(false, `"error":${JSON.stringify({ type, message: text })}`)
    if (pending === undefined) {
      return failWith("ToolRejected", `invocation '${message.invocationId}' is not running`)
    }
    if (bytes > Protocol.MaxPayloadBytes && jsonBytes(message.args) > Protocol.MaxPayloadBytes) {
      return failWith("InputTooLarge", `arguments of '${message.name}' exceed ${Protocol.MaxPayloadBytes} bytes of JSON`)
    }
    let result: Promise<unknown>
    try {
      result = pending.context.host.callTool(pending.context.callId, message.name, message.args)
    } catch (error) {
      result = Promise.reject(error)
    }
    result.then(
      (value) => {
        const json = JSON.stringify(value === undefined ? null : value)
        if (json === undefined) return failWith("TypeError", `'${message.name}' returned a value that is not JSON`)
        if (json.length > Protocol.MaxPayloadBytes / 3 && Buffer.byteLength(json) > Protocol.MaxPayloadBytes) {
          return failWith("OutputTooLarge", `the result of '${message.name}' exceeds ${Protocol.MaxPayloadBytes} bytes of JSON`)
        }
        answer(true, `"value":${json}`)
      },
      (error: unknown) => {
        if (error !== undefined) (pending.nested ??= new Map()).set(message.requestId, error)
        failWith(ThrownValue.errorType(error), ThrownValue.message(error) ?? printed(error))
      }
    )
  }
}

const clear = (pending: Pending): void => {
  clearTimeout(pending.timer)
  if (pending.onAbort !== undefined) pending.context.signal?.removeEventListener("abort", pending.onAbort)
}

export const cancelled = (toolName: string, context: { readonly callId: string }): HarnessError.ToolCancelled =>
  new HarnessError.ToolCancelled({ name: toolName, callId: context.callId })

/** The arguments as compact JSON, or why they cannot be sent. */
export const encodeArgs = (args: unknown): string | { readonly reason: SandboxErrorReason; readonly detail: string } => {
  let json: string | undefined
  try {
    json = JSON.stringify(args === undefined ? {} : args)
  } catch (error) {
    return { reason: "ProtocolViolation", detail: `the arguments are not JSON: ${ThrownValue.message(error) ?? printed(error)}` }
  }
  if (json === undefined) return { reason: "ProtocolViolation", detail: "the arguments are not JSON" }
  if (json.length > Protocol.MaxPayloadBytes / 3 && Buffer.byteLength(json) > Protocol.MaxPayloadBytes) {
    return { reason: "InputTooLarge", detail: `the arguments exceed ${Protocol.MaxPayloadBytes} bytes of JSON (JT-LIM-02)` }
  }
  return json
}

const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? "")

/** The text of a thrown value that is not an `Error` (`ThrownValue.message` has none for it). */
const printed = (thrown: unknown): string => {
  try {
    return String(thrown)
  } catch {
    return "(the thrown value could not be formatted)"
  }
}

const signalNames = new Map(Object.entries(os.constants.signals).map(([name, number]) => [number, name]))

/** The signal that ended a process, from node's report or a shell status (bubblewrap reports a signal as 128 + n). */
export const signalName = (code: number | null, signal: NodeJS.Signals | null): string | undefined =>
  signal ?? (code !== null && code > 128 ? signalNames.get(code - 128) : undefined)

/** Why a child ended, from its exit code or signal (bubblewrap reports a signal as 128 + n). */
export const classifyExit = (
  code: number | null,
  signal: NodeJS.Signals | null,
  stderr: string
): { readonly reason: SandboxErrorReason; readonly detail: string } => {
  const name = signalName(code, signal)
  if (name === "SIGXCPU") return { reason: "LimitExceeded", detail: "the child exceeded its CPU time limit (SIGXCPU)" }
  if (name === "SIGXFSZ") return { reason: "LimitExceeded", detail: "the child exceeded its file size limit (SIGXFSZ)" }
  if (/heap out of memory|Failed to reserve virtual memory|Cannot allocate memory|MemoryError|Array buffer allocation failed/.test(stderr)) {
    return { reason: "LimitExceeded", detail: "the child exceeded its memory limit" }
  }
  if (name === "SIGKILL") {
    return { reason: "LimitExceeded", detail: "the child was killed (SIGKILL: its CPU hard limit or the kernel's OOM killer)" }
  }
  const how = name !== undefined ? `signal ${name}` : `exit code ${code}`
  return { reason: "ChildExited", detail: `the child exited unexpectedly (${how})` }
}
