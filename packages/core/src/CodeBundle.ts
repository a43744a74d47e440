/**
 * Bundles a JavaScript or TypeScript code package into one ES module, from memory, with esbuild:
 * the one bundler of both execution modes (the trusted runner imports the bundle in this process;
 * the sandbox's Node runner writes it into a child's directory), so a package compiles, links and
 * fails the same way in both.
 *
 * Relative imports resolve among the package's files the way Node and TypeScript would (sub-folders,
 * `./x.js` naming `x.ts`, `index` files); `node:` builtins stay external; bare package imports
 * resolve from a module root (trusted) or are refused (sandboxed). Every source file is compiled,
 * imported or not, so a syntax error anywhere names its file and line (`CompileError`), and an
 * unresolvable import names the importing file (`ImportError`). The free names `tool`,
 * `ToolExecutionMode` and `harness` are bound to the module the caller gives as `bindings`.
 * Imports are evaluated whether or not their bindings are used, as in Node.
 *
 * @since 0.1.0
 */
import * as esbuild from "esbuild"
import { builtinModules } from "node:module"
import * as Posix from "node:path/posix"
import { pathToFileURL } from "node:url"
import type { CodeSource } from "./CodeRunner.js"
import { PackageError } from "./HarnessError.js"

/** @since 0.1.0 @category models */
export interface Options {
  /** Source of an ES module exporting `tool`, `ToolExecutionMode` and `harness` for the package. */
  readonly bindings: string
  /** Where bare package imports resolve from; `undefined` refuses them. */
  readonly moduleRoot: string | undefined
}

const Namespace = "jitbox"
const BindingsPath = "jitbox-bindings"
const BindingsNamespace = "jitbox-bindings"
const UnresolvedMarker = "jitbox: cannot resolve"
const extensions = [".ts", ".tsx", ".mts", ".js", ".jsx", ".mjs", ".cjs", ".json"]
const builtins = new Set(builtinModules)
const resolvingFromRoot = Symbol("resolving from the module root")

const loaderFor = (file: string): esbuild.Loader => {
  switch (Posix.extname(file)) {
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

const has = (files: Readonly<Record<string, string>>, path: string) => Object.prototype.hasOwnProperty.call(files, path)

/** Resolves `specifier` from `importer` among the package's files. */
const resolveIn = (files: Readonly<Record<string, string>>, importer: string, specifier: string): string | undefined => {
  const base = Posix.normalize(Posix.join(Posix.dirname(importer), specifier))
  if (base.startsWith("..") || base.startsWith("/")) return undefined
  const candidates = [base]
  const ext = Posix.extname(base)
  if (ext === ".js" || ext === ".mjs" || ext === ".cjs" || ext === ".jsx") {
    const stem = base.slice(0, -ext.length)
    candidates.push(`${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${stem}.cts`)
  }
  for (const e of extensions) candidates.push(base + e)
  for (const e of extensions) candidates.push(`${base}/index${e}`)
  return candidates.find((candidate) => has(files, candidate))
}

const plugin = (source: CodeSource, options: Options): esbuild.Plugin => ({
  name: "jitbox-package",
  setup(build) {
    build.onResolve({ filter: /.*/ }, async (args) => {
      if (args.pluginData === resolvingFromRoot) return undefined
      if (args.path === BindingsPath) return { path: BindingsPath, namespace: BindingsNamespace }
      if (args.kind === "entry-point") return { path: args.path, namespace: Namespace }
      if (args.path.startsWith("node:") || builtins.has(args.path)) return { path: args.path, external: true }
      if (args.path.startsWith("./") || args.path.startsWith("../")) {
        const resolved = resolveIn(source.files, args.importer, args.path)
        if (resolved !== undefined) return { path: resolved, namespace: Namespace }
        return { errors: [{ text: `${UnresolvedMarker} '${args.path}': no such file in the package` }] }
      }
      const root = options.moduleRoot
      if (root === undefined) {
        return { errors: [{ text: `${UnresolvedMarker} '${args.path}': only relative imports and node: builtins are available in the sandbox` }] }
      }
      // esbuild's own resolver, from the module root, with import conditions and without NODE_PATH,
      // as the ESM loader will resolve it at run time.
      const resolved = await build.resolve(args.path, { kind: "import-statement", resolveDir: root, pluginData: resolvingFromRoot })
      return resolved.errors.length > 0 || resolved.path === ""
        ? { errors: [{ text: `${UnresolvedMarker} package '${args.path}' from ${root}` }] }
        : { path: pathToFileURL(resolved.path).href, external: true }
    })
    build.onLoad({ filter: /.*/, namespace: Namespace }, (args) => ({ contents: source.files[args.path] ?? "", loader: loaderFor(args.path) }))
    build.onLoad({ filter: /.*/, namespace: BindingsNamespace }, () => ({ contents: options.bindings, loader: "js" }))
  }
})

const isSource = (file: string) => /\.(m|c)?(t|j)sx?$/.test(file)

const packageError = (source: CodeSource, reason: PackageError["reason"], path: string | undefined, detail: string) =>
  new PackageError(path === undefined ? { name: source.toolName, reason, detail } : { name: source.toolName, reason, path, detail })

const toPackageError = (source: CodeSource, error: unknown): PackageError => {
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

/**
 * Bundles the package into one ES module. Rejects with `PackageError` (`MissingFile`,
 * `CompileError` or `ImportError`) naming the file.
 *
 * @since 0.1.0
 * @category compiling
 */
export const bundle = async (source: CodeSource, options: Options): Promise<string> => {
  if (!has(source.files, source.entryFile)) {
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
      inject: [BindingsPath],
      plugins: [plugin(source, options)],
      logLevel: "silent",
      ignoreAnnotations: true,
      treeShaking: false
    })
  } catch (error) {
    throw toPackageError(source, error)
  }
  const bundled = new Set(
    Object.keys(result.metafile.inputs).map((input) => input.startsWith(`${Namespace}:`) ? input.slice(Namespace.length + 1) : input)
  )
  for (const file of Object.keys(source.files)) {
    if (!isSource(file) || bundled.has(file)) continue
    try {
      await esbuild.transform(source.files[file]!, { loader: loaderFor(file), sourcefile: file, logLevel: "silent" })
    } catch (error) {
      throw toPackageError(source, error)
    }
  }
  return result.outputFiles[0]!.text
}
