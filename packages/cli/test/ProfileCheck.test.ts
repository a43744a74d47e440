/**
 * `jitbox sessions --profile` checks its profile and `--policy` with the namespace's coordinator
 * at start (real `jitbox` processes, a real nats-server): a policy asking for more than the
 * profile, or a profile the coordinator does not have, fails before `ready` naming the flag; with
 * no coordinator answering yet the host starts and says when it will check.
 */
import { NatsServer } from "@jitbox/testing"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CliProcess, plain, spawnCli } from "./cliProcess.js"

let server: NatsServer.Handle | undefined
let directory: string
const processes: Array<CliProcess> = []

beforeAll(async () => {
  server = await NatsServer.start()
  directory = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-profilecheck-"))
  fs.writeFileSync(path.join(directory, "profiles.json"), JSON.stringify({ profiles: [{ name: "standard", policy: { allowedLanguages: ["JavaScript"] } }] }))
}, 60_000)

afterAll(async () => {
  for (const child of processes) child.kill()
  await server?.close()
  fs.rmSync(directory, { recursive: true, force: true })
})

const env = (namespace: string) => ({ JITBOX_SERVER: server!.url, JITBOX_NAMESPACE: namespace })

describe("jitbox sessions --profile, checked at start", () => {
  it("a --policy asking for more than the profile, or a --profile the coordinator lacks, fails before ready naming the flag", async () => {
    const coordinator = spawnCli(["coordinator", "--profiles", path.join(directory, "profiles.json")], env("checked"))
    processes.push(coordinator)
    await coordinator.line(/^ready /, 120_000)
    const wider = spawnCli(["sessions", "--profile", "standard", "--deployment-consent", "--policy", `{"allowAsyncOperations":true}`], env("checked"))
    const unknown = spawnCli(["sessions", "--profile", "premium", "--deployment-consent"], env("checked"))
    processes.push(wider, unknown)
    expect(await wider.exited()).toBe(1)
    expect(plain(wider.stderr())).toMatch(/--policy.*allowAsyncOperations.*standard/s)
    expect(wider.stdout()).not.toContain("ready")
    expect(await unknown.exited()).toBe(1)
    expect(plain(unknown.stderr())).toMatch(/--profile.*premium/s)
    // the profile's own ceiling, narrowed by nothing: the host starts
    const fits = spawnCli(["sessions", "--profile", "standard", "--deployment-consent"], env("checked"))
    processes.push(fits)
    await fits.line(/^ready /, 120_000)
  }, 240_000)

  it("without --deployment-consent it warns that no code runs; with no coordinator yet it starts and says when it checks", async () => {
    const host = spawnCli(["sessions", "--profile", "standard"], env("nocoordinator"))
    processes.push(host)
    await host.line(/^ready /, 120_000)
    const said = plain(host.stderr())
    expect(said).toContain("without --deployment-consent")
    expect(said).toMatch(/no coordinator answered.*checked when the first session activates/s)
  }, 240_000)
})
