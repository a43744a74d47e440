/**
 * The library tools of a session's current definitions, rebuilt only for what changed: a tool
 * keeps its library object while its definition stays the same, so a refresh on every step of a
 * conversation costs one read of the definitions.
 *
 * @since 0.1.0
 */
import type { SessionTool } from "@jitbox/core"

/** @since 0.1.0 @category models */
export interface LiveTools<T> {
  /** The library tools of `tools`, in their order. */
  readonly sync: (tools: ReadonlyArray<SessionTool>) => ReadonlyArray<T>
}

/**
 * Tools built by `build`, each rebuilt when its definition changes and forgotten when it is gone.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <T>(build: (tool: SessionTool) => T): LiveTools<T> => {
  let built = new Map<string, { readonly definition: string; readonly value: T }>()
  return {
    sync: (tools) => {
      const next = new Map<string, { readonly definition: string; readonly value: T }>()
      for (const tool of tools) {
        const definition = JSON.stringify(tool)
        const previous = built.get(tool.name)
        next.set(tool.name, previous?.definition === definition ? previous : { definition, value: build(tool) })
      }
      built = next
      return [...next.values()].map((entry) => entry.value)
    }
  }
}
