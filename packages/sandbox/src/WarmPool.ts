/**
 * The warm children of one runner, and the bound on idle ones.
 *
 * **One call chain per child.** Each activation (one package version in one session) has its own
 * warm children, and a child runs one top-level invocation at a time. A timeout or a cancellation
 * SIGKILLs the process group of the child it was for, so it ends exactly that invocation (and the
 * calls it is waiting on in that child): the others of the same version run on in their own
 * children.
 *
 * **Which child.** An invocation takes its activation's most recently used idle child. With none
 * idle it starts a new one, unless it is a top-level call (no parent call) and the activation
 * already has `maximumRuntimeEnvironments` children (starting, busy or idle): then it waits, first
 * come first served, for one of them to finish (within its own timeout, deadline and signal). A
 * nested call never waits. If one of its ancestors runs in a child of the same activation (A → A,
 * or A → B → A), it runs re-entrantly in that child, which is waiting on it anyway: a recursion 32
 * deep holds one child, not 32 (ancestors are found in the runner's own record of which call runs
 * where, by the call ids the harness gave, never from what a child says). Otherwise it takes an
 * idle child or starts one more, beyond the bound. Every busy child then belongs to a chain of
 * calls that can finish, and nothing deadlocks.
 *
 * **Idle children** are kept at most `maximumRuntimeEnvironments` across the runner: starting a
 * child first evicts the least recently used idle ones, and a child that becomes idle trims the
 * surplus. A busy child is never killed to make room, because a composed call (A awaits B awaits
 * C) needs every child on its path alive; so busy children may exceed the bound for a while.
 *
 * **Module state** lives per child: a child imports the package once, and what its module keeps
 * is seen by the invocations that run in that child. Sequential calls usually reuse one child
 * (most recently used first); concurrent calls run in different children, each with its own
 * state. It starts over whenever a child is replaced: evicted from the pool, retired near its CPU
 * limit, killed by a timeout, a cancellation, a crash or a resource limit, or when the activation
 * is released. (In the trusted mode, one module instance serves every invocation of an
 * activation, concurrent ones included, until it is released.)
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { SandboxErrorReason } from "./SandboxError.js"

/** What the pool needs of a child. @since 0.1.0 @category models */
export interface PooledChild {
  readonly state: "starting" | "ready" | "dead"
  readonly busy: boolean
  readonly lastUsed: number
  readonly exited: Promise<void>
  readonly fail: (reason: SandboxErrorReason, detail: string) => void
}

/** @since 0.1.0 @category models */
export class WarmPool {
  private readonly children = new Set<PooledChild>()
  private closed = false

  constructor(readonly maximum: number) {}

  /** Live children, busy or idle. */
  get size(): number {
    return this.children.size
  }

  get isClosed(): boolean {
    return this.closed
  }

  /** Registers a child that is starting, after evicting idle children down to `maximum - 1`. */
  add(child: PooledChild): void {
    this.evict(this.maximum - 1)
    this.children.add(child)
  }

  /** A child finished its last invocation or just loaded: trim the pool back to the bound, sparing `child`. */
  idle(child?: PooledChild): void {
    this.evict(this.maximum, child)
  }

  /** A child died or was retired. */
  delete(child: PooledChild): void {
    this.children.delete(child)
  }

  /** Kills every child and waits (at most `graceMs`) for the processes to be gone. */
  close(graceMs = 5_000): Promise<void> {
    this.closed = true
    const all = [...this.children]
    this.children.clear()
    for (const child of all) child.fail("Cancelled", "the sandbox runner was closed")
    return waitAll(all.map((child) => child.exited), graceMs)
  }

  private evict(keep: number, spare?: PooledChild): void {
    while (this.children.size > keep) {
      let oldest: PooledChild | undefined
      for (const child of this.children) {
        if (
          child !== spare && child.state === "ready" && !child.busy &&
          (oldest === undefined || child.lastUsed < oldest.lastUsed)
        ) {
          oldest = child
        }
      }
      if (oldest === undefined) return
      this.children.delete(oldest)
      oldest.fail("ChildExited", "evicted from the warm pool")
    }
  }
}

/** @since 0.1.0 @category constructors */
export const make = (maximum: number): Effect.Effect<WarmPool, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => new WarmPool(maximum)),
    (pool) => Effect.promise(() => pool.close())
  )

const waitAll = (promises: ReadonlyArray<Promise<void>>, graceMs: number): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, graceMs)
    void Promise.all(promises).then(() => {
      clearTimeout(timer)
      resolve()
    })
  })
