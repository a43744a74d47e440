/**
 * JavaScript and TypeScript tools in a Node child under the permission model.
 *
 * The host bundles the package once per version with esbuild, from memory: a plugin resolves
 * relative imports between the package's files (sub-folders, `./x.js` naming `x.ts`), leaves
 * `node:` builtins external, and refuses bare package imports. Every file of the package is
 * compiled, imported or not, so a syntax error anywhere names its file (`CompileError`), and an
 * unresolvable import names the importing file (`ImportError`). The bundle's free references to
 * `tool`, `ToolExecutionMode` and `harness` are bound (esbuild `inject`) to the child runtime's
 * values. The bundle and the runtime (runtime/node-runtime.mjs) are written to a private
 * per-version directory, the only directory the child may read (`--allow-fs-read`); it may not
 * write, spawn processes, start workers or load addons. The child starts while esbuild runs.
 *
 * @since 0.1.0
 */
import type { SandboxedCode } from "./internal/version.js"
import type { CodeRunner } from "@jitbox/core"
import * as esbuild from "esbuild"
import { builtinModules } from "node:module"
import * as fs from "node:fs"
import * as path from "node:path"
import { JsonLinesChild } from "./internal/child.js"
import type { RunnerContext } from "./internal/context.js"
import { finishActivation, packageError, writeShipped } from "./internal/version.js"
import * as Protocol from "./Protocol.js"
import { NodeAddressSpaceExtraMiB } from "./Isolation.js"

/** @since 0.1.0 @category constants */
export const languages: ReadonlyArray<CodeRunner.CodeSource["language"]> = ["javascript", "typescript"]

/** @since 0.1.0 @category constants */
export const runtimeFile = new URL("../runtime/node-runtime.mjs", import.meta.url)

let runtimeSource: string | undefined

/**
 * Activates one version: bundle, start the child, load, report metadata.
 *
 * @since 0.1.0 @category running
 */
export const activate = async (ctx: RunnerContext, source: CodeRunner.CodeSource): Promise<SandboxedCode> => {
  const versionDir = ctx.dirs.readOnly("v")
  runtimeSource ??= fs.readFileSync(runtimeFile, "utf8")
  writeShipped(path.join(versionDir, "runtime.mjs"), runtimeSource)
  const spawnChild = () => spawn(ctx, source, versionDir)
  const first = spawnChild()
  let bundled: string
  try {
    bundled = await bundle(source)
  } catch (error) {
    first.fail("Cancelled", "its package did not compile")
    ctx.dirs.remove(versionDir)
    throw error
  }
  writeShipped(path.join(versionDir, "tool.mjs"), bundled)
  const load = Protocol.encodeLine({ _tag: "Load", entrypoint: source.entrypoint })
  return finishActivation(ctx, source, versionDir, first, spawnChild, load, source.entryFile)
}

const spawn = (ctx: RunnerContext, source: CodeRunner.CodeSource, versionDir: string): JsonLinesChild =>
  ctx.spawn(source, (childDir, marker) => {
    const pkg = ctx.mount("pkg", versionDir, false)
    const work = ctx.mount("work", ctx.dirs.private(childDir, "work"), true)
    const memory = ctx.config.limits.memoryMiB
    const flags = ctx.iso.permissionFlag !== undefined ? [ctx.iso.permissionFlag, `--allow-fs-read=${pkg.inside}`] : []
    return {
      launch: {
        command: ctx.config.nodePath,
        args: [...flags, ...ctx.iso.nodeFlags, `--max-old-space-size=${memory}`, `${pkg.inside}/runtime.mjs`],
        env: {},
        mounts: [pkg, work],
        workDir: work,
        addressSpaceMiB: memory + NodeAddressSpaceExtraMiB,
        noFork: true,
        marker
      },
      wrap: (proc, hooks) => new JsonLinesChild(proc, hooks)
    }
  })

const Namespace = "jitbox"
const InjectPath = "jitbox-runtime-bindings"
const InjectNamespace = "jitbox-runtime"
const InjectSource = `const runtime = globalThis[Symbol.for("jitbox.sandbox.runtime")]
export const tool = runtime.tool
export const ToolExecutionMode = runtime.ToolExecutionMode
export const harness = runtime.harness
`
const extensions = [".ts", ".tsx", ".mts", ".js", ".jsx", ".mjs", ".cjs", ".json"]
const builtins = new Set(builtinModules)
const UnresolvedMarker = "jitbox: cannot resolve"

const loaderFor = (file: string): esbuild.Loader => {
  const ext = path.posix.extname(file)
  switch (ext) {
    case ".ts":
    case ".mts":
    case ".cts":
      return "ts"
    case ".tsx":
      return "tsx"
    case ".jsx":
      return "jsx"
    case ".json":
      return "json"
    default:
      return "js"
  }
}

