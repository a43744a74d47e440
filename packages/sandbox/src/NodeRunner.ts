/**
 * JavaScript and TypeScript tools in a Node child under the permission model.
 *
 * The host bundles the package once per version with core's `CodeBundle`, the one bundler of both
 * execution modes, so a package compiles, links and fails the same way trusted and sandboxed: every
 * file is compiled, imported or not (`CompileError` names the file), relative imports resolve among
 * the package's files, `node:` builtins stay external and bare package imports are refused
 * (`ImportError` names the importing file). The bundle's free references to `tool`,
 * `ToolExecutionMode` and `harness` are bound to the child runtime's values. The bundle and the
 * runtime (runtime/node-runtime.mjs) are written to a private per-version directory, the only
 * directory the child may read (`--allow-fs-read`); it may not write, spawn processes, start
 * workers or load addons. The first child starts while esbuild runs.
 *
 * @since 0.1.0
 */
import { CodeBundle, type CodeRunner } from "@jitbox/core"
import * as fs from "node:fs"
import * as path from "node:path"
import { JsonLinesChild } from "./internal/child.js"
import type { ChildOwner, RunnerContext } from "./internal/context.js"
import { runtimeFile as runtimeFileNamed } from "./internal/runtimeFiles.js"
import { SandboxedVersion, writeShipped } from "./internal/version.js"
import { nodeCommand } from "./Isolation.js"
import * as Protocol from "./Protocol.js"

/** @since 0.1.0 @category constants */
export const languages: ReadonlyArray<CodeRunner.CodeSource["language"]> = ["javascript", "typescript"]

/** @since 0.1.0 @category constants */
export const runtimeFile: URL = runtimeFileNamed("node-runtime.mjs")

let runtimeSource: string | undefined

/** The module the bundle's `tool`, `ToolExecutionMode` and `harness` come from: the child runtime's. */
const Bindings = `const runtime = globalThis[Symbol.for("jitbox.sandbox.runtime")]
export const tool = runtime.tool
export const ToolExecutionMode = runtime.ToolExecutionMode
export const harness = runtime.harness
`

/**
 * Bundles the package for a sandboxed child. Rejects with `PackageError` (`MissingFile`,
 * `CompileError` or `ImportError`) naming the file.
 *
 * @since 0.1.0 @category compiling
 */
export const bundle = (source: CodeRunner.CodeSource): Promise<string> =>
  CodeBundle.bundle(source, { bindings: Bindings, moduleRoot: undefined })

/**
 * Activates one version: bundle, start the first child, load, report metadata.
 *
 * @since 0.1.0 @category running
 */
export const activate = async (ctx: RunnerContext, source: CodeRunner.CodeSource): Promise<SandboxedVersion<JsonLinesChild>> => {
  const versionDir = ctx.dirs.readOnly("v")
  runtimeSource ??= fs.readFileSync(runtimeFile, "utf8")
  writeShipped(path.join(versionDir, "runtime.mjs"), runtimeSource)
  const load = Protocol.encodeLine({ _tag: "Load", entrypoint: source.entrypoint })
  const version = new SandboxedVersion(ctx, source, versionDir, (owner) => spawn(ctx, source, versionDir, owner), load)
  const first = version.spawnFirst()
  let bundled: string
  try {
    bundled = await bundle(source)
  } catch (error) {
    version.discard()
    throw error
  }
  writeShipped(path.join(versionDir, "tool.mjs"), bundled)
  await version.activate(first, source.entryFile)
  return version
}

const spawn = (ctx: RunnerContext, source: CodeRunner.CodeSource, versionDir: string, owner: ChildOwner): JsonLinesChild =>
  ctx.spawn(source, owner, (childDir, marker) => {
    const pkg = ctx.mount("pkg", versionDir, false)
    const work = ctx.workDir(childDir)
    return {
      launch: {
        ...nodeCommand(ctx.iso, ctx.config, pkg.inside, "runtime.mjs"),
        mounts: [pkg],
        workDir: work,
        marker,
        inheritedDescriptors: "named"
      },
      wrap: (proc, hooks) => new JsonLinesChild(proc, hooks)
    }
  })
