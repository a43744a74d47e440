/**
 * The README's "A first distributed session" runs as written: its shell block's `jitbox` commands
 * are started as they are (the `jitbox` command from its sources), and its TypeScript block runs as
 * a program of its own. The one change made to both is the server's address: the test's
 * `nats-server -js` listens on a free port instead of 4222, so the test never meets another server.
 */
import { NatsServer } from "@jitbox/testing"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CliProcess, spawnCli } from "../packages/cli/test/cliProcess.js"

const root = fileURLToPath(new URL("..", import.meta.url))
const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
const documented = "nats://127.0.0.1:4222"

/** The first fenced block of `language` in the README's section `heading`. */
const blockOf = (heading: string, language: string): string => {
  const start = readme.indexOf(`\n${heading}\n`)
  expect(start, `README.md has no section ${heading}`).toBeGreaterThan(0)
  const section = readme.slice(start + heading.length + 2)
  const end = section.search(/\n#{2,3} /)
  const body = end < 0 ? section : section.slice(0, end)
  const match = new RegExp("```" + language + "\\n([\\s\\S]*?)\\n```").exec(body)
  expect(match, `the section ${heading} has no ${language} block`).not.toBeNull()
  return match![1]!
}

const heading = "### A first distributed session"
let server: NatsServer.Handle | undefined
const processes: Array<CliProcess> = []

beforeAll(async () => {
  server = await NatsServer.start()
})

afterAll(async () => {
  for (const child of processes) child.child.kill("SIGTERM")
  await Promise.all(processes.map((child) => Promise.race([child.exited(), new Promise((resolve) => setTimeout(resolve, 10_000))])))
  for (const child of processes) child.kill()
  await server?.close()
})

describe("README: a first distributed session", () => {
  it("the shell block's commands start a session host and a worker, and the TypeScript block runs against them", async () => {
    const url = server!.url
    const lines = blockOf(heading, "sh").split("\n").map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#"))
    expect(lines[0]).toBe("nats-server -js &")
    const commands = lines.slice(1)
    expect(commands.length).toBeGreaterThan(1)
    for (const command of commands) {
      const words = command.replace(/\s*&$/, "").split(/\s+/)
      expect(words[0]).toBe("jitbox")
      expect(words).toContain(documented)
      processes.push(spawnCli(words.slice(1).map((word) => word === documented ? url : word)))
    }
    await Promise.all(processes.map((child) => child.line(/^ready /, 90_000)))

    const program = blockOf(heading, "ts")
    expect(program).toContain(documented)
    const directory = path.join(root, "test", ".snippets")
    fs.mkdirSync(directory, { recursive: true })
    const file = path.join(directory, "readme-first-distributed-session.ts")
    fs.writeFileSync(file, program.replaceAll(documented, url))
    const { stdout } = await promisify(execFile)(process.execPath, ["--conditions=@jitbox/source", "--import", "tsx", file], {
      cwd: root,
      timeout: 90_000
    })
    expect(stdout.trim()).toBe("49")
  }, 240_000)
})
