/**
 * A host whose TMPDIR is private (mode 0700, as `mkdtemp` makes it) while its children run as
 * another uid (root hosts run them as nobody): the sandbox's directories must not be created
 * where the children cannot reach them, or no tool would load.
 */
import { SandboxConfig, SandboxRunner } from "@jitbox/sandbox"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { activate, source, testOptions } from "./helpers.js"

const isRoot = process.getuid?.() === 0
const saved = process.env.TMPDIR
let privateDir: string | undefined

afterEach(() => {
  if (saved === undefined) delete process.env.TMPDIR
  else process.env.TMPDIR = saved
  if (privateDir !== undefined) fs.rmSync(privateDir, { recursive: true, force: true })
  privateDir = undefined
})

describe("a private TMPDIR", () => {
  it("children that run as another uid still load and run a tool", async () => {
    privateDir = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-private-tmp-"))
    fs.chmodSync(privateDir, 0o700)
    process.env.TMPDIR = privateDir
    const config = SandboxConfig.make(testOptions)
    // as root, children run as nobody and the sandbox moves out of the private directory; otherwise they are the host's uid and it may stay
    expect(config.tmpDir === privateDir).toBe(!isRoot)
    const runner = SandboxRunner.make(testOptions)
    try {
      const tool = await activate(runner, source("javascript", {
        "index.js": `export const main = tool({ description: "Adds one.", guidelines: "Use in tests." }, async ({ n }) => n + 1)`
      }))
      expect(await tool.invoke({ n: 41 })).toBe(42)
    } finally {
      await runner.close()
    }
  }, 60_000)
})
