/**
 * One activation of a package version: its directory, its metadata, and its own warm children,
 * each running one invocation at a time (see `WarmPool` for the design). The hot path takes the
 * most recently used idle child and writes one line to it; an invocation that finds no idle child
 * starts one, or waits for one when it is a top-level call and the activation already has
 * `childrenPerActivation` children.
 */
import type { CodeRunner } from "@jitbox/core"
import { HarnessError } from "@jitbox/core"
import * as fs from "node:fs"
import * as path from "node:path"
import { isSandboxError, SandboxError } from "../SandboxError.js"
import type { ChildBase, ChildCall, LoadAnswer } from "./child.js"
import { cancelled } from "./child.js"
import type { ChildOwner, RunnerContext } from "./context.js"

export interface InvocableChild extends ChildBase {
  invoke(args: unknown, call: ChildCall): Promise<unknown>
}

/** The longest delay `setTimeout` takes (a longer one fires at once). */
const MaxTimerMs = 2_147_483_647

/** One invocation from the moment the activation accepted it. */
interface Accepted {
  readonly invocation: CodeRunner.Invocation
  readonly signal: AbortSignal | undefined
  readonly host: CodeRunner.CallHost
  /** Wall-clock epoch ms after which the invocation is abandoned. */
  readonly expiresAt: number
  readonly timeoutReason: string
}

/** An invocation waiting for a child. */
interface Waiter<C> {
  /** A nested call never waits for a busy child: its ancestors may be what keeps them busy. */
  readonly nested: boolean
  /** The child being started for this invocation, until it loads or dies. */
  started: C | undefined
  done: boolean
  /** Runs the invocation in `child`, synchronously (so nothing can evict the child first). */
  readonly run: (child: C) => void
  readonly fail: (error: unknown) => void
}

/** What the runner needs of an activation, whatever its language. */
export interface Activated {
  readonly metadata: CodeRunner.CodeToolMetadata
  invoke(invocation: CodeRunner.Invocation, signal: AbortSignal | undefined, host: CodeRunner.CallHost): Promise<unknown>
  release(): Promise<void>
  close(): void
  discard(): void
}

export class SandboxedVersion<C extends InvocableChild> implements Activated, ChildOwner {
  metadata: CodeRunner.CodeToolMetadata = {}
  private readonly children = new Set<C>()
  /** Ready children with nothing to run, the most recently used last. */
  private readonly idle: Array<C> = []
  /** Invocations waiting for a child, first come first served. */
  private readonly waiters: Array<Waiter<C>> = []
  /** Children starting for a waiter: it gets the child when it loads, if it still waits. */
  private readonly reserved = new Map<C, Waiter<C>>()
  /** `releasing`: no new invocations, those accepted still run; `closed`: nothing runs any more. */
  private state: "loading" | "active" | "releasing" | "closed" = "loading"
  private inflight = 0
  private refilling = false
  private refillAgain = false
  private drained: (() => void) | undefined
  private releasing: Promise<void> | undefined

  constructor(
    private readonly ctx: RunnerContext,
    readonly source: CodeRunner.CodeSource,
    private readonly versionDir: string,
    private readonly spawnChild: (owner: ChildOwner) => C,
    private readonly loadLine: string | undefined
  ) {}

  /** Starts the activation's first child (Node starts it while esbuild runs). */
  spawnFirst(): C {
    const child = this.spawnChild(this)
    this.children.add(child)
    return child
  }

  /**
   * Waits for the first child's answer and answers the metadata, or rejects with the
   * `PackageError` that `activate` rejects with (the activation is discarded then).
   */
  async activate(first: C, defaultPath: string): Promise<CodeRunner.CodeToolMetadata> {
    let answer: LoadAnswer
    try {
      answer = await first.load(this.loadLine, this.ctx.config.activationTimeoutMs)
    } catch (error) {
      this.discard()
      throw packageError(this.source, "ActivationError", undefined, `the tool did not load: ${(error as Error).message}`)
    }
    if (answer._tag === "LoadFailed") {
      this.discard()
      const path = answer.path ??
        (answer.reason === "MissingEntrypoint" || answer.reason === "EntrypointNotATool" ? defaultPath : undefined)
      throw packageError(
        this.source,
        answer.reason,
        path,
        path !== undefined && !answer.detail.startsWith(path) ? `${path}: ${answer.detail}` : answer.detail
      )
    }
    if (this.state === "loading") this.state = "active"
    this.metadata = answer.metadata
    return answer.metadata
  }

