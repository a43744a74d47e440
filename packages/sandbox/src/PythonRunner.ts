/**
 * Python tools in a `python3 -I -S -B` child (isolated mode: no user site, no `PYTHON*` variables,
 * no script directory on `sys.path`; `-S`: no site-packages; `-B`: no bytecode written).
 *
 * The package is written as the Python package `jitbox_tool` (entry `__init__.py`, relative
 * imports, sub-folders as sub-packages) next to the runner module runtime/jitbox_runner.py, which
 * is shipped with a precompiled copy so a cold start does not recompile it. Activation imports the
 * package, so a `SyntaxError` (`CompileError`) or `ImportError` anywhere surfaces at `activate`
 * with the file that raised it. Tool modules see `tool`, `ToolExecutionMode` and `harness` as
 * builtins; `def` tools compose with `harness.call_tool_sync`, `async def` tools with
 * `await harness.call_tool` (D-24).
 *
 * @since 0.1.0
 */
import type { CodeRunner } from "@jitbox/core"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { JsonLinesChild } from "./internal/child.js"
import type { ChildOwner, RunnerContext } from "./internal/context.js"
import { runtimeFile } from "./internal/runtimeFiles.js"
import { packageError, SandboxedVersion, writeVersion } from "./internal/version.js"
import * as Protocol from "./Protocol.js"

/** @since 0.1.0 @category constants */
export const languages: ReadonlyArray<CodeRunner.CodeSource["language"]> = ["python"]

/** @since 0.1.0 @category constants */
export const runnerFile: URL = runtimeFile("jitbox_runner.py")

/** The package name tool files live under inside the child. @since 0.1.0 @category constants */
export const PackageName = "jitbox_tool"

const Bootstrap = "import sys; sys.path.insert(0, sys.argv[1]); import jitbox_runner; jitbox_runner.main()"

interface ShippedRunner {
  readonly source: Buffer
  /** `__pycache__/jitbox_runner.<tag>.pyc`, unchecked-hash, or undefined when compiling failed. */
  readonly compiled: { readonly name: string; readonly bytes: Buffer } | undefined
}

const shipped = new WeakMap<RunnerContext, Promise<ShippedRunner>>()

/** Compiles the runner once per `SandboxRunner` with the detected interpreter. */
const shippedRunner = (ctx: RunnerContext, python: string, cacheTag: string): Promise<ShippedRunner> => {
  let promise = shipped.get(ctx)
  if (promise === undefined) {
    promise = new Promise((resolve) => {
      const source = fs.readFileSync(runnerFile)
      const dir = ctx.dirs.readOnly("rt")
      const src = path.join(dir, "jitbox_runner.py")
      const name = `jitbox_runner.${cacheTag}.pyc`
      const out = path.join(dir, name)
      fs.writeFileSync(src, source)
      execFile(
        python,
        [
          "-I",
          "-S",
          "-c",
          "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)",
          src,
          out
        ],
        { env: {}, timeout: 30_000 },
        (error) => {
          let compiled: ShippedRunner["compiled"]
          if (error === null) {
            try {
              compiled = { name, bytes: fs.readFileSync(out) }
            } catch {
              compiled = undefined
            }
          }
          resolve({ source, compiled })
        }
      )
    })
    shipped.set(ctx, promise)
  }
  return promise
}

/**
 * Activates one version: write the package, start the child, import, report metadata.
 *
 * @since 0.1.0 @category running
 */
export const activate = async (ctx: RunnerContext, source: CodeRunner.CodeSource): Promise<SandboxedVersion<JsonLinesChild>> => {
  const python = ctx.iso.python
  if (python === undefined) throw packageError(source, "NoRunner", undefined, ctx.iso.pythonDetail)
  if (!Object.prototype.hasOwnProperty.call(source.files, "__init__.py")) {
    throw packageError(source, "MissingFile", "__init__.py", "a Python package needs __init__.py as its entry file")
  }
  const runner = await shippedRunner(ctx, python.path, python.cacheTag)
  const versionDir = ctx.dirs.readOnly("v")
  writeVersion(ctx, source, versionDir, {
    "jitbox_runner.py": runner.source,
    ...(runner.compiled === undefined ? {} : { [`__pycache__/${runner.compiled.name}`]: runner.compiled.bytes })
  }, PackageName)
  const load = Protocol.encodeLine({ _tag: "Load", entrypoint: source.entrypoint })
  const version = new SandboxedVersion(ctx, source, versionDir, (owner) => spawn(ctx, source, versionDir, python.path, owner), load)
  await version.activate(version.spawnFirst(), "__init__.py")
  return version
}

const spawn = (
  ctx: RunnerContext,
  source: CodeRunner.CodeSource,
  versionDir: string,
  python: string,
  owner: ChildOwner
): JsonLinesChild =>
  ctx.spawn(source, owner, (childDir, marker) => {
    const pkg = ctx.mount("pkg", versionDir, false)
    const work = ctx.workDir(childDir)
    return {
      launch: {
        command: python,
        args: ["-I", ...(ctx.config.pythonSite ? [] : ["-S"]), "-B", "-c", Bootstrap, pkg.inside],
        env: {},
        mounts: [pkg],
        workDir: work,
        addressSpaceMiB: ctx.config.limits.memoryMiB,
        noFork: true,
        marker,
        inheritedDescriptors: "self"
      },
      wrap: (proc, hooks) => new JsonLinesChild(proc, hooks)
    }
  })
