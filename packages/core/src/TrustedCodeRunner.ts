/**
 * The trusted `CodeRunner` (D-01): JavaScript and TypeScript packages load into this process.
 * esbuild bundles the package from memory once per version (TypeScript is transpiled there), and
 * the bundle is imported from a `data:` URL carrying a fresh token, so every activation is a new
 * module identity: an update never sees the old module state (PKG-11), and two sessions activated
 * from one snapshot never share globals. Bare imports resolve from `moduleRoot` to absolute URLs.
 *
 * This is not a sandbox: the code runs with the application's privileges.
 *
 * @since 0.1.0
 */
import { AsyncLocalStorage } from "node:async_hooks"
import { randomUUID } from "node:crypto"
import { builtinModules } from "node:module"
import * as Posix from "node:path/posix"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import * as esbuild from "esbuild"
import * as Layer from "effect/Layer"
import { type ActivatedCode, CodeRunner, type CodeRunnerShape, type CodeSource, type InvocationContext } from "./CodeRunner.js"
import { PackageError, ToolDefinitionError, ToolRejected } from "./HarnessError.js"
import { isToolDefinition, tool } from "./Tool.js"
import { ToolExecutionMode } from "./ToolOrigin.js"

/** @since 0.1.0 @category models */
export interface Options {
  /** Where bare imports (npm packages) of code tools resolve from. Defaults to the working directory. */
  readonly moduleRoot?: string | undefined
}

const registryKey = Symbol.for("@jitbox/core/TrustedCodeRunner/bindings")

interface ModuleBindings {
  readonly tool: typeof tool
  readonly ToolExecutionMode: typeof ToolExecutionMode
  readonly harness: { readonly callTool: (name: string, args?: unknown) => Promise<unknown> }
}

const bindingsRegistry = (): Map<string, ModuleBindings> => {
  const holder = globalThis as unknown as Record<symbol, Map<string, ModuleBindings> | undefined>
  return (holder[registryKey] ??= new Map())
}

const loaderFor = (path: string): esbuild.Loader => {
  if (path.endsWith(".ts")) return "ts"
  if (path.endsWith(".json")) return "json"
  return "js"
}

const resolveInPackage = (files: Readonly<Record<string, string>>, from: string, specifier: string): string | undefined => {
  const base = Posix.normalize(Posix.join(Posix.dirname(from), specifier))
  if (base.startsWith("..") || base.startsWith("/")) return undefined
  const candidates = [base, `${base}.ts`, `${base}.js`, `${base}.mjs`, `${base}.json`, `${base}/index.ts`, `${base}/index.js`]
  if (base.endsWith(".js")) candidates.push(`${base.slice(0, -3)}.ts`)
  return candidates.find((candidate) => candidate in files)
}

const builtins = new Set(builtinModules)

const packagePlugin = (source: CodeSource, moduleRoot: string): esbuild.Plugin => ({
  name: "jitbox-package",
  setup(build) {
    build.onResolve({ filter: /.*/ }, async (args) => {
      if (args.pluginData === resolvingFromRoot) return undefined
      if (args.kind === "entry-point") return { path: source.entryFile, namespace: "jit" }
      if (args.path.startsWith("./") || args.path.startsWith("../")) {
        const found = resolveInPackage(source.files, args.importer, args.path)
        return found === undefined
          ? { errors: [{ text: `cannot resolve '${args.path}': no such file in the package` }] }
          : { path: found, namespace: "jit" }
      }
      if (args.path.startsWith("node:") || builtins.has(args.path)) return { path: args.path, external: true }
      // esbuild's own resolver, from the module root, with import conditions and without NODE_PATH,
      // as the ESM loader will resolve it at run time.
      const resolved = await build.resolve(args.path, { kind: "import-statement", resolveDir: moduleRoot, pluginData: resolvingFromRoot })
      return resolved.errors.length > 0 || resolved.path === ""
        ? { errors: [{ text: `cannot resolve package '${args.path}' from ${moduleRoot}` }] }
        : { path: pathToFileURL(resolved.path).href, external: true }
    })
    build.onLoad({ filter: /.*/, namespace: "jit" }, (args) => ({
      contents: source.files[args.path]!,
      loader: loaderFor(args.path)
    }))
  }
})

const resolvingFromRoot = Symbol("resolving from the module root")