  /** Kills every child and removes the directory of an activation that never became active. */
  discard(): void {
    this.state = "closed"
    for (const child of [...this.children]) child.fail("Cancelled", "its package did not load")
    this.ctx.dirs.remove(this.versionDir)
  }

  invoke(invocation: CodeRunner.Invocation, signal: AbortSignal | undefined, host: CodeRunner.CallHost): Promise<unknown> {
    if (this.state !== "active") {
      return Promise.reject(released(invocation))
    }
    const context = invocation.context
    const now = Date.now()
    let expiresAt = now + this.ctx.config.shortTimeoutMs
    let timeoutReason = `did not finish within ${this.ctx.config.shortTimeoutMs} ms`
    if (context.deadline !== null) {
      const deadline = now + (context.deadline - this.ctx.config.clock.now())
      if (deadline < expiresAt) {
        expiresAt = deadline
        timeoutReason = "ran past its deadline"
      }
    }
    const accepted: Accepted = { invocation, signal, host, expiresAt, timeoutReason }
    if (expiresAt <= now) return Promise.reject(this.timeout(accepted, "before it started"))
    this.inflight++
    const ancestor = this.ancestorChild(context)
    let child = ancestor === undefined ? this.idle.pop() : undefined
    while (child !== undefined && !child.usable) child = this.idle.pop()
    const result = ancestor !== undefined
      ? this.run(ancestor, accepted)
      : child !== undefined
      ? this.run(child, accepted)
      : this.wait(accepted)
    result.then(this.settled, this.settled)
    return result
  }

  /** Refuses new invocations, lets those in flight finish, then kills the children. Never rejects. */
  release(): Promise<void> {
    if (this.releasing !== undefined) return this.releasing
    if (this.state !== "closed") this.state = "releasing"
    this.releasing = (async () => {
      if (this.inflight > 0) await new Promise<void>((resolve) => (this.drained = resolve))
      this.state = "closed"
      const children = [...this.children]
      for (const child of children) child.fail("Cancelled", "the activation was released")
      this.ctx.dirs.remove(this.versionDir)
      await within(children.map((child) => child.exited), 5_000)
    })().catch(() => undefined)
    return this.releasing
  }

  /** The runner is closing: invocations still waiting for a child fail now (the pool kills the children). */
  close(): void {
    this.state = "closed"
    for (const waiter of this.waiters.splice(0)) {
      waiter.fail(new SandboxError({ reason: "Cancelled", toolName: this.source.toolName, detail: "the sandbox runner was closed" }))
    }
  }

  // ChildOwner

  readonly onIdle = (child: ChildBase): void => {
    const c = child as C
    const waiter = this.reserved.get(c)
    if (waiter !== undefined) {
      this.reserved.delete(c)
      waiter.started = undefined
      if (!waiter.done) return waiter.run(c)
    }
    this.handOff(c)
  }

  readonly onDead = (child: ChildBase): void => {
    const c = child as C
    this.children.delete(c)
    // a waiter whose child died while starting hears it from `load`
    this.reserved.delete(c)
    const index = this.idle.indexOf(c)
    if (index !== -1) this.idle.splice(index, 1)
    if (this.waiters.length > 0) this.refill()
  }

  // internals

  private readonly settled = (): void => {
    if (--this.inflight === 0 && this.drained !== undefined) this.drained()
  }

