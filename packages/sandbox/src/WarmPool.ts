/**
 * Warm children, one per (language, package version), reused across invocations so module state
 * persists and only the first call (or the first after an eviction or a crash) pays a cold start.
 *
 * Concurrency: invocations of one version are **multiplexed in its one child**. A Node child runs
 * them concurrently (each knows its invocation through AsyncLocalStorage); a Python child runs
 * `async def` tools concurrently on one asyncio loop and `def` tools one at a time (a nested call to
 * the same version runs re-entrantly while the outer one waits in `call_tool_sync`); a Bash child
 * queues them. One consequence: a timeout or cancellation kills the child, so the other invocations
 * in flight in that child fail with `SandboxError` reason `ChildExited`.
 *
 * The bound (`maximumRuntimeEnvironments`) is strict for idle children and soft for busy ones:
 * starting a child first evicts the least recently used idle children, but a busy child is never
 * killed to make room, because a composed call (A awaits B awaits C) needs every child on its
 * path alive; waiting for a slot would deadlock it. Surplus children are evicted as soon as they
 * are idle.
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
