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
 * already has `childrenPerActivation` children (starting, busy or idle): then it waits, first
 * come first served, for one of them to finish (within its own timeout, deadline and signal). A
 * nested call never waits. If one of its ancestors runs in a child of the same activation (A → A,
 * or A → B → A), it runs re-entrantly in that child, which is waiting on it anyway: a recursion 32
 * deep holds one child, not 32 (ancestors are found in the runner's own record of which call runs
 * where, by the call ids the harness gave, never from what a child says). Otherwise it takes an
 * idle child or starts one more, beyond the bound. Every busy child then belongs to a chain of
 * calls that can finish, and nothing deadlocks.
 *
 * **Live children** are kept at most `warmChildren` across the runner, and `warmChildrenPerLanguage`
 * of one language. A child is evicted only to make room: starting one when a bound is reached
 * first evicts the least recently used idle child (of that language for the language's bound), so
 * children of other activations stay warm while the runner is within its bounds. A busy child is
 * never killed to make room, because a composed call (A awaits B awaits C) needs every child on its
 * path alive; so busy children may exceed the bounds for a while, and a child that becomes idle
 * trims the surplus. One activation keeps at most `idleChildrenPerActivation` idle children.
 *
 * **Steady state.** Once every call chain has found its children warm, calls start no child at all:
 * a sequential call, or `childrenPerActivation` concurrent ones, of a tool composed `depth` deep
 * holds one child per tool of its chain, and finds them idle next time, as long as the bounds hold
 * those children (`started()` of the runner counts the children ever started).
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

/** The pool's bounds on live children. @since 0.1.0 @category models */
export interface WarmPoolBounds {
  /** Across the runner. */
  readonly total: number
  /** Of one language. */
  readonly perLanguage: number
}

/** @since 0.1.0 @category models */
export class WarmPool {
  /** Live children and the language each runs. */
  private readonly children = new Map<PooledChild, string>()
  private closed = false
  readonly bounds: WarmPoolBounds

  constructor(bounds: number | WarmPoolBounds) {
    this.bounds = typeof bounds === "number" ? { total: bounds, perLanguage: bounds } : bounds
  }

  /** Live children, busy or idle. */
  get size(): number {
    return this.children.size
  }

  get isClosed(): boolean {
    return this.closed
  }

  /** Live children of one language, busy or idle. */
  sizeOf(language: string): number {
    let count = 0
    for (const childLanguage of this.children.values()) if (childLanguage === language) count++
    return count
  }

  /** Registers a child that is starting, after evicting idle children to make room for it, if the bounds are reached. */
  add(child: PooledChild, language = ""): void {
    this.evict(language, this.bounds.perLanguage - 1)
    this.evict(undefined, this.bounds.total - 1)
    this.children.set(child, language)
  }

  /** A child finished its last invocation or just loaded: trim the pool back to its bounds, sparing `child`. */
  idle(child?: PooledChild): void {
    const language = child === undefined ? undefined : this.children.get(child)
    if (language !== undefined) this.evict(language, this.bounds.perLanguage, child)
    this.evict(undefined, this.bounds.total, child)
  }

  /** A child died or was retired. */
  delete(child: PooledChild): void {
    this.children.delete(child)
  }

  /** Kills every child and waits (at most `graceMs`) for the processes to be gone. */
  close(graceMs = 5_000): Promise<void> {
    this.closed = true
    const all = [...this.children.keys()]
    this.children.clear()
    for (const child of all) child.fail("Cancelled", "the sandbox runner was closed")
    return waitAll(all.map((child) => child.exited), graceMs)
  }

  /** Evicts the least recently used idle children (of `language`, or of any) until `keep` are left or none is idle. */
  private evict(language: string | undefined, keep: number, spare?: PooledChild): void {
    let live = language === undefined ? this.children.size : this.sizeOf(language)
    while (live > keep) {
      let oldest: PooledChild | undefined
      for (const [child, childLanguage] of this.children) {
        if (
          child !== spare && child.state === "ready" && !child.busy && (language === undefined || childLanguage === language) &&
          (oldest === undefined || child.lastUsed < oldest.lastUsed)
        ) {
          oldest = child
        }
      }
      if (oldest === undefined) return
      this.children.delete(oldest)
      live--
      oldest.fail("ChildExited", "evicted from the warm pool")
    }
  }
}

/** @since 0.1.0 @category constructors */
export const make = (bounds: number | WarmPoolBounds): Effect.Effect<WarmPool, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => new WarmPool(bounds)),
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
