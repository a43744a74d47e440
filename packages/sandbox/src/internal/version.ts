/**
 * One activated version: the `ActivatedCode` every runner returns. The hot path is a field read
 * and a call into the warm child; a missing, dead or retired child is replaced first (module state
 * restarts then).
 */
import type { CodeRunner } from "@jitbox/core"
import { HarnessError } from "@jitbox/core"
import * as fs from "node:fs"
import { SandboxError } from "../SandboxError.js"
import type { ChildBase, LoadAnswer } from "./child.js"
import { cancelled } from "./child.js"
import type { RunnerContext } from "./context.js"

export interface InvocableChild extends ChildBase {
  invoke(args: unknown, context: CodeRunner.InvocationContext): Promise<unknown>
}

/** Core's `ActivatedCode`, whose `invoke` always answers a promise in a subprocess. */
export interface SandboxedCode extends CodeRunner.ActivatedCode {
  readonly invoke: (args: unknown, context: CodeRunner.InvocationContext) => Promise<unknown>
}

export class SandboxedVersion<C extends InvocableChild> implements SandboxedCode {
  private starting: Promise<C> | undefined
  private disposed = false

  constructor(
    private readonly ctx: RunnerContext,
    private readonly source: CodeRunner.CodeSource,
    private readonly versionDir: string,
    readonly metadata: CodeRunner.CodeToolMetadata,
    private child: C | undefined,
    private readonly spawnChild: () => C,
    private readonly loadLine: string | undefined
  ) {}

  readonly invoke = (args: unknown, context: CodeRunner.InvocationContext): Promise<unknown> => {
    const child = this.child
    if (child !== undefined && child.usable) return child.invoke(args, context)
    return this.coldInvoke(args, context)
  }

  readonly dispose = async (): Promise<void> => {
    if (this.disposed) return
    this.disposed = true
    const child = this.child
    this.child = undefined
    child?.fail("Cancelled", "the version was disposed")
    this.ctx.dirs.remove(this.versionDir)
    await child?.exited
  }

  private async coldInvoke(args: unknown, context: CodeRunner.InvocationContext): Promise<unknown> {
    if (this.disposed || this.ctx.pool.isClosed) {
      throw new SandboxError({ reason: "Cancelled", toolName: this.source.toolName, detail: "this version was disposed" })
    }
    let child = await this.replacement()
    // another activation may have evicted it meanwhile: one more try
    if (!child.usable) child = await this.replacement()
    if (context.signal?.aborted === true) throw cancelled(this.source.toolName, context)
    return child.invoke(args, context)
  }

  private replacement(): Promise<C> {
    this.starting ??= this.start().finally(() => {
      this.starting = undefined
    })
    return this.starting
  }

  private async start(): Promise<C> {
    const child = this.spawnChild()
    let answer: LoadAnswer
    try {
      answer = await child.load(this.loadLine, this.ctx.config.activationTimeoutMs)
    } catch (error) {
      throw new SandboxError({
        reason: "SpawnFailed",
        toolName: this.source.toolName,
        detail: `a replacement child did not start: ${(error as Error).message}`
      })
    }
    if (answer._tag === "LoadFailed") {
      child.fail("ChildExited", "its package did not load")
      throw new SandboxError({
        reason: "SpawnFailed",
        toolName: this.source.toolName,
        detail: `a replacement child could not load the package: ${answer.detail}`
      })
    }
    this.child = child
    return child
  }
}

/**
 * Waits for the first child's answer and turns it into a version, or into the `PackageError` that
 * `activate` rejects with (the child is killed and the version directory removed then).
 */
export const finishActivation = async <C extends InvocableChild>(
  ctx: RunnerContext,
  source: CodeRunner.CodeSource,
  versionDir: string,
  first: C,
  spawnChild: () => C,
  loadLine: string | undefined,
  defaultPath: string
): Promise<SandboxedVersion<C>> => {
  let answer: LoadAnswer
  try {
    answer = await first.load(loadLine, ctx.config.activationTimeoutMs)
  } catch (error) {
    ctx.dirs.remove(versionDir)
    throw packageError(source, "ActivationError", undefined, `the tool did not load: ${(error as Error).message}`)
  }
  if (answer._tag === "LoadFailed") {
    first.fail("ChildExited", "its package did not load")
    ctx.dirs.remove(versionDir)
    const path = answer.path ??
      (answer.reason === "MissingEntrypoint" || answer.reason === "EntrypointNotATool" ? defaultPath : undefined)
    throw packageError(source, answer.reason, path, path !== undefined && !answer.detail.startsWith(path) ? `${path}: ${answer.detail}` : answer.detail)
  }
  return new SandboxedVersion(ctx, source, versionDir, answer.metadata, first, spawnChild, loadLine)
}

export const packageError = (
  source: CodeRunner.CodeSource,
  reason: HarnessError.PackageError["reason"],
  path: string | undefined,
  detail: string
): HarnessError.PackageError =>
  new HarnessError.PackageError(
    path === undefined ? { name: source.toolName, reason, detail } : { name: source.toolName, reason, path, detail }
  )

/** Copies a file the host ships into a version directory, readable by the child. */
export const writeShipped = (target: string, content: string | Buffer): void => {
  fs.writeFileSync(target, content)
  fs.chmodSync(target, 0o644)
}
