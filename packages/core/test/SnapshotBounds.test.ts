/**
 * A snapshot file is read at a trust boundary, so decoding bounds what it reads: how many tools,
 * text tools, base names and unload marks, how long markdown, descriptions, guidelines and
 * entrypoints are, and how deep and large declared `parameters` are. Each bound is generous,
 * exported, and an error is a `SnapshotError` naming the field; `toJson` refuses the same.
 */
import { describe, expect, it } from "vitest"
import { JitHarnessSnapshot } from "../src/index.js"

const source = `export const t = tool({ description: "d", guidelines: "g" }, () => 1)\n`
const code = (name: string, rest: Record<string, unknown> = {}) => ({ name, language: "typescript", entrypoint: "t", source, ...rest })
const text = (name: string, rest: Record<string, unknown> = {}) => ({ name, description: "A recipe.", markdown: "1. do it", ...rest })

const snapshot = (rest: Record<string, unknown>) => ({ format_version: 1, tools: [], text_tools: [], ...rest })

const invalid = (value: unknown): JitHarnessSnapshot.SnapshotError => {
  let error: unknown
  try {
    JitHarnessSnapshot.fromJson(JSON.stringify(value))
  } catch (e) {
    error = e
  }
  expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
  expect((error as JitHarnessSnapshot.SnapshotError).reason).toBe("Invalid")
  return error as JitHarnessSnapshot.SnapshotError
}

const loads = (value: unknown) => JitHarnessSnapshot.fromJson(JSON.stringify(value))

/** `{ a: { a: … { a: 1 } } }` with `levels` nested objects. */
const nested = (levels: number): Record<string, unknown> => {
  let value: Record<string, unknown> = { a: 1 }
  for (let i = 1; i < levels; i++) value = { a: value }
  return value
}

describe("snapshot decoding bounds what it reads", () => {
  it("the limits are generous and exported", () => {
    expect(JitHarnessSnapshot.limits).toEqual({
      tools: 256,
      textTools: 256,
      baseTools: 1_024,
      unloadedTools: 1_536,
      markdownChars: 200_000,
      declaredChars: 200_000,
      entrypointChars: 1_000,
      parametersDepth: 64,
      parametersChars: 200_000
    })
  })

  it("at most 256 code tools", () => {
    const tools = Array.from({ length: 256 }, (_, i) => code(`t${i}`))
    expect(loads(snapshot({ tools })).tools).toHaveLength(256)
    expect(invalid(snapshot({ tools: [...tools, code("one_more")] })).message)
      .toContain("tools: a snapshot holds at most 256 code tools, this one has 257")
  })

  it("at most 256 text tools", () => {
    const text_tools = Array.from({ length: 256 }, (_, i) => text(`r${i}`))
    expect(loads(snapshot({ text_tools })).text_tools).toHaveLength(256)
    expect(invalid(snapshot({ text_tools: [...text_tools, text("one_more")] })).message)
      .toContain("text_tools: a snapshot holds at most 256 text tools, this one has 257")
  })

  it("at most 1,024 base tool names and 1,536 unload marks", () => {
    const names = (n: number) => Array.from({ length: n }, (_, i) => `n${i}`)
    expect(loads(snapshot({ base_tools: names(1_024) })).base_tools).toHaveLength(1_024)
    expect(invalid(snapshot({ base_tools: names(1_025) })).message)
      .toContain("base_tools: a snapshot holds at most 1024 base tool names, this one has 1025")
    expect(invalid(snapshot({ unloaded_tools: names(1_537) })).message)
      .toContain("unloaded_tools: a snapshot holds at most 1536 unload marks, this one has 1537")
  })

  it("markdown of at most 200,000 code points, as create_tool allows", () => {
    expect(loads(snapshot({ text_tools: [text("r", { markdown: "😀".repeat(200_000) })] })).text_tools).toHaveLength(1)
    expect(invalid(snapshot({ text_tools: [text("r", { markdown: "x".repeat(200_001) })] })).message)
      .toContain("text_tools.0.markdown: at most 200000 characters, this one has more")
  })

  it.each([
    ["text_tools.0.description", snapshot({ text_tools: [text("r", { description: "d".repeat(200_001) })] })],
    ["tools.0.description", snapshot({ tools: [code("t", { description: "d".repeat(200_001) })] })],
    ["tools.0.guidelines", snapshot({ tools: [code("t", { guidelines: "g".repeat(200_001) })] })]
  ])("%s of at most 200,000 code points", (field, value) => {
    expect(invalid(value).message).toContain(`${field}: at most 200000 characters, this one has more`)
  })

  it("an entrypoint of at most 1,000 code points", () => {
    expect(invalid(snapshot({ tools: [code("t", { entrypoint: "e".repeat(1_001) })] })).message)
      .toContain("tools.0.entrypoint: at most 1000 characters, this one has more")
  })

  it("parameters nested at most 64 levels deep", () => {
    expect(loads(snapshot({ tools: [code("t", { parameters: nested(64) })] })).tools[0]!.parameters).toEqual(nested(64))
    expect(invalid(snapshot({ tools: [code("t", { parameters: nested(65) })] })).message)
      .toContain("tools.0.parameters: a parameters schema nests at most 64 levels deep")
  })

  it("arrays count as levels too, and a very deep value fails cleanly rather than overflowing the stack", () => {
    const deep = `{"format_version":1,"tools":[{"name":"t","language":"typescript","entrypoint":"t","source":"x",` +
      `"parameters":{"x":${"[".repeat(200_000)}${"]".repeat(200_000)}}}],"text_tools":[]}`
    let error: unknown
    try {
      JitHarnessSnapshot.fromJson(deep)
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect((error as Error).message).toContain("tools.0.parameters: a parameters schema nests at most 64 levels deep")
  })

  it("a very deep value where a string belongs is refused naming its field, not by a stack overflow", () => {
    const deep = `{"format_version":1,"tools":[{"name":"t","language":"typescript","entrypoint":"t",` +
      `"source":${"[".repeat(200_000)}${"]".repeat(200_000)}}],"text_tools":[]}`
    let error: unknown
    try {
      JitHarnessSnapshot.fromJson(deep)
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect((error as Error).message).toContain("tools.0.source: nests more than 67 levels deep")
  })

  it("an error quotes at most a few hundred characters of the offending value", () => {
    const huge = Array.from({ length: 100_000 }, (_, i) => i)
    const error = invalid(snapshot({ text_tools: [text("r", { markdown: huge })] }))
    expect(error.message).toMatch(/^not a valid jitbox snapshot: text_tools\.0\.markdown: Expected string, actual \[0,1,2,/)
    expect(error.message.length).toBeLessThan(400)
  })

  it("parameters of at most 200,000 characters of JSON", () => {
    const wide = { type: "object", description: "x".repeat(200_000) }
    expect(invalid(snapshot({ tools: [code("t", { parameters: wide })] })).message)
      .toContain("tools.0.parameters: a parameters schema takes at most 200000 characters of JSON")
  })

  it("toJson refuses a snapshot past a bound, so save never writes what load refuses", () => {
    const tools = Array.from({ length: 257 }, (_, i) => code(`t${i}`)) as unknown as JitHarnessSnapshot.JitHarnessSnapshot["tools"]
    let error: unknown
    try {
      JitHarnessSnapshot.toJson({ format_version: 1, tools, text_tools: [], base_tools: [], unloaded_tools: [] })
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(JitHarnessSnapshot.SnapshotError)
    expect((error as Error).message).toContain("tools: a snapshot holds at most 256 code tools")
  })
})
