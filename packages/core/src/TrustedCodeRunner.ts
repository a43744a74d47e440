/**
 * The trusted `CodeRunner` (D-01): JavaScript and TypeScript packages load into this process.
 * `CodeBundle` bundles the package from memory once per version (TypeScript is transpiled there), and
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
import * as Path from "node:path"
import * as Layer from "effect/Layer"
import * as CodeBundle from "./CodeBundle.js"
import {
  type CallHost,
  CodeRunner,
  type CodeRunnerShape,
  type CodeSource,
  type CodeToolMetadata,
  type Invocation,
  type InvocationContext
} from "./CodeRunner.js"
import { PackageError, ToolDefinitionError, ToolRejected } from "./HarnessError.js"
import { isToolDefinition, tool, type ToolHandler } from "./Tool.js"
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

const bindingsSource = (token: string) =>
  `const bindings = globalThis[Symbol.for("@jitbox/core/TrustedCodeRunner/bindings")].get(${JSON.stringify(token)})
export const tool = bindings.tool
export const ToolExecutionMode = bindings.ToolExecutionMode
export const harness = bindings.harness
`

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

/** A signal for calls nobody can cancel: it never fires. */
const never = new AbortController().signal

/** A handler context built from the serialisable one, for an invocation that came without its own. */
const contextOf = (invocation: Invocation, host: CallHost, signal: AbortSignal | undefined): InvocationContext => {
  const { callId, depth } = invocation.context
  return {
    callId,
    toolName: invocation.toolName,
    depth,
    signal: signal ?? never,
    callTool: (name, args = {}) => host.callTool(callId, name, args)
  }
}

interface Activation {
  readonly handler: ToolHandler
  readonly host: CallHost
  /** Whether the package names `harness`, so its calls need to know their invocation. */
  readonly composes: boolean
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): CodeRunnerShape => {
  const moduleRoot = Path.resolve(options.moduleRoot ?? process.cwd())
  const activations = new Map<string, Activation>()
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

  const activate = async (source: CodeSource, host: CallHost): Promise<CodeToolMetadata> => {
    if (source.language !== "typescript" && source.language !== "javascript") {
      throw new PackageError({ name: source.toolName, reason: "NoRunner", detail: `the trusted runner does not run ${source.language}` })
    }
    const token = randomUUID()
    const bundle = await CodeBundle.bundle(source, { bindings: bindingsSource(token), moduleRoot })
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
    activations.set(source.activationId, {
      handler: entry.handler,
      host,
      composes: Object.values(source.files).some((text) => /\bharness\b/.test(text))
    })
    return { description: entry.description, guidelines: entry.guidelines, parameters: entry.parameters, executionMode: entry.executionMode }
  }

  const invoke = (invocation: Invocation, signal: AbortSignal | undefined): unknown => {
    const activation = activations.get(invocation.activationId)
    if (activation === undefined) {
      return Promise.reject(new PackageError({ name: invocation.toolName, reason: "NoRunner", detail: `activation ${invocation.activationId} was released` }))
    }
    const context = invocation.local ?? contextOf(invocation, activation.host, signal)
    return activation.composes
      ? invocations.run(context, activation.handler, invocation.args, context)
      : activation.handler(invocation.args, context)
  }

  const release = (activationId: string): Promise<void> => {
    activations.delete(activationId)
    return Promise.resolve()
  }

  return { languages: ["typescript", "javascript"], activate, invoke, release }
}

/** @since 0.1.0 @category layers */
export const layer = (options: Options = {}): Layer.Layer<CodeRunner> => Layer.sync(CodeRunner, () => make(options))