const buildError = (source: CodeSource, failure: esbuild.BuildFailure): PackageError => {
  const first = failure.errors[0]
  const path = first?.location?.file?.replace(/^jit:/, "")
  const text = first?.text ?? failure.message
  const where = first?.location ? `${path}:${first.location.line}:${first.location.column}: ` : ""
  return new PackageError({
    name: source.toolName,
    reason: /cannot resolve|Could not resolve/.test(text) ? "ImportError" : "CompileError",
    ...(path === undefined ? {} : { path }),
    detail: `${where}${text}`
  })
}

const activationError = (source: CodeSource, cause: unknown): unknown => {
  if (cause instanceof ToolDefinitionError || cause instanceof PackageError) return cause
  const detail = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)
  const code = (cause as { code?: unknown } | null)?.code
  return new PackageError({
    name: source.toolName,
    reason: code === "ERR_MODULE_NOT_FOUND" ? "ImportError" : "ActivationError",
    detail: `activating ${source.entryFile} failed: ${detail}`
  })
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): CodeRunnerShape => {
  const moduleRoot = Path.resolve(options.moduleRoot ?? process.cwd())
  const invocations = new AsyncLocalStorage<InvocationContext>()
  const harness = {
    callTool: (name: string, args?: unknown): Promise<unknown> => {
      const context = invocations.getStore()
      if (context === undefined) {
        return Promise.reject(
          new ToolRejected({
            name,
            reason: "NoActiveInvocation",
            detail: `harness.callTool('${name}') ran outside a tool invocation (at module load or after the call ended)`
          })
        )
      }
      return context.callTool(name, args)
    }
  }

  const activate = async (source: CodeSource): Promise<ActivatedCode> => {
    if (source.language !== "typescript" && source.language !== "javascript") {
      throw new PackageError({ name: source.toolName, reason: "NoRunner", detail: `the trusted runner does not run ${source.language}` })
    }
    const token = randomUUID()
    let bundle: string
    try {
      const result = await esbuild.build({
        entryPoints: [source.entryFile],
        bundle: true,
        write: false,
        format: "esm",
        platform: "node",
        target: "node20",
        logLevel: "silent",
        plugins: [packagePlugin(source, moduleRoot)],
        banner: {
          js: `const { tool, ToolExecutionMode, harness } = globalThis[Symbol.for("@jitbox/core/TrustedCodeRunner/bindings")].get(${JSON.stringify(token)});`
        }
      })
      bundle = result.outputFiles[0]!.text
    } catch (cause) {
      if (cause !== null && typeof cause === "object" && "errors" in cause) throw buildError(source, cause as esbuild.BuildFailure)
      throw cause
    }
    const registry = bindingsRegistry()
    registry.set(token, { tool, ToolExecutionMode, harness })
    let module: Record<string, unknown>
    try {
      module = await import(`data:text/javascript;base64,${Buffer.from(bundle).toString("base64")}`)
    } catch (cause) {
      throw activationError(source, cause)
    } finally {
      registry.delete(token)
    }
    const entry = module[source.entrypoint]
    if (entry === undefined) {
      throw new PackageError({
        name: source.toolName,
        reason: "MissingEntrypoint",
        path: source.entryFile,
        detail: `${source.entryFile} has no export named '${source.entrypoint}'`
      })
    }
    if (!isToolDefinition(entry)) {
      throw new PackageError({
        name: source.toolName,
        reason: "EntrypointNotATool",
        path: source.entryFile,
        detail: `export '${source.entrypoint}' of ${source.entryFile} is not a tool(...) definition`
      })
    }
    const handler = entry.handler
    const composes = Object.values(source.files).some((text) => /\bharness\b/.test(text))
    return {
      metadata: {
        description: entry.description,
        guidelines: entry.guidelines,
        parameters: entry.parameters,
        executionMode: entry.executionMode
      },
      invoke: composes
        ? (args, context) => invocations.run(context, handler, args, context)
        : (args, context) => handler(args, context),
      dispose: () => Promise.resolve()
    }
  }

  return { languages: ["typescript", "javascript"], activate }
}

/** @since 0.1.0 @category layers */
export const layer = (options: Options = {}): Layer.Layer<CodeRunner> => Layer.sync(CodeRunner, () => make(options))
