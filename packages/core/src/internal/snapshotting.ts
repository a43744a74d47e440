/**
 * A toolbox to and from a snapshot (SNAP-06/07, SNAP-13): activating one installs all of its tools
 * or none, and never replaces an application base tool or a management tool; taking one records
 * code and text tools, base names and unload marks, nothing measured.
 */
import * as JitHarnessSnapshot from "../JitHarnessSnapshot.js"
import type { Registry } from "./registry.js"
import { releaseAll, type ToolChanges } from "./toolChanges.js"

const activationError = (detail: string) => new JitHarnessSnapshot.SnapshotError({ reason: "Activation", detail })

export const activate = async (
  registry: Registry,
  changes: ToolChanges,
  snapshot: JitHarnessSnapshot.JitHarnessSnapshot
): Promise<void> => {
  const seen = new Set<string>()
  const taken = (name: string) => registry.get(name)?.origin === "base" && !snapshot.base_tools.includes(name)
  for (const name of [...snapshot.tools.map((t) => t.name), ...snapshot.text_tools.map((t) => t.name), ...snapshot.base_tools]) {
    if (seen.has(name)) throw activationError(`the name '${name}' appears twice`)
    if (registry.get(name)?.origin === "management") throw activationError(`'${name}' is a reserved management tool name`)
    if (taken(name)) throw activationError(`'${name}' is an application base tool; a snapshot cannot replace it`)
    seen.add(name)
  }
  for (const name of snapshot.unloaded_tools) {
    if (!seen.has(name)) throw activationError(`unloaded_tools names '${name}', which is not in the snapshot`)
  }
  const built = await changes.build(snapshot)
  const late = built.find((entry) => taken(entry.name))
  if (late !== undefined) {
    await releaseAll(built)
    throw activationError(`'${late.name}' is an application base tool; a snapshot cannot replace it`)
  }
  for (const name of snapshot.base_tools) if (registry.get(name) === undefined) registry.bindBase(name, undefined)
  for (const entry of built) registry.install(entry)
  for (const name of snapshot.unloaded_tools) registry.unloaded.add(name)
}

export const take = (registry: Registry): JitHarnessSnapshot.JitHarnessSnapshot => {
  const tools: Array<JitHarnessSnapshot.CodeToolRecord> = []
  const textTools: Array<JitHarnessSnapshot.TextToolRecord> = []
  const baseTools: Array<string> = []
  for (const entry of registry.entries.values()) {
    if (entry.origin === "base") baseTools.push(entry.name)
    else if (entry.origin === "text") {
      textTools.push({ name: entry.name, description: entry.version.description, markdown: entry.version.body.text })
    } else if (entry.origin === "code") {
      const v = entry.version
      const helpers = Object.fromEntries(Object.entries(v.files).filter(([path]) => path !== v.entryFile))
      tools.push({
        name: entry.name,
        language: v.language,
        entrypoint: v.entrypoint,
        source: v.files[v.entryFile]!,
        ...(Object.keys(helpers).length > 0 ? { files: helpers } : {}),
        ...(v.duration === "long" ? { duration: v.duration } : {}),
        ...(v.examples.length > 0 ? { examples: v.examples } : {}),
        ...v.declared
      })
    }
  }
  return {
    format_version: tools.some((tool) => tool.files !== undefined) ? 2 : 1,
    tools,
    text_tools: textTools,
    base_tools: baseTools,
    unloaded_tools: Array.from(registry.unloaded).filter((name) => registry.get(name) !== undefined).sort()
  }
}
