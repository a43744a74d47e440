/**
 * What only the trusted, in-process mode does (D-01): module code shares the application's
 * globals, bare imports resolve from the application's module root, composed values keep their
 * JavaScript identity, and a language without an in-process runner has no runner. The suites run
 * again in sandboxed mode (the "sandboxed" vitest project) leave these out.
 */
import { describe, expect, it } from "@effect/vitest"
import { fileURLToPath } from "node:url"
import { codeTool, makeHarness, rejection } from "./fixtures.js"

const good = codeTool("subject", JSON.stringify("v1"))

describe("trusted execution only (D-01)", () => {
  it("resolves bare imports from moduleRoot and node builtins (SNAP-09)", async () => {
    const harness = makeHarness({ moduleRoot: fileURLToPath(new URL("..", import.meta.url)) })
    const source = `
import { z } from "zod"
import { basename } from "node:path"
const Args = z.object({ path: z.string() })
export const base = tool({ description: "Base name of a path.", guidelines: "Use in tests.", parameters: Args }, async (args: unknown) => basename(Args.parse(args).path))
`
    await harness.createTool({ entrypoint: "base", source })
    expect(await harness.callTool("base", { path: "/a/b/c.txt" })).toBe("c.txt")
    expect(await rejection(harness.callTool("base", { path: "/a", extra: 1 }))).toMatchObject({ _tag: "ValidationError" })
  })

  it("module bodies run at registration, before any call (PKG-10, OVR-05, D-01)", async () => {
    const key = Symbol.for("jitbox-test/activations")
    const seen = ((globalThis as Record<symbol, Array<string>>)[key] = [])
    const harness = makeHarness()
    const source = codeTool("loud", `"ok"`, `(globalThis as any)[Symbol.for("jitbox-test/activations")].push("activated")`)
    await harness.createTool({ entrypoint: "loud", source })
    expect(seen).toEqual(["activated"])
    await harness.callTool("loud")
    expect(seen).toEqual(["activated"])
  })

  it("a failed load cannot undo module-level side effects, but the old version stays (UNL-09)", async () => {
    const key = Symbol.for("jitbox-test/side-effects")
    const seen = ((globalThis as Record<symbol, Array<string>>)[key] = [])
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "subject", source: good })
    const broken = `(globalThis as any)[Symbol.for("jitbox-test/side-effects")].push("ran")\nexport const nothing = 1`
    expect(await rejection(harness.updateTool({ name: "subject", source: broken }))).toMatchObject({ reason: "MissingEntrypoint" })
    expect(seen).toEqual(["ran"])
    expect(await harness.callTool("subject")).toBe("v1")
  })

  it("a dependency returns a native value, not JSON text (CON-08)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "dep", source: codeTool("dep", `({ list: [1, 2], when: new Date(0) })`) })
    await harness.createTool({
      entrypoint: "outer",
      source: codeTool("outer", `await harness.callTool("dep", {}).then((v: any) => [typeof v, Array.isArray(v.list), v.when instanceof Date])`)
    })
    expect(await harness.callTool("outer", {})).toEqual(["object", true, true])
  })

  it("a language without an in-process runner has none in a trusted harness (D-02)", async () => {
    const harness = makeHarness()
    const error = await rejection(harness.callTool("create_tool", { entrypoint: "subject", language: "python", source: good }))
    expect(error).toMatchObject({ _tag: "PackageError", reason: "NoRunner" })
    expect(harness.listTools().map((t) => t.name)).toEqual(["add"])
  })
})
