import { describe, expect, it } from "@effect/vitest"
import { JitHarness } from "../src/JitHarness.js"
import { managementToolNames } from "../src/ManagementTools.js"
import { tool } from "../src/Tool.js"
import { add, codeTool, deferred, flush, makeHarness, recordEvents, rejection } from "./fixtures.js"

const valueTool = (name: string, value: string) => codeTool(name, JSON.stringify(value))

const withSubject = async () => {
  const harness = makeHarness()
  await harness.callTool("create_tool", { entrypoint: "subject", source: valueTool("subject", "v1") })
  return harness
}

describe("update (UNL-06..09, MGMT-03, D-03, D-07)", () => {
  it("activates the update as one new version with a new version_id (MGMT-03, D-03)", async () => {
    const harness = await withSubject()
    const before = harness.definition("subject").version_id
    expect(await harness.callTool("update_tool", { name: "subject", source: valueTool("subject", "v2") })).toEqual({
      name: "subject",
      status: "loaded"
    })
    expect(await harness.callTool("subject")).toBe("v2")
    expect(harness.definition("subject").version_id).not.toBe(before)
    expect(harness.definition("subject").version_id).toMatch(/^v_[0-9a-f]{20}$/)
  })

  it("can change the entry point; the tool keeps its name (UNL-07)", async () => {
    const harness = await withSubject()
    const source = `${valueTool("subject", "v1")}\n${valueTool("renamed", "v3")}`
    await harness.updateTool({ name: "subject", source, entrypoint: "renamed" })
    expect(await harness.callTool("subject")).toBe("v3")
    expect(harness.definition("subject")).toMatchObject({ name: "subject", entrypoint: "renamed" })
    expect(await rejection(harness.callTool("renamed"))).toMatchObject({ _tag: "ToolNotFound" })
    expect(await rejection(harness.updateTool({ name: "missing", source: "x" }))).toMatchObject({ _tag: "ToolNotFound", name: "missing" })
  })

  it("a code tool may be named apart from its entry point (MGMT-02)", async () => {
    const harness = makeHarness()
    expect(await harness.callTool("create_tool", { name: "alias", entrypoint: "subject", source: valueTool("subject", "v1") })).toEqual({
      name: "alias",
      status: "loaded"
    })
    expect(await harness.callTool("alias")).toBe("v1")
    expect(harness.definition("alias")).toMatchObject({ name: "alias", entrypoint: "subject" })
    expect(await rejection(harness.callTool("subject"))).toMatchObject({ _tag: "ToolNotFound" })
  })

  it("a code tool can build and change tools itself through the management tools (OVR-01, CON-05)", async () => {
    const harness = makeHarness()
    const builder = codeTool(
      "builder",
      `[await harness.callTool("create_tool", { entrypoint: "made", source: args.source }), await harness.callTool("made", {}), await harness.callTool("unload_tool", { name: "made" })]`
    )
    await harness.createTool({ entrypoint: "builder", source: builder })
    expect(await harness.callTool("builder", { source: valueTool("made", "built") })).toEqual([
      { name: "made", status: "loaded" },
      "built",
      { name: "made", status: "unloaded" }
    ])
    expect(harness.profile().calls.slice(0, 3).map((call) => [call.tool_name, call.caller_tool_name])).toEqual([
      ["unload_tool", "builder"],
      ["made", "builder"],
      ["create_tool", "builder"]
    ])
  })

  it("an update that sends nothing, or removes what it cannot, is refused and changes nothing", async () => {
    const harness = await withSubject()
    expect(await rejection(harness.callTool("update_tool", { name: "subject" }))).toMatchObject({ reason: "MissingField" })
    expect(await rejection(harness.updateTool({ name: "subject", remove: ["index.ts"] }))).toMatchObject({ reason: "FieldNotAllowed" })
    expect(await rejection(harness.updateTool({ name: "subject", remove: ["nope.ts"] }))).toMatchObject({ reason: "UnknownPath" })
    expect(await rejection(harness.updateTool({ name: "subject", markdown: "# x" }))).toMatchObject({ reason: "FieldNotAllowed" })
    expect(await harness.callTool("subject")).toBe("v1")
  })

  it("updating an unloaded tool keeps it unloaded; loading it serves the new version (UNL-06, D-07)", async () => {
    const harness = await withSubject()
    await harness.callTool("unload_tool", { name: "subject" })
    expect(await harness.callTool("update_tool", { name: "subject", source: valueTool("subject", "v2") })).toEqual({
      name: "subject",
      status: "unloaded"
    })
    expect(harness.listTools().find((entry) => entry.name === "subject")?.state).toBe("unloaded")
    expect(await rejection(harness.callTool("subject"))).toMatchObject({ _tag: "ToolRejected", reason: "Unloaded" })
    await harness.callTool("load_tool", { name: "subject" })
    expect(await harness.callTool("subject")).toBe("v2")
  })

  it("a failed update of an unloaded tool leaves it unloaded with its old version", async () => {
    const harness = await withSubject()
    await harness.unloadTool("subject")
    await rejection(harness.updateTool({ name: "subject", source: "syntax error here (" }))
    expect(harness.listTools().find((entry) => entry.name === "subject")?.state).toBe("unloaded")
    await harness.loadTool("subject")
    expect(await harness.callTool("subject")).toBe("v1")
  })

  it("a running invocation finishes with the version it started with; later calls use the new one (UNL-08)", async () => {
    const gate = deferred<void>()
    const wait = tool({ name: "wait", description: "Waits for the test.", guidelines: "Use in tests." }, () => gate.promise)
    const harness = new JitHarness({ tools: [add, wait] })
    const slow = (value: string) => codeTool("subject", `(await harness.callTool("wait"), ${JSON.stringify(value)})`)
    await harness.createTool({ entrypoint: "subject", source: slow("old") })
    const running = harness.callTool("subject")
    await flush()
    await harness.updateTool({ name: "subject", source: codeTool("subject", `"new"`) })
    expect(await harness.callTool("subject")).toBe("new")
    gate.resolve()
    expect(await running).toBe("old")
  })
})