  /**
   * The child of this activation whose innermost invocation is an ancestor of the call (A → A, or
   * A → B → A), when that child is re-entrant (Node and Python are, Bash is not): the ancestor waits
   * on this call, so running it there takes no child more; a recursion 32 deep would otherwise hold
   * 32 children at once. Only the innermost: a second nested call of an ancestor that already has
   * one running there takes another child, so the invocations of a child always form one chain.
   * Found from this runner's own record of what runs where, by the call ids the harness gave.
   */
  private ancestorChild(context: CodeRunner.CallContext): C | undefined {
    let callId = context.parentCallId
    for (let hops = 0; callId !== null && hops < 1_024; hops++) {
      const entry = this.ctx.running.get(runningKey(context.sessionId, callId))
      if (entry === undefined) return undefined
      const child = entry.child as C
      if (child.reentrant && child.innermostCallId === callId && this.children.has(child) && child.usable) return child
      callId = entry.parentCallId
    }
    return undefined
  }

  private run(child: C, accepted: Accepted): Promise<unknown> {
    const { invocation } = accepted
    const context = invocation.context
    const key = runningKey(context.sessionId, context.callId)
    const running = this.ctx.running
    running.set(key, { child, parentCallId: context.parentCallId })
    const result = this.invokeIn(child, accepted)
    const forget = untrack(running, key, child)
    result.then(forget, forget)
    return result
  }

  private invokeIn(child: C, accepted: Accepted): Promise<unknown> {
    const { invocation } = accepted
    const context = invocation.context
    const result = child.invoke(invocation.args, {
      callId: context.callId,
      toolName: invocation.toolName,
      depth: context.depth,
      signal: accepted.signal,
      timeoutMs: Math.min(Math.max(1, accepted.expiresAt - Date.now()), MaxTimerMs),
      timeoutReason: accepted.timeoutReason,
      host: accepted.host
    })
    // refused before it ran (arguments too large, signal already aborted): the child is still free
    if (!child.busy && child.usable) this.handOff(child)
    return result
  }

  /** A child that has nothing to run goes to the first waiter, or joins the idle ones. */
  private handOff(child: C): void {
    const waiter = this.waiters.shift()
    if (waiter !== undefined) return waiter.run(child)
    if (this.state !== "active" && this.state !== "loading") return child.fail("Cancelled", "the activation was released")
    this.idle.push(child)
    while (this.idle.length > this.ctx.config.idleChildrenPerActivation) {
      this.idle.shift()?.fail("ChildExited", "retired: its activation kept enough idle children")
    }
  }

  private wait(accepted: Accepted): Promise<unknown> {
    const { signal, invocation } = accepted
    return new Promise((resolve, reject) => {
      if (signal?.aborted === true) return reject(cancelled(invocation.toolName, invocation.context))
      let timer: NodeJS.Timeout | undefined = undefined
      const onAbort = () => leave(cancelled(invocation.toolName, invocation.context))
      const settle = () => {
        waiter.done = true
        clearTimeout(timer)
        signal?.removeEventListener("abort", onAbort)
        const index = this.waiters.indexOf(waiter)
        if (index !== -1) this.waiters.splice(index, 1)
      }
      const leave = (error: unknown) => {
        if (waiter.done) return
        settle()
        reject(error)
      }
      const waiter: Waiter<C> = {
        nested: invocation.context.parentCallId !== null,
        started: undefined,
        done: false,
        run: (child) => {
          settle()
          this.run(child, accepted).then(resolve, reject)
        },
        fail: leave
      }
      timer = setTimeout(
        () => leave(this.timeout(accepted, "while it waited for a child")),
        Math.min(Math.max(1, accepted.expiresAt - Date.now()), MaxTimerMs)
      )
      signal?.addEventListener("abort", onAbort, { once: true })
      this.waiters.push(waiter)
      this.refill()
    })
  }

  /** Starts a child for every waiter that may have one and has none starting. */
  private refill(): void {
    if (this.state === "closed") return
    // starting a child may evict others, whose death calls back here
    if (this.refilling) {
      this.refillAgain = true
      return
    }
    this.refilling = true
    try {
      do {
        this.refillAgain = false
        for (const waiter of [...this.waiters]) {
          if (waiter.done || waiter.started !== undefined) continue
          if (!waiter.nested && this.children.size >= this.ctx.config.childrenPerActivation) continue
          this.startFor(waiter)
        }
      } while (this.refillAgain)
    } finally {
      this.refilling = false
    }
  }

