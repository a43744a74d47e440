/**
 * The offline example runs as a program (EX-01..09): exit code 0, exactly the four lines of EX-09
 * on stdout, and no temporary directory left behind. The child gets its own TMPDIR, so the check
 * sees only what this run created, whatever else runs on the machine.
 */
import { spawn } from "node:child_process"
import { mkdtemp, readdir, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, describe, expect, it } from "vitest"

const repoRoot = fileURLToPath(new URL("../", import.meta.url))

let temporary: string | undefined
afterEach(async () => {
  if (temporary !== undefined) await rm(temporary, { recursive: true, force: true })
  temporary = undefined
})

describe("examples/jit-harness.ts", () => {
  it("EX-09 prints exactly the four expected lines, exits 0 and leaves no jitbox-example-* directory", async () => {
    temporary = await mkdtemp(join(tmpdir(), "jitbox-example-test-"))
    const child = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const process_ = spawn(
        process.execPath,
        ["--conditions=@jitbox/source", "--import", "tsx", "examples/jit-harness.ts"],
        { cwd: repoRoot, env: { ...process.env, TMPDIR: temporary } }
      )
      let stdout = ""
      let stderr = ""
      process_.stdout.on("data", (chunk) => (stdout += chunk))
      process_.stderr.on("data", (chunk) => (stderr += chunk))
      process_.on("error", reject)
      process_.on("close", (code) => resolve({ code, stdout, stderr }))
    })
    expect(child.code, child.stderr).toBe(0)
    expect(child.stdout).toBe(
      [
        "JIT tool created and reused: 42",
        "JIT invariants checked: composition, failed update, unload, snapshot isolation",
        "JIT profiling checked: per-tool totals and nested call records",
        "JIT diagnostics checked: recent dependency error retained",
        ""
      ].join("\n")
    )
    expect((await readdir(temporary)).filter((name) => name.startsWith("jitbox-example-"))).toEqual([])
  }, 90_000)
})
