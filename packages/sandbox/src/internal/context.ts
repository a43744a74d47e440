/**
 * What every runner of one `SandboxRunner` shares: configuration, detected isolation, the warm
 * pool, the directories, and the bookkeeping that turns a spawned process into a pooled child.
 */
import type { CodeRunner } from "@jitbox/core"
import type { ChildProcessWithoutNullStreams } from "node:child_process"
import { randomBytes } from "node:crypto"
import type * as SandboxConfig from "../SandboxConfig.js"
import type * as Isolation from "../Isolation.js"
import type { WarmPool } from "../WarmPool.js"
import type { ChildBase, ChildHooks } from "./child.js"
import { Directories } from "./dirs.js"
import * as Spawn from "./spawn.js"

/** What owns a child besides the pool: the activation it serves. */
export interface ChildOwner {
  /** The child has nothing to run (it just loaded, or finished an invocation). */
  readonly onIdle: (child: ChildBase) => void
  /** The child is dead; it never serves again. */
  readonly onDead: (child: ChildBase) => void
}

export class RunnerContext {
  /** Prefix of every child's marker value. */
  readonly id = randomBytes(6).toString("hex")
  readonly dirs: Directories
  /**
   * Every invocation running in a child of this runner, by session and call id, with its parent's
   * call id: a nested call whose ancestor waits in a re-entrant child of the same activation runs in
   * that child instead of taking one more.
   */
  readonly running = new Map<string, { readonly child: ChildBase; readonly parentCallId: string | null }>()
  private children = 0

  /** Children spawned so far. */
  get started(): number {
    return this.children
  }

  constructor(
    readonly config: SandboxConfig.SandboxConfig,
    readonly iso: Isolation.Isolation,
    readonly pool: WarmPool
  ) {
    this.dirs = Directories.make(config.tmpDir, iso.runAs)
  }

  /**
   * Spawns a child in a fresh private directory and registers it with the pool. `build` receives
   * the child directory and returns the launch plus how to wrap the process. `owner` hears first
   * when the child is idle (it may hand it the next invocation), then the pool (which may evict
   * other idle children).
   */
  spawn<C extends ChildBase>(
    source: CodeRunner.CodeSource,
    owner: ChildOwner,
    build: (childDir: string, marker: string) => {
      readonly launch: Spawn.Launch
      readonly wrap: (proc: ChildProcessWithoutNullStreams, hooks: ChildHooks) => C
    }
  ): C {
    const childDir = this.dirs.readOnly("c")
    const marker = `${this.id}:${++this.children}`
    const built = build(childDir, marker)
    // the runner's own variables win over what the host adds
    const launch = source.environment === undefined ? built.launch : { ...built.launch, env: { ...source.environment, ...built.launch.env } }
    const wrap = built.wrap
    const hooks: ChildHooks = {
      toolName: source.toolName,
      versionId: source.versionId,
      config: this.config,
      sweepMarker: this.iso.bwrap === undefined ? marker : undefined,
      onIdle: (child) => {
        owner.onIdle(child)
        this.pool.idle(child)
      },
      onDead: (child) => {
        this.pool.delete(child)
        owner.onDead(child)
      },
      onExit: () => this.dirs.remove(childDir)
    }
    const child = wrap(Spawn.launch(this.iso, this.config, launch), hooks)
    this.pool.add(child, source.language)
    return child
  }

  /**
   * The child's working directory: a tmpfs at `/mnt/work` inside bubblewrap (no host directory),
   * else a private directory in `childDir`.
   */
  workDir(childDir: string): Spawn.WorkDir {
    if (this.iso.bwrap !== undefined) return { inside: Spawn.mountPoint(this.iso, "work", ""), host: undefined }
    const host = this.dirs.private(childDir, "work")
    return { inside: host, host }
  }

  /** A mount of a host directory at `/mnt/<name>` (bubblewrap) or at its own path. */
  mount(name: string, host: string, writable: boolean): Spawn.Mount {
    return { host, inside: Spawn.mountPoint(this.iso, name, host), writable }
  }
}
