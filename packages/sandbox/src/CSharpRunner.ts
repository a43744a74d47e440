/**
 * C# tools on Mono. The runtime (runtime/JitboxRunner.cs: the protocol's child side, `Jitbox.Json`,
 * `Jitbox.Harness`) is compiled once per process with the host's `mcs`; each version's package is
 * compiled once into `tool.dll` by `mcs` in a child with the same layers as every other (rlimits,
 * bubblewrap, seccomp's no-fork rule, the sandbox's uid), which reads the package and may write only
 * its output directory. A compile error is a `CompileError` naming the file, line and column. The
 * first warm child starts while the compiler runs; children run `mono JitboxRunner.exe <package>`,
 * which loads `tool.dll` and the entry type that `entrypoint` names (fully qualified, or its simple
 * name when that is unique) with `public static string Run(string inputJson)`: JSON text in, JSON
 * text out. Static string members `Description`, `Guidelines`, `Parameters` (a JSON Schema as text)
 * and `ExecutionMode` are its metadata; a member left out comes from the create request.
 *
 * @since 0.1.0
 */
import type { CodeRunner, HarnessError } from "@jitbox/core"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { JsonLinesChild } from "./internal/child.js"
import type { ChildOwner, RunnerContext } from "./internal/context.js"
import { runtimeFile } from "./internal/runtimeFiles.js"
import * as Spawn from "./internal/spawn.js"
import { packageError, SandboxedVersion, writeShipped, writeVersion } from "./internal/version.js"
import { type MonoInfo, monoCommand } from "./Isolation.js"
import * as Protocol from "./Protocol.js"

/** @since 0.1.0 @category constants */
export const languages: ReadonlyArray<CodeRunner.CodeSource["language"]> = ["csharp"]

/** @since 0.1.0 @category constants */
export const runnerFile: URL = runtimeFile("JitboxRunner.cs")

/** The compiled runtime every C# child runs, and tools reference. @since 0.1.0 @category constants */
export const RunnerAssembly = "JitboxRunner.exe"

/** The compiled package. @since 0.1.0 @category constants */
export const ToolAssembly = "tool.dll"

/** Compiler output kept for a `CompileError`: the first errors, not a flood. */
const MaxCompilerOutputBytes = 64 * 1024
const MaxReportedErrors = 5

const runtimes = new Map<string, Promise<Buffer>>()
let compiles = 0

/**
 * The compiled runtime, once per process and compiler: the host's own trusted source, so it is
 * compiled outside the sandbox. Rejects when Mono cannot compile it.
 *
 * @since 0.1.0 @category compiling
 */
export const runtimeAssembly = (mono: MonoInfo): Promise<Buffer> => {
  const key = `${mono.path}\0${mono.mcs}`
  let promise = runtimes.get(key)
  if (promise === undefined) {
    promise = new Promise<Buffer>((resolve, reject) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-csharp-"))
      const out = path.join(dir, RunnerAssembly)
      const args = [mono.mcs, "-nologo", "-optimize+", `-out:${out}`, fileURLToPath(runnerFile)]
      execFile(mono.path, args, { env: {}, timeout: 60_000 }, (error, stdout) => {
        try {
          if (error !== null) reject(new Error(`the C# runtime did not compile: ${String(stdout).trim() || error.message}`))
          else resolve(fs.readFileSync(out))
        } finally {
          fs.rmSync(dir, { recursive: true, force: true })
        }
      })
    })
    promise.catch(() => runtimes.delete(key))
    runtimes.set(key, promise)
  }
  return promise
}

/**
 * Activates one version: write the package, start the first child while `mcs` compiles it, then
 * load the compiled entry type and report its metadata.
 *
 * @since 0.1.0 @category running
 */
export const activate = async (ctx: RunnerContext, source: CodeRunner.CodeSource): Promise<SandboxedVersion<JsonLinesChild>> => {
  const mono = ctx.iso.mono
  if (mono === undefined) throw packageError(source, "NoRunner", undefined, ctx.iso.monoDetail)
  if (!Object.prototype.hasOwnProperty.call(source.files, "Tool.cs")) {
    throw packageError(source, "MissingFile", "Tool.cs", "a C# package needs Tool.cs as its entry file")
  }
  const runtime = await runtimeAssembly(mono).catch((error: Error) => {
    throw packageError(source, "NoRunner", undefined, error.message)
  })
  const versionDir = ctx.dirs.readOnly("v")
  writeVersion(ctx, source, versionDir, { [RunnerAssembly]: runtime }, "src")
  const load = Protocol.encodeLine({ _tag: "Load", entrypoint: source.entrypoint })
  const version = new SandboxedVersion(ctx, source, versionDir, (owner) => spawn(ctx, source, versionDir, mono, owner), load)
  const first = version.spawnFirst()
  try {
    await compile(ctx, source, versionDir, mono)
  } catch (error) {
    version.discard()
    throw error
  }
  await version.activate(first, "Tool.cs")
  return version
}

