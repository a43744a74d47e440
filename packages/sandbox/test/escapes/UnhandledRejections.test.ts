/**
 * No promise in the sandbox rejects unhandled, whatever a child does: a host started with
 * `--unhandled-rejections=strict` (an unhandled rejection ends the process) runs hostile children
 * (values nested thousands deep, forged and garbage lines, a child that exits during a nested call,
 * a call host that throws) and lives to print what each call ended with.
 */
import { spawnSync } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..")

describe("unhandled rejections", () => {
  it("a host with --unhandled-rejections=strict survives hostile children, each call failing with a typed error", () => {
    const run = spawnSync(
      process.execPath,
      ["--unhandled-rejections=strict", "--conditions=@jitbox/source", "--import", "tsx", path.join("packages/sandbox/test/escapes/hostileHost.ts")],
      { cwd: root, encoding: "utf8", timeout: 90_000 }
    )
    expect(run.stderr).toBe("")
    expect(run.status).toBe(0)
    expect(JSON.parse(run.stdout)).toEqual({
      nestedBrackets: "SandboxError OutputTooLarge",
      nestedDeepAnswer: "SandboxError OutputTooLarge",
      nestedHostThrows: "Error",
      deepResult: "SandboxError OutputTooLarge",
      forgedId: "SandboxError ProtocolViolation",
      garbage: "SandboxError ProtocolViolation",
      exitDuringNestedCall: "SandboxError ChildExited",
      deepArguments: "SandboxError InputTooLarge"
    })
  }, 120_000)
})
