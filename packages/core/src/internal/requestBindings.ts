/**
 * The request lifecycle (LIFE-01..05): one request at a time binds its base tools to the harness,
 * and detaching it restores what was bound before. Detaching advances the epoch, so a context of
 * the ended request can no longer compose (LIFE-07).
 */
import { ConfigError, InvalidToolRequest } from "../HarnessError.js"
import { checkName, isToolDefinition, type ToolDefinition } from "../Tool.js"
import type { Registry } from "./registry.js"

export type BaseTools = ReadonlyArray<ToolDefinition> | Readonly<Record<string, ToolDefinition>>

/** Named definitions from a list of named `tool(...)` values or a record keyed by name. */
export const bindings = (tools: BaseTools): Array<[string, ToolDefinition]> =>
  Array.isArray(tools)
    ? (tools as ReadonlyArray<ToolDefinition>).map((definition) => {
      if (!isToolDefinition(definition)) throw new ConfigError({ option: "tools", detail: "every base tool must come from tool(...)" })
      if (definition.name === undefined) throw new ConfigError({ option: "tools", detail: "a base tool in a list needs a name" })
      return [definition.name, definition]
    })
    : Object.entries(tools as Record<string, ToolDefinition>).map(([name, definition]) => {
      if (!isToolDefinition(definition)) throw new ConfigError({ option: "tools", detail: `base tool '${name}' must come from tool(...)` })
      return [checkName(name), definition.name === name ? definition : definition.named(name)]
    })

export class RequestBindings {
  private attached: object | undefined
  private previous: Array<readonly [string, ToolDefinition | undefined]> = []

  constructor(
    private readonly registry: Registry,
    private readonly onDetach: () => void
  ) {}

  get active(): boolean {
    return this.attached !== undefined
  }

  attach(request: object, tools: BaseTools | undefined): void {
    if (this.attached !== undefined) {
      throw new InvalidToolRequest({ reason: "FieldNotAllowed", detail: "a request is already attached to this harness" })
    }
    const registry = this.registry
    const previous: Array<readonly [string, ToolDefinition | undefined]> = []
    const added: Array<string> = []
    try {
      for (const [name, definition] of tools === undefined ? [] : bindings(tools)) {
        const existing = registry.get(name)
        const before = existing?.origin === "base" ? existing.binding : undefined
        registry.bindBase(name, definition)
        previous.push([name, before])
        if (existing === undefined) added.push(name)
      }
    } catch (cause) {
      // A request whose tools cannot be bound is not attached, and binds nothing.
      for (const [name, binding] of previous.reverse()) registry.bindBase(name, binding)
      for (const name of added) registry.entries.delete(name)
      throw cause
    }
    this.attached = request
    this.previous = previous
  }

  /** Releases `request` and its bindings; detaching an older request is ignored (LIFE-05). */
  detach(request: object): void {
    if (this.attached !== request) return
    this.attached = undefined
    this.onDetach()
    for (const [name, binding] of this.previous.reverse()) this.registry.bindBase(name, binding)
    this.previous = []
  }
}