  private startFor(waiter: Waiter<C>): void {
    let child: C
    try {
      child = this.spawnChild(this)
    } catch (error) {
      return waiter.fail(this.spawnFailed(`a new child could not be started: ${(error as Error).message}`))
    }
    this.children.add(child)
    this.reserved.set(child, waiter)
    waiter.started = child
    // a child that loads is handed on by `onIdle`, before this continuation runs
    child.load(this.loadLine, this.ctx.config.activationTimeoutMs).then(
      (answer) => {
        if (answer._tag === "Loaded") return
        child.fail("ChildExited", "its package did not load")
        this.startFailed(waiter, child, this.spawnFailed(`a new child could not load the package: ${answer.detail}`))
      },
      (error: unknown) =>
        this.startFailed(
          waiter,
          child,
          isSandboxError(error) && error.reason === "Cancelled" ? error : this.spawnFailed(`a new child did not start: ${(error as Error).message}`)
        )
    )
  }

  private startFailed(waiter: Waiter<C>, child: C, error: unknown): void {
    if (waiter.started !== child) return
    waiter.started = undefined
    // no retry: a package that stopped loading would start children forever
    waiter.fail(error)
  }

  private spawnFailed(detail: string): SandboxError {
    return new SandboxError({ reason: "SpawnFailed", toolName: this.source.toolName, detail })
  }

  private timeout(accepted: Accepted, when: string): SandboxError {
    return new SandboxError({ reason: "Timeout", toolName: accepted.invocation.toolName, detail: `the invocation ${accepted.timeoutReason} ${when}` })
  }
}

const runningKey = (sessionId: string, callId: string): string => `${sessionId}\u0000${callId}`

/**
 * Removes a call from the table of running calls, unless another child took its key since. Made by a
 * function rather than written inline: a named arrow function is wrapped in a naming helper on every
 * call when the source runs through tsx or esbuild with `keepNames` (as the benchmarks run it).
 */
const untrack = (running: RunnerContext["running"], key: string, child: ChildBase) => (): void => {
  if (running.get(key)?.child === child) running.delete(key)
}

const released = (invocation: CodeRunner.Invocation): HarnessError.PackageError =>
  new HarnessError.PackageError({
    name: invocation.toolName,
    reason: "NoRunner",
    detail: `activation ${invocation.activationId} was released`
  })

export const packageError = (
  source: CodeRunner.CodeSource,
  reason: HarnessError.PackageError["reason"],
  path: string | undefined,
  detail: string
): HarnessError.PackageError =>
  new HarnessError.PackageError(
    path === undefined ? { name: source.toolName, reason, detail } : { name: source.toolName, reason, path, detail }
  )

/**
 * Writes a version directory: the files the host ships at its top (a name may have one directory,
 * made readable), the package's files below `packageDir`. Removes the directory and throws `PackageError` (`InvalidPath`) when a write fails.
 */
export const writeVersion = (
  ctx: RunnerContext,
  source: CodeRunner.CodeSource,
  versionDir: string,
  shipped: Readonly<Record<string, string | Buffer>>,
  packageDir: string
): void => {
  try {
    for (const [name, content] of Object.entries(shipped)) {
      const target = path.join(versionDir, name)
      const parent = path.dirname(target)
      if (!fs.existsSync(parent)) {
        fs.mkdirSync(parent)
        fs.chmodSync(parent, 0o755)
      }
      writeShipped(target, content)
    }
    const pkg = path.join(versionDir, packageDir)
    fs.mkdirSync(pkg)
    fs.chmodSync(pkg, 0o755)
    ctx.dirs.writeFiles(pkg, source.files)
  } catch (error) {
    ctx.dirs.remove(versionDir)
    throw packageError(source, "InvalidPath", undefined, `cannot write the package: ${(error as Error).message}`)
  }
}

/** Copies a file the host ships into a version directory, readable by the child. */
export const writeShipped = (target: string, content: string | Buffer): void => {
  fs.writeFileSync(target, content)
  fs.chmodSync(target, 0o644)
}

/** Resolves when every promise has, or after `ms`, whichever comes first. */
export const within = (promises: ReadonlyArray<Promise<void>>, ms: number): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms)
    void Promise.all(promises).then(() => {
      clearTimeout(timer)
      resolve()
    })
  })