describe("unload and load (UNL-01..15, MGMT-04, MGMT-05, MGMT-18, D-07)", () => {
  it("unload hides the tool at once, keeps source and name; calls are rejected with origin code (UNL-01, UNL-10, MGMT-04)", async () => {
    const harness = await withSubject()
    const source = harness.source("subject")
    expect(await harness.callTool("unload_tool", { name: "subject" })).toEqual({ name: "subject", status: "unloaded" })
    expect(harness.modelTools().map((entry) => entry.name)).not.toContain("subject")
    expect(harness.listTools().find((entry) => entry.name === "subject")).toMatchObject({ origin: "code", state: "unloaded" })
    expect(harness.source("subject")).toEqual(source)
    expect(await harness.callTool("read_tool_source", { name: "subject" })).toMatchObject({ content: valueTool("subject", "v1") })
    const events = recordEvents(harness)
    const error = await rejection(harness.callTool("subject", {}))
    expect(error).toMatchObject({ _tag: "ToolRejected", reason: "Unloaded", name: "subject" })
    expect(harness.profile("subject").calls[0]).toMatchObject({ status: "rejected", origin: "code", error_type: "ToolRejected" })
    expect(await events.stop()).toEqual([])
  })

  it("load restores the same version without regenerating code (UNL-04, MGMT-05)", async () => {
    const harness = await withSubject()
    const version = harness.definition("subject").version_id
    await harness.unloadTool("subject")
    expect(await harness.callTool("load_tool", { name: "subject" })).toEqual({ name: "subject", status: "loaded" })
    expect(harness.definition("subject").version_id).toBe(version)
    expect(harness.modelTools().map((entry) => entry.name)).toContain("subject")
    expect(await harness.callTool("subject")).toBe("v1")
  })

  it("keeps module state across unload and load (UNL-15: unloading controls invocation, not loading)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "count", source: codeTool("count", "++counter", "let counter = 0") })
    expect(await harness.callTool("count")).toBe(1)
    await harness.unloadTool("count")
    await harness.loadTool("count")
    expect(await harness.callTool("count")).toBe(2)
  })

  it("unloading does not stop an invocation that already started (UNL-02)", async () => {
    const gate = deferred<void>()
    const wait = tool({ name: "wait", description: "Waits for the test.", guidelines: "Use in tests." }, () => gate.promise)
    const harness = new JitHarness({ tools: [add, wait] })
    await harness.createTool({ entrypoint: "slow", source: codeTool("slow", `(await harness.callTool("wait"), "finished")`) })
    const running = harness.callTool("slow")
    await flush()
    await harness.unloadTool("slow")
    gate.resolve()
    expect(await running).toBe("finished")
    expect(harness.profile("slow").calls[0]).toMatchObject({ status: "completed" })
  })

  it("a package survives unload and load whole (PKG-12)", async () => {
    const harness = makeHarness()
    const files = { "lib/value.ts": `export const value = "from lib"` }
    await harness.createTool({ entrypoint: "pkg", source: codeTool("pkg", "value", `import { value } from "./lib/value"`), files })
    const source = harness.source("pkg")
    await harness.unloadTool("pkg")
    expect(harness.source("pkg")).toEqual(source)
    await harness.loadTool("pkg")
    expect(await harness.callTool("pkg")).toBe("from lib")
  })

  it("is idempotent; an unknown name is ToolNotFound (D-07, AMB-27)", async () => {
    const harness = await withSubject()
    expect(await harness.callTool("load_tool", { name: "subject" })).toEqual({ name: "subject", status: "loaded" })
    await harness.callTool("unload_tool", { name: "subject" })
    expect(await harness.callTool("unload_tool", { name: "subject" })).toEqual({ name: "subject", status: "unloaded" })
    for (const management of ["unload_tool", "load_tool"]) {
      expect(await rejection(harness.callTool(management, { name: "ghost" }))).toMatchObject({ _tag: "ToolNotFound", name: "ghost" })
    }
  })

  it("management tools can neither be unloaded nor loaded (UNL-13, MGMT-13)", async () => {
    const harness = makeHarness()
    for (const name of managementToolNames) {
      for (const management of ["unload_tool", "load_tool", "update_tool"]) {
        expect(await rejection(harness.callTool(management, { name, source: "x" }))).toMatchObject({ _tag: "NameConflict", reason: "Reserved", name })
      }
    }
    expect(await harness.callTool("list_tools", {})).toMatchObject({ total: 1 })
  })

  it("the reservation holds in every exposure mode (MGMT-13, EXP-08)", async () => {
    for (const inspectionTools of ["always", "deferred", "hidden"] as const) {
      const harness = makeHarness({ inspectionTools })
      expect(await rejection(harness.callTool("create_tool", { entrypoint: "read_tool_source", source: valueTool("read_tool_source", "x") })))
        .toMatchObject({ _tag: "NameConflict", reason: "Reserved" })
      expect(await rejection(harness.callTool("unload_tool", { name: "inspect_tool_errors" }))).toMatchObject({ reason: "Reserved" })
    }
  })

  it("profiling totals and error details survive update and unload (UNL-11, UNL-12, PRF-07, ERR-22)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "flaky", source: codeTool("flaky", `args.fail ? (() => { throw new Error("flaky failed") })() : "ok"`) })
    await harness.callTool("flaky", {})
    await rejection(harness.callTool("flaky", { fail: true }))
    await harness.updateTool({ name: "flaky", source: codeTool("flaky", `"ok2"`) })
    await harness.callTool("flaky", {})
    await harness.unloadTool("flaky")
    await rejection(harness.callTool("flaky", {}))
    expect(harness.profileStats("flaky")).toMatchObject({ call_count: 4, completed_count: 2, failed_count: 1, rejected_count: 1 })
    expect(harness.toolErrors("flaky").errors.map((entry) => [entry.status, entry.message])).toEqual([
      ["rejected", "tool 'flaky' is unloaded; load it with load_tool first"],
      ["failed", "flaky failed"]
    ])
  })

  it("text and code tools that depend on an unloaded tool stay registered (UNL-03)", async () => {
    const harness = makeHarness()
    await harness.createTool({ entrypoint: "outer", source: codeTool("outer", `await harness.callTool("add", { left: 1, right: 2 })`) })
    await harness.unloadTool("add")
    expect(harness.listTools().map(({ name, state }) => [name, state])).toEqual([["add", "unloaded"], ["outer", "loaded"]])
    expect(await rejection(harness.callTool("outer"))).toMatchObject({ reason: "Unloaded", name: "add" })
    await harness.loadTool("add")
    expect(await harness.callTool("outer")).toBe(3)
  })
})
