/**
 * How a failed call reads to the model (`ThrownValue.forModel`), the one rendering the agent loop
 * and the MCP server share: `<type>: <message>`, a carried `ToolFailure` as its original type,
 * and a value that cannot be formatted without throwing.
 */
import { describe, expect, it } from "vitest"
import { HarnessError, ThrownValue } from "../src/index.js"

describe("ThrownValue.forModel", () => {
  it("renders an Error by name, a tagged error by tag, anything else by typeof", () => {
    expect(ThrownValue.forModel(new RangeError("too far"))).toEqual({ type: "RangeError", text: "RangeError: too far" })
    expect(ThrownValue.forModel(new HarnessError.ToolNotFound({ name: "nope" })).text).toMatch(/^ToolNotFound: .*nope/)
    expect(ThrownValue.forModel("plain")).toEqual({ type: "string", text: "string: plain" })
  })

  it("renders a failure carried across processes as the type it had where it was thrown", () => {
    const carried = new HarnessError.ToolFailure({ toolName: "double", errorType: "RangeError", detail: "negative", cause: undefined })
    expect(ThrownValue.forModel(carried).text).toBe("RangeError: negative")
  })

  it("says so when the value cannot be formatted", () => {
    const hostile = new Error("x")
    Object.defineProperty(hostile, "message", { get: () => { throw new Error("no") } })
    expect(ThrownValue.forModel(hostile).text).toBe("Error: (the error could not be formatted)")
    const noString = { toString: () => { throw new Error("no") } }
    expect(ThrownValue.forModel(noString).text).toBe("object: (the error could not be formatted)")
  })
})
