/**
 * The host's event loop: a call in flight keeps the host process alive (the runner's children and
 * their streams are unreferenced, so nothing else would), and idle warm children do not.
 */
import { spawnSync } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..")

describe("the host's event loop", () => {
  it("a host with nothing else to do waits for its sandboxed calls, then exits with its children idle", () => {
    const run = spawnSync(
      process.execPath,
      ["--conditions=@jitbox/source", "--import", "tsx", path.join("packages/sandbox/test/eventLoopHost.ts")],
      { cwd: root, encoding: "utf8", timeout: 30_000 }
    )
    expect(run.stderr).toBe("")
    expect(run.stdout).toBe("1\n2\n")
    expect(run.status).toBe(0)
  }, 60_000)
})
