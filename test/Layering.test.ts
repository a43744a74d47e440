/**
 * The package boundaries the design draws: @jitbox/nats is the only package that imports
 * `@nats-io/*` (in its sources or its manifest), and neither core nor runtime imports @jitbox/nats.
 * The runtime's actors talk to the Transport service, so they run on either layer. Each entry of
 * @jitbox/adapters reaches only its own library (its peers are optional: `@jitbox/adapters/ai`
 * must load without LangChain installed, and the other way round).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("..", import.meta.url))
const packages = fs.readdirSync(path.join(root, "packages")).filter((name) => fs.existsSync(path.join(root, "packages", name, "package.json")))

const sources = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return sources(full)
    return /\.[cm]?[jt]s$/.test(entry.name) ? [full] : []
  })

/** Every module specifier a file imports or re-exports. */
const specifiers = (file: string): Array<string> =>
  [...fs.readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map((match) => match[1]!)

describe("package layering", () => {
  it("only @jitbox/nats imports @nats-io/*", () => {
    const offenders: Array<string> = []
    for (const name of packages) {
      if (name === "nats") continue
      const dir = path.join(root, "packages", name)
      for (const file of sources(path.join(dir, "src"))) {
        for (const specifier of specifiers(file)) if (specifier.startsWith("@nats-io/")) offenders.push(`${path.relative(root, file)}: ${specifier}`)
      }
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as Record<string, Record<string, string> | undefined>
      for (const field of ["dependencies", "peerDependencies", "optionalDependencies"]) {
        for (const dependency of Object.keys(manifest[field] ?? {})) {
          if (dependency.startsWith("@nats-io/")) offenders.push(`packages/${name}/package.json ${field}: ${dependency}`)
        }
      }
    }
    expect(offenders).toEqual([])
    expect(packages).toContain("nats")
  })

  it("core and runtime do not import @jitbox/nats", () => {
    const offenders = ["core", "runtime"].flatMap((name) =>
      sources(path.join(root, "packages", name, "src")).flatMap((file) =>
        specifiers(file).filter((specifier) => specifier.startsWith("@jitbox/nats")).map((specifier) => `${path.relative(root, file)}: ${specifier}`)
      )
    )
    expect(offenders).toEqual([])
  })

  it("each entry of @jitbox/adapters reaches only its own library", () => {
    const src = path.join(root, "packages", "adapters", "src")
    const libraries = (file: string, seen = new Set<string>()): Set<string> => {
      const found = new Set<string>()
      if (seen.has(file)) return found
      seen.add(file)
      for (const specifier of specifiers(file)) {
        if (specifier.startsWith(".")) {
          for (const library of libraries(path.resolve(path.dirname(file), specifier.replace(/\.js$/, ".ts")), seen)) found.add(library)
        } else if (specifier === "ai" || specifier.startsWith("ai/")) found.add("ai")
        else if (specifier.startsWith("@langchain/")) found.add("@langchain")
      }
      return found
    }
    expect([...libraries(path.join(src, "index.ts"))]).toEqual([])
    expect([...libraries(path.join(src, "ai.ts"))]).toEqual(["ai"])
    expect([...libraries(path.join(src, "langchain.ts"))]).toEqual(["@langchain"])
  })
})
