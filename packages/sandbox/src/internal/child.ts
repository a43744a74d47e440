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
import * as Either from "effect/Either"
import * as os from "node:os"
import * as Protocol from "../Protocol.js"
import type * as SandboxConfig from "../SandboxConfig.js"
import { SandboxError, type SandboxErrorReason } from "../SandboxError.js"
import * as ToolError from "../ToolError.js"
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

  /** The call id of the innermost invocation in flight, where a re-entrant child runs a nested one. */
  get innermostCallId(): string | undefined {
    return undefined
  }

  /** Whether the child runs a nested invocation of its own version inside the one waiting on it. */
  get reentrant(): boolean {
    return false
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

  /** Sends a line; a child that leaves more than `MaxUnreadBytes` of them unread is killed. */
  protected write(line: string): void {
    const stdin = this.proc.stdin
    stdin.write(line)
    if (stdin.writableLength > Protocol.MaxUnreadBytes) {
      this.fail("LimitExceeded", `the child left more than ${Protocol.MaxUnreadBytes} bytes of the host's messages unread`)
    }
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

  /** Printed bytes count against `maxLogBytes` per invocation, and while idle between two. */
  protected countPrinted(bytes: number): void {
    this.printedBytes += bytes
    if (this.printedBytes > this.hooks.config.maxLogBytes) {
      this.fail(
        "OutputTooLarge",
        `the tool printed more than ${this.hooks.config.maxLogBytes} bytes${this.busy ? "" : " while no invocation ran"}`
      )
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
  readonly id: string
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
  readonly context: ChildCall
  /** `performance.now()` after which the invocation is abandoned (see `watch`). */
  readonly expiresAt: number
  readonly onAbort: (() => void) | undefined
  /** The host-side errors of this invocation's failed nested calls, by request id. */
  nested?: Map<string, unknown>
  /** Nested calls made so far, and those not answered yet. */
  nestedCalls: number
  nestedInFlight: number
  /** Nested calls made while an invocation nested in this one runs on the same child: sent when it ends. */
  deferred?: Array<typeof Protocol.CallTool.Type> | undefined
}

/**
 * A Node or Python child: JSON lines, invocations told apart by `invocationId`. The child is
 * re-entrant: a nested call of its own version whose caller runs here may run here too, inside the
 * invocation waiting on it (see `SandboxedVersion`), so the invocations in flight form a stack. A
 * nested call goes to the host under the innermost one's call id: one named by an outer invocation
 * waits until everything above it has ended, so a child cannot run a call under an ancestor's name
 * (and depth) while the invocation it really comes from is still in flight.
 */
export class JsonLinesChild extends ChildBase {
  private readonly pending = new Map<string, Pending>()
  /** The invocations in flight, the innermost last. */
  private readonly stack: Array<Pending> = []
  private sequence = 0
  private watchdog: NodeJS.Timeout | undefined
  private watchdogAt = Infinity

  override get innermostCallId(): string | undefined {
    return this.stack[this.stack.length - 1]?.context.callId
  }

  override get reentrant(): boolean {
    return true
  }

  invoke(args: unknown, context: ChildCall): Promise<unknown> {
    const gone = this.unavailable()
    if (gone !== undefined) return Promise.reject(gone)
    const argsJson = encodeArgs(args)
    if (typeof argsJson !== "string") return Promise.reject(this.error(argsJson.reason, argsJson.detail))
    if (context.signal?.aborted === true) return Promise.reject(cancelled(this.hooks.toolName, context))
    const id = String(++this.sequence)
    const expiresAt = performance.now() + context.timeoutMs
    if (this.inflight === 0) this.printedBytes = 0
    return new Promise((resolve, reject) => {
      let onAbort: (() => void) | undefined
      if (context.signal !== undefined) {
        onAbort = () => this.cancel(id)
        context.signal.addEventListener("abort", onAbort, { once: true })
      }
      const pending: Pending = {
        id,
        resolve,
        reject,
        context,
        expiresAt,
        onAbort,
        nestedCalls: 0,
        nestedInFlight: 0
      }
      this.pending.set(id, pending)
      this.stack.push(pending)
      this.inflight++
      this.watch(expiresAt)
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
        // the envelope is one level
        if (Protocol.nestsDeeperThan(line, Protocol.MaxNestingDepth + 1)) {
          pending.reject(this.error("OutputTooLarge", `the result is ${tooDeep}`))
        } else if (bytes > Protocol.MaxPayloadBytes && jsonBytes(message.value) > Protocol.MaxPayloadBytes) {
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
          propagated !== undefined
            ? propagated
            : message.error.type === "OutputTooLarge"
            ? this.error("OutputTooLarge", message.error.message)
            : ToolError.fromChild(this.hooks.toolName, message.error)
        )
        return this.settled()
      }
      case "CallTool":
        return this.forwardCall(message, line, bytes)
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
    this.stack.length = 0
    clearTimeout(this.watchdog)
    this.watchdog = undefined
    this.watchdogAt = Infinity
  }

  /** Takes an invocation out of flight; an answer for one not in flight breaks the protocol. */
  private take(invocationId: string): Pending | undefined {
    const pending = this.pending.get(invocationId)
    if (pending === undefined) {
      this.fail("ProtocolViolation", `an answer for invocation '${Protocol.preview(invocationId, 40)}', which is not running`)
      return undefined
    }
    this.forget(pending)
    if (--this.inflight === 0) this.watchdog?.unref()
    return pending
  }

  private forget(pending: Pending): void {
    this.pending.delete(pending.id)
    const stack = this.stack
    // usually the innermost, popped without a search
    if (stack.length > 0 && stack[stack.length - 1] === pending) stack.pop()
    else {
      const index = stack.lastIndexOf(pending)
      if (index !== -1) stack.splice(index, 1)
    }
    clear(pending)
    const deferred = pending.deferred
    if (deferred !== undefined) {
      pending.deferred = undefined
      for (const call of deferred) {
        this.refuse(pending, call.requestId, this.error("ProtocolViolation", `invocation ${pending.context.callId} ended before its nested call to '${call.name}' could be made`))
      }
    }
    this.resume()
  }

  /** Sends the deferred calls of the innermost invocation, while it stays the innermost. */
  private resume(): void {
    // index -1 of an empty array is a property lookup in V8, far slower than an element read
    if (this.stack.length === 0) return
    const top = this.stack[this.stack.length - 1]
    while (top?.deferred !== undefined && top.deferred.length > 0 && this.stack[this.stack.length - 1] === top && this.state !== "dead") {
      this.send(top, top.deferred.shift()!)
    }
  }

  private settled(): void {
    if (this.inflight === 0 && this.state === "ready") this.becameIdle()
  }

  private noteCpu(cpuMs: number | undefined): void {
    if (cpuMs !== undefined && cpuMs > this.hooks.config.limits.cpuSeconds * 500) this.retiring = true
  }

  /**
   * One timer per child watches the deadlines of its invocations: a timer set and cleared per
   * invocation (Node creates and drops a timer list each time) was among the largest parts of the
   * host's work for a warm call. It stays armed between calls (unreferenced while nothing is in
   * flight, so an idle child keeps no process alive; referenced while a call is, as the call's own
   * timer was) and is moved only for an earlier deadline; when it fires it times out the invocation
   * whose deadline comes first once that deadline is past, or re-arms for it.
   */
  private watch(expiresAt: number): void {
    if (this.watchdog !== undefined && expiresAt >= this.watchdogAt) {
      if (this.inflight === 1) this.watchdog.ref()
      return
    }
    clearTimeout(this.watchdog)
    this.watchdogAt = expiresAt
    this.watchdog = setTimeout(this.onWatchdog, Math.max(1, Math.ceil(expiresAt - performance.now())))
  }

  private readonly onWatchdog = (): void => {
    this.watchdog = undefined
    this.watchdogAt = Infinity
    let first: Pending | undefined
    for (const pending of this.pending.values()) {
      if (first === undefined || pending.expiresAt < first.expiresAt) first = pending
    }
    if (first === undefined) return
    // a timer counts from the event loop's cached time, so it can fire before `expiresAt`
    if (first.expiresAt > performance.now() + 1) return this.watch(first.expiresAt)
    this.timeOut(first)
  }

  private timeOut(pending: Pending): void {
    this.forget(pending)
    pending.reject(timedOut(this.hooks.toolName, pending.context))
    this.fail("ChildExited", `the child was killed because invocation ${pending.context.callId} timed out`)
  }

  private cancel(id: string): void {
    const pending = this.pending.get(id)
    if (pending === undefined) return
    this.forget(pending)
    pending.reject(cancelled(this.hooks.toolName, pending.context))
    this.fail("ChildExited", `the child was killed to cancel invocation ${pending.context.callId}`)
  }

  /**
   * A nested call goes to the host under the call id of the invocation that makes it, once that
   * invocation is the innermost in flight on this child. A call naming an invocation that is not in
   * flight breaks the protocol and kills the child; past `maxNestedCalls` in one invocation the
   * child is killed too; past `maxNestedCallsInFlight` unanswered ones the call is refused to the tool.
   */
  private forwardCall(message: typeof Protocol.CallTool.Type, line: string, bytes: number): void {
    const owner = this.pending.get(message.invocationId)
    if (owner === undefined) {
      return this.fail(
        "ProtocolViolation",
        this.stack.length === 0
          ? "a nested call (CallTool) while no invocation runs"
          : `a nested call (CallTool) naming invocation '${Protocol.preview(message.invocationId, 40)}', which is not in flight on this child`
      )
    }
    const config = this.hooks.config
    if (++owner.nestedCalls > config.maxNestedCalls) {
      return this.fail("LimitExceeded", `invocation ${owner.context.callId} made more than ${config.maxNestedCalls} nested calls`)
    }
    const name = message.name
    if (owner.nestedInFlight >= config.maxNestedCallsInFlight) {
      return this.refuse(owner, message.requestId, this.error("LimitExceeded", `more than ${config.maxNestedCallsInFlight} nested calls of one invocation at once`))
    }
    // the envelope is one level
    if (Protocol.nestsDeeperThan(line, Protocol.MaxNestingDepth + 1)) {
      return this.refuse(owner, message.requestId, this.error("InputTooLarge", `the arguments of '${name}' are ${tooDeep}`))
    }
    if (bytes > Protocol.MaxPayloadBytes && jsonBytes(message.args) > Protocol.MaxPayloadBytes) {
      return this.refuse(owner, message.requestId, this.error("InputTooLarge", `the arguments of '${name}' are larger than ${Protocol.MaxPayloadBytes} bytes of JSON`))
    }
    owner.nestedInFlight++
    if (this.stack[this.stack.length - 1] !== owner) {
      ;(owner.deferred ??= []).push(message)
      return
    }
    this.send(owner, message)
  }

  private send(owner: Pending, message: typeof Protocol.CallTool.Type): void {
    const { requestId, name } = message
    let result: Promise<unknown>
    try {
      result = owner.context.host.callTool(owner.context.callId, name, message.args)
    } catch (error) {
      result = Promise.reject(error)
    }
    result.then(
      (value) => {
        owner.nestedInFlight--
        const json = encodeValue(value)
        if (typeof json === "string") return this.answer(requestId, true, `"value":${json}`)
        this.refuse(owner, requestId, this.error(json.reason === "InputTooLarge" ? "OutputTooLarge" : json.reason, `the result of '${name}' is ${json.detail}`))
      },
      (error: unknown) => {
        owner.nestedInFlight--
        this.refuse(owner, requestId, error)
      }
    ).catch((error: unknown) => this.fail("ProtocolViolation", `a nested call's answer could not be sent: ${printed(error)}`))
  }

  private answer(requestId: string, ok: boolean, payload: string): void {
    if (this.state === "dead") return
    this.write(`{"_tag":"CallResult","requestId":${JSON.stringify(requestId)},"ok":${ok},${payload}}\n`)
  }

  /** Fails a nested call to the tool; the error is kept, so a tool that lets it propagate fails with it. */
  private refuse(owner: Pending, requestId: string, error: unknown): void {
    if (error !== undefined) (owner.nested ??= new Map()).set(requestId, error)
    this.answer(requestId, false, `"error":${JSON.stringify({ type: ThrownValue.errorType(error), message: ThrownValue.message(error) ?? printed(error) })}`)
  }
}

const clear = (pending: Pending): void => {
  if (pending.onAbort !== undefined) pending.context.signal?.removeEventListener("abort", pending.onAbort)
}

export const cancelled = (toolName: string, context: { readonly callId: string }): HarnessError.ToolCancelled =>
  new HarnessError.ToolCancelled({ name: toolName, callId: context.callId })

/** A value as compact JSON for a child, or why it cannot be sent: not JSON, nested too deep, too large. */
export const encodeValue = (value: unknown): string | { readonly reason: SandboxErrorReason; readonly detail: string } => {
  const bounded = Protocol.boundedJson(value === undefined ? null : value)
  if (Either.isRight(bounded)) return bounded.right ?? { reason: "ProtocolViolation", detail: "not JSON" }
  const problem = bounded.left
  switch (problem._tag) {
    case "NotJson":
      return { reason: "ProtocolViolation", detail: `not JSON: ${problem.detail}` }
    case "TooDeep":
      return { reason: "InputTooLarge", detail: tooDeep }
    case "TooLarge":
      return { reason: "InputTooLarge", detail: `larger than ${Protocol.MaxPayloadBytes} bytes of JSON (JT-LIM-02)` }
  }
}

/** The arguments as compact JSON, or why they cannot be sent. */
export const encodeArgs = (args: unknown): string | { readonly reason: SandboxErrorReason; readonly detail: string } => {
  const json = encodeValue(args === undefined ? {} : args)
  return typeof json === "string" ? json : { reason: json.reason, detail: `the arguments are ${json.detail}` }
}

const tooDeep = `nested deeper than ${Protocol.MaxNestingDepth} levels of arrays and objects`

/** Bytes of a value's JSON; only for values whose nesting depth was checked. */
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
