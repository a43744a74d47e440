/**
 * `pnpm demo:agents` runs as written: three scripted agents share a tool through the namespace's
 * catalog (published, approved, found, loaded pinned, composed, improved, reloaded), embedded and
 * over NATS; exit code 0 and every step printed.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const repoRoot = fileURLToPath(new URL("../", import.meta.url))

const demo = (args: ReadonlyArray<string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn("pnpm", ["demo:agents", ...args], { cwd: repoRoot })
    let stdout = ""
    let stderr = ""
    const timer = setTimeout(() => child.kill("SIGKILL"), 170_000)
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.on("error", reject)
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

const steps = (stdout: string) => stdout.split("\n").filter((line) => /^(namespace|writer|operator|composer|improver|agents checks)/.test(line))

const expectScenario = (lines: ReadonlyArray<string>, transport: string) => {
  const version = /v_[0-9a-f]{20}/
  expect(lines[0]).toBe(`namespace 'agents' ${transport}: writer, composer and improver sessions share one catalog`)
  const first = lines[1]!.match(version)![0]
  expect(lines[1]).toBe(`writer: published slugify ${first} (proposed)`)
  expect(lines[2]).toBe(`operator: approved slugify ${first} (approved)`)
  expect(lines[3]).toBe(`composer: loaded slugify ${first}, post_path("Hello, Agents!") = /posts/hello,-agents!`)
  expect(lines[4]).toMatch(new RegExp(`^improver: catalog says slugify ${first} ran 2 calls, p50 \\d+\\.\\d\\d ms$`))
  const second = lines[5]!.match(version)![0]
  expect(second).not.toBe(first)
  expect(lines.slice(5)).toEqual([
    `improver: published slugify ${second}, updated from ${first}`,
    `operator: approved slugify ${second} (approved)`,
    `composer: before reloading, post_path("Hello, Agents!") = /posts/hello,-agents!`,
    `composer: after loading ${second}, post_path("Hello, Agents!") = /posts/hello-agents`,
    "agents checks passed: published, approved, loaded pinned, composed, improved, reloaded"
  ])
}

describe("examples/agents.ts (pnpm demo:agents)", () => {
  it("embedded: three agents share, pin, compose and improve a tool through the catalog", async () => {
    const result = await demo([])
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0)
    expectScenario(steps(result.stdout), "embedded")
  }, 180_000)

  it("over NATS: the same agents with the catalog in JetStream KV, code on jitbox workers, approvals by jitbox catalog approve", async () => {
    const result = await demo(["--nats"])
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0)
    expectScenario(steps(result.stdout), "over NATS")
  }, 180_000)
})