const spawn = (ctx: RunnerContext, source: CodeRunner.CodeSource, versionDir: string, mono: MonoInfo, owner: ChildOwner): JsonLinesChild =>
  ctx.spawn(source, owner, (childDir, marker) => {
    const pkg = ctx.mount("pkg", versionDir, false)
    return {
      launch: {
        ...monoCommand(mono, ctx.config, [`${pkg.inside}/${RunnerAssembly}`, pkg.inside]),
        mounts: [pkg],
        workDir: ctx.workDir(childDir),
        marker,
        inheritedDescriptors: "named"
      },
      wrap: (proc, hooks) => new JsonLinesChild(proc, hooks)
    }
  })

/**
 * Compiles the package into `<version>/tool.dll` with `mcs` in a sandboxed child that reads the
 * version directory and writes only a private output directory; the assembly is then copied out
 * of it, so no child can change it afterwards. Rejects with `CompileError` (file, line, column)
 * or, when the compiler does not finish within the activation timeout, `ActivationError`.
 */
const compile = async (ctx: RunnerContext, source: CodeRunner.CodeSource, versionDir: string, mono: MonoInfo): Promise<void> => {
  const childDir = ctx.dirs.readOnly("c")
  const outHost = path.join(childDir, "out")
  fs.mkdirSync(outHost)
  fs.chmodSync(outHost, 0o700)
  if (ctx.dirs.owner !== undefined) fs.chownSync(outHost, ctx.dirs.owner.uid, ctx.dirs.owner.gid)
  try {
    const pkg = ctx.mount("pkg", versionDir, false)
    const out = ctx.mount("out", outHost, true)
    const files = Object.keys(source.files).sort().map((file) => `${pkg.inside}/src/${file}`)
    const args = [mono.mcs, "-nologo", "-target:library", "-optimize+", `-out:${out.inside}/${ToolAssembly}`, `-r:${pkg.inside}/${RunnerAssembly}`, ...files]
    const launch: Spawn.Launch = {
      ...monoCommand(mono, ctx.config, args),
      mounts: [pkg, out],
      workDir: ctx.workDir(childDir),
      marker: `${ctx.id}:mcs${++compiles}`,
      inheritedDescriptors: "named"
    }
    const { code, output } = await runToEnd(ctx, launch, source)
    if (code !== 0) throw compileError(source, output, `${pkg.inside}/src/`)
    writeShipped(path.join(versionDir, ToolAssembly), readCompiled(path.join(outHost, ToolAssembly)))
  } finally {
    ctx.dirs.remove(childDir)
  }
}

/** The compiler's output, read without following a link: the directory belonged to the compiler's uid. */
const readCompiled = (file: string): Buffer => {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
  try {
    if (!fs.fstatSync(fd).isFile()) throw new Error(`${ToolAssembly} is not a file`)
    return fs.readFileSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** Runs a launch to its exit, keeping the start of its stdout and stderr; killed at the activation timeout. */
const runToEnd = (ctx: RunnerContext, launch: Spawn.Launch, source: CodeRunner.CodeSource) =>
  new Promise<{ readonly code: number | null; readonly output: string }>((resolve, reject) => {
    const child = Spawn.launch(ctx.iso, ctx.config, launch)
    const chunks: Array<Buffer> = []
    let bytes = 0
    const keep = (chunk: Buffer) => {
      if (bytes < MaxCompilerOutputBytes) chunks.push(chunk)
      bytes += chunk.length
    }
    child.stdout.on("data", keep)
    child.stderr.on("data", keep)
    child.stdin.on("error", () => {})
    child.stdin.end()
    const timer = setTimeout(() => {
      Spawn.killGroup(child.pid, ctx.iso.bwrap === undefined ? launch.marker : undefined)
      reject(packageError(source, "ActivationError", undefined, `the C# compiler did not finish within ${ctx.config.activationTimeoutMs} ms`))
    }, ctx.config.activationTimeoutMs)
    child.on("error", (error) => {
      clearTimeout(timer)
      reject(packageError(source, "NoRunner", undefined, `the C# compiler could not be started: ${error.message}`))
    })
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, output: Buffer.concat(chunks).toString("utf8") })
    })
  })

const errorLine = /^(.*?)\((\d+),(\d+)\): error (CS\d+): (.*)$/

/**
 * The compiler's errors as one `CompileError`: the first error's file is its path, and every
 * error (the first few) reads `File.cs:line:column: error CSxxxx: message`.
 *
 * @since 0.1.0 @category compiling
 */
export const compileError = (source: CodeRunner.CodeSource, output: string, prefix: string): HarnessError.PackageError => {
  const errors: Array<{ readonly file: string; readonly text: string }> = []
  for (const line of output.split("\n")) {
    const match = errorLine.exec(line.trim())
    if (match === null) continue
    const [, file, row, column, code, message] = match as unknown as [string, string, string, string, string, string]
    const relative = file.startsWith(prefix) ? file.slice(prefix.length) : file
    errors.push({ file: relative, text: `${relative}:${row}:${column}: error ${code}: ${message}` })
  }
  if (errors.length === 0) {
    return packageError(source, "CompileError", undefined, `the C# compiler failed: ${Protocol.preview(output.trim(), 2_000)}`)
  }
  const shown = errors.slice(0, MaxReportedErrors).map((error) => error.text)
  if (errors.length > MaxReportedErrors) shown.push(`… and ${errors.length - MaxReportedErrors} more`)
  return packageError(source, "CompileError", errors[0]!.file, shown.join("\n"))
}