/** Resolves `specifier` from `importer` among the package's files, the way Node + TypeScript would. */
const resolveIn = (files: Readonly<Record<string, string>>, importer: string, specifier: string): string | undefined => {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(importer), specifier))
  if (base.startsWith("..")) return undefined
  const candidates = [base]
  const ext = path.posix.extname(base)
  if (ext === ".js" || ext === ".mjs" || ext === ".cjs" || ext === ".jsx") {
    const stem = base.slice(0, -ext.length)
    candidates.push(`${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${stem}.cts`)
  }
  for (const e of extensions) candidates.push(base + e)
  for (const e of extensions) candidates.push(`${base}/index${e}`)
  return candidates.find((candidate) => Object.prototype.hasOwnProperty.call(files, candidate))
}

const filesPlugin = (files: Readonly<Record<string, string>>): esbuild.Plugin => ({
  name: "jitbox-files",
  setup(build) {
    build.onResolve({ filter: /.*/ }, (args) => {
      if (args.path === InjectPath) return { path: InjectPath, namespace: InjectNamespace }
      if (args.kind === "entry-point") return { path: args.path, namespace: Namespace }
      if (args.path.startsWith("node:") || builtins.has(args.path)) return { path: args.path, external: true }
      if (args.path.startsWith("./") || args.path.startsWith("../")) {
        const resolved = resolveIn(files, args.importer, args.path)
        if (resolved !== undefined) return { path: resolved, namespace: Namespace }
        return { errors: [{ text: `${UnresolvedMarker} '${args.path}': no such file in the package` }] }
      }
      return {
        errors: [{ text: `${UnresolvedMarker} '${args.path}': only relative imports and node: builtins are available in the sandbox` }]
      }
    })
    build.onLoad({ filter: /.*/, namespace: Namespace }, (args) => ({
      contents: files[args.path] ?? "",
      loader: loaderFor(args.path)
    }))
    build.onLoad({ filter: /.*/, namespace: InjectNamespace }, () => ({ contents: InjectSource, loader: "js" }))
  }
})

const isSource = (file: string) => /\.(m|c)?(t|j)sx?$/.test(file)

/**
 * Bundles the package into one ES module. Rejects with `PackageError` (`CompileError` or
 * `ImportError`) naming the file.
 *
 * @since 0.1.0 @category compiling
 */
export const bundle = async (source: CodeRunner.CodeSource): Promise<string> => {
  if (!Object.prototype.hasOwnProperty.call(source.files, source.entryFile)) {
    throw packageError(source, "MissingFile", source.entryFile, `the package has no entry file '${source.entryFile}'`)
  }
  let result: esbuild.BuildResult<{ write: false; metafile: true }>
  try {
    result = await esbuild.build({
      entryPoints: [source.entryFile],
      bundle: true,
      write: false,
      metafile: true,
      format: "esm",
      platform: "node",
      target: "node20",
      outfile: "tool.mjs",
      inject: [InjectPath],
      plugins: [filesPlugin(source.files)],
      logLevel: "silent",
      // imports are evaluated whether or not their bindings are used, as in Node
      ignoreAnnotations: true,
      treeShaking: false
    })
  } catch (error) {
    throw toPackageError(source, error)
  }
  const bundled = new Set(
    Object.keys(result.metafile.inputs).map((input) => input.startsWith(`${Namespace}:`) ? input.slice(Namespace.length + 1) : input)
  )
  const unreached = Object.keys(source.files).filter((file) => isSource(file) && !bundled.has(file))
  for (const file of unreached) {
    try {
      await esbuild.transform(source.files[file]!, { loader: loaderFor(file), sourcefile: file, logLevel: "silent" })
    } catch (error) {
      throw toPackageError(source, error)
    }
  }
  return result.outputFiles[0]!.text
}

const toPackageError = (source: CodeRunner.CodeSource, error: unknown) => {
  const messages = (error as { errors?: ReadonlyArray<esbuild.Message> }).errors ?? []
  const first = messages[0]
  if (first === undefined) return packageError(source, "CompileError", undefined, String(error))
  const file = first.location?.file.replace(`${Namespace}:`, "")
  const where = first.location !== null && first.location !== undefined
    ? `${file}:${first.location.line}:${first.location.column + 1}: `
    : ""
  const unresolved = first.text.startsWith(UnresolvedMarker) || first.text.startsWith("Could not resolve")
  const text = first.text.startsWith(UnresolvedMarker) ? `cannot resolve${first.text.slice(UnresolvedMarker.length)}` : first.text
  const more = messages.length > 1 ? ` (and ${messages.length - 1} more)` : ""
  return packageError(source, unresolved ? "ImportError" : "CompileError", file, `${where}${text}${more}`)
}
