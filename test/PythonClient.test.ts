/**
 * A client written in another language from docs/protocol.md alone still works: a Python program
 * (test/fixtures/protocol_client.py, standard library only: NATS's text protocol over a socket and
 * the page's envelope) activates a session on a real nats-server, lists its tools, calls one,
 * reads the typed errors of a missing tool, bad arguments and an unknown kind, and pages its
 * profile, against a real `Sessions` host.
 */
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"
import { add } from "../packages/core/test/fixtures.js"
import { useBaseToolHost } from "../packages/nats/test/fixtures/baseToolHost.js"

const script = fileURLToPath(new URL("fixtures/protocol_client.py", import.meta.url))
const namespace = "pyclient"

const serverUrl = useBaseToolHost(namespace, [add])

describe("a Python client written from docs/protocol.md", () => {
  it("activates a session, calls a tool, reads typed errors and a profile page", async () => {
    const { stdout } = await promisify(execFile)("python3", [script, serverUrl(), namespace, "py1"], { timeout: 60_000 }).catch((error: { stdout?: string; stderr?: string }) => {
      throw new Error(`the Python client failed:\n${error.stdout ?? ""}\n${error.stderr ?? ""}`)
    })
    const steps = stdout.trim().split("\n").map((line) => JSON.parse(line) as { step: string; result: Record<string, unknown> })
    expect(steps.map((step) => step.step)).toEqual(["list_tools", "call add", "call missing", "call invalid", "profile add", "unknown kind"])
    expect(steps[1]!.result).toEqual({ ok: 5 })
    expect((steps[2]!.result.error as { _tag: string; name: string })).toMatchObject({ _tag: "ToolNotFound", name: "ad" })
  }, 90_000)
})
