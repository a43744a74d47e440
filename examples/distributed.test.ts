/**
 * The distributed example runs as a program: a nats-server, a coordinator and two workers as
 * `jitbox` processes, and the agent's session host in the example's process. Exit code 0, the
 * agent's answer, the profile totals, every invocation on one of the two workers (quadruple once,
 * double twice, whichever worker took each), and every process stopped with exit code 0.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const repoRoot = fileURLToPath(new URL("../", import.meta.url))

describe("examples/distributed.ts", () => {
  it("composes tools across processes, reports which worker ran what, and stops every process cleanly", async () => {
    const child = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const process_ = spawn(process.execPath, ["--conditions=@jitbox/source", "--import", "tsx", "examples/distributed.ts"], { cwd: repoRoot })
      let stdout = ""
      let stderr = ""
      const timer = setTimeout(() => process_.kill("SIGKILL"), 170_000)
      process_.stdout.on("data", (chunk) => (stdout += chunk))
      process_.stderr.on("data", (chunk) => (stderr += chunk))
      process_.on("error", reject)
      process_.on("close", (code) => {
        clearTimeout(timer)
        resolve({ code, stdout, stderr })
      })
    })
    expect(child.code, `${child.stdout}\n${child.stderr}`).toBe(0)
    const lines = child.stdout.trimEnd().split("\n")
    expect(lines[0]).toMatch(/^nats-server nats:\/\/127\.0\.0\.1:\d+; namespace 'demo': coordinator, worker-a and worker-b ready$/)
    expect(lines[1]).toMatch(/^coordinator admitted session 'agent' under profile 'standard' \(lease lease[-_A-Za-z0-9]+\)$/)
    expect(lines.slice(2, 6)).toEqual([
      "agent answer: quadruple(21) = 84",
      "profile quadruple (code): 1/1 calls completed, called by the agent",
      "profile double (code): 2/2 calls completed, called by quadruple",
      "profile add (base): 2/2 calls completed, called by double"
    ])
    const ran = lines.slice(6, 8)
    expect(ran[0]).toMatch(/^worker-a ran: /)
    expect(ran[1]).toMatch(/^worker-b ran: /)
    expect(ran.flatMap((line) => line.replace(/^worker-[ab] ran: /, "").split(", ")).filter((tool) => tool !== "nothing").sort())
      .toEqual(["double", "double", "quadruple"])
    expect(lines.slice(8)).toEqual([
      "stopped: coordinator exit 0, worker-a exit 0, worker-b exit 0",
      "distributed checks passed: tools composed across processes, every process stopped cleanly"
    ])
  }, 180_000)
})
