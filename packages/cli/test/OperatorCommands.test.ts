/**
 * The operator's commands as processes over a real nats-server (one for this file), with a
 * coordinator, a worker and a session host of the namespace running as `jitbox` processes and a
 * RemoteSession in this process calling a tool (so there are events, a claim and a lease):
 *
 * - `jitbox status` prints the table (coordinator answering, its profile, the worker, who hosts
 *   the session, its lease), `--json` the same as one document; against a namespace without a
 *   coordinator it still shows the rest and exits 1 with `CoordinatorUnavailable`;
 * - `jitbox events tail` piped prints one line per event and no escape sequence; `--json` one
 *   JSON object per line, each completion with the duration of its profile record, and SIGINT
 *   ends it with exit 0; on a pseudo-terminal it redraws its table
 *   in place (cursor up, erase below) and ends with the final table;
 * - bad arguments exit 2 (checked in this process, with `ExitCode.of`).
 */
import { NodeContext } from "@effect/platform-node"
import { NatsConnection, NatsTransport } from "@jitbox/nats"
import { Ids, RemoteSession, Subject, type Transport } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Cli, ExitCode } from "../src/index.js"
import { type CliProcess, descendants, plain, spawnCli, waitUntil } from "./cliProcess.js"

const commandLine = (pid: number): string => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8")
  } catch {
    return ""
  }
}

const namespace = `ops_${Math.random().toString(36).slice(2, 8)}`
const prefix = Subject.prefix(Ids.namespace(namespace))
const profileFile = { profiles: [{ name: "standard", policy: { allowedLanguages: ["JavaScript", "Python"], maximumInvocations: 6_400 } }] }

let server: NatsServer.Handle | undefined
let directory: string
let scope: Scope.CloseableScope | undefined
let transport: Transport.TransportShape
let session: RemoteSession.RemoteSession
const serving: Array<CliProcess> = []

const squareSource = `export const square = tool({
  description: "Square an integer.",
  guidelines: "Use to square an integer.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }: { value: number }) => { if (value < 0) throw new RangeError("negative"); return value * value })
`

beforeAll(async () => {
  server = await NatsServer.start()
  directory = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-cli-ops-"))
  fs.writeFileSync(path.join(directory, "profiles.json"), JSON.stringify(profileFile))
  scope = Effect.runSync(Scope.make())
  transport = await Effect.runPromise(Effect.map(NatsConnection.make({ servers: server.url }), NatsTransport.fromConnection).pipe(Scope.extend(scope)))
  const env = { JITBOX_SERVER: server.url, JITBOX_NAMESPACE: namespace }
  serving.push(
    spawnCli(["coordinator", "--profiles", path.join(directory, "profiles.json")], { ...env, JITBOX_COORDINATOR_ID: "coord-1" }),
    spawnCli(["worker", "--id", "w1", "--languages", "typescript,javascript"], env),
    spawnCli(["sessions", "--store", path.join(directory, "store"), "--profile", "standard", "--deployment-consent", "--policy", JSON.stringify({ allowedLanguages: ["JavaScript"], maximumInvocations: 6_400 })], env)
  )
  await Promise.all(serving.map((child) => child.line(/^ready /)))
  session = new RemoteSession.RemoteSession(transport, "s1", { prefix, timeoutMs: 60_000 })
  await session.createTool({ entrypoint: "square", language: "typescript", source: squareSource })
  expect(await session.callTool("square", { value: 3 })).toBe(9)
}, 120_000)

afterAll(async () => {
  for (const child of serving) child.kill()
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  await server?.close()
  if (directory !== undefined) fs.rmSync(directory, { recursive: true, force: true })
}, 60_000)

const env = () => ({ JITBOX_SERVER: server!.url, JITBOX_NAMESPACE: namespace })

/** Calls the tool (one in four fails) every 500 ms until `done` holds, so a tail started meanwhile sees events whenever it subscribed. */
const callUntil = async (done: () => boolean, what: () => string, ms = 100_000) => {
  const deadline = Date.now() + ms
  let failure: unknown
  for (let i = 0; !done(); i++) {
    if (Date.now() > deadline) throw new Error(`not done within ${ms} ms; the last call failed with ${String(failure)}; ${what()}`)
    await session.callTool("square", { value: i % 4 === 3 ? -1 : i }).catch((error: unknown) => (failure = error))
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}

const exited = (child: CliProcess) => {
  let code: number | null | undefined
  void child.exited().then((value) => (code = value))
  return () => code !== undefined
}

describe("jitbox status", () => {
  it("the table and --json: the coordinator and its profile, the worker, who hosts s1, its lease and budget left", async () => {
    const [table, json] = [spawnCli(["status"], env()), spawnCli(["status", "--json"], env())]
    const [tableCode, jsonCode] = await Promise.all([table.exited(), json.exited()])
    expect([tableCode, jsonCode], table.stderr() + json.stderr()).toEqual([0, 0])

    const text = plain(table.stdout())
    expect(text).toContain(`namespace ${namespace}`)
    expect(text).toMatch(/^coordinator: answering \(coord-1, \d+ requests\)$/m)
    expect(text).toMatch(/^ {2}PROFILE +LOCATION +LANGUAGES +INVOCATIONS +TOOLS +REPAIRS +CONCURRENCY +SLOTS HELD$/m)
    expect(text).toMatch(/^ {2}SESSION +PROFILE +OWNER +CONSENT +LEASE /m)
    expect(text).toMatch(/^ {2}standard +- +JavaScript,Python +6400 +8 +1 +2 +\d$/m)
    expect(text).toMatch(/^workers: 1$/m)
    expect(text).toMatch(/^ {2}w1 +default +typescript,javascript +0 +no +\d+ +0 +\S+ +\S+$/m)
    expect(text).toMatch(/^sessions: 1 hosted$/m)
    expect(text).toMatch(/^ {2}s1 +\S+ +live, \S+ left$/m)
    expect(text).toMatch(/^leases: 1 live of 1 sessions in the ledger$/m)
    expect(text).toMatch(/^ {2}s1 +standard +default +yes +lease_\S+ +\S+ +\d +\d+ +\d+ +\d+$/m)

    const status = JSON.parse(json.stdout())
    expect(status.namespace).toBe(namespace)
    expect(status.coordinator.answering).toBe(true)
    expect(status.coordinator.instances).toHaveLength(1)
    expect(status.coordinator.profiles.map((profile: { name: string }) => profile.name)).toEqual(["standard"])
    expect(status.workers).toMatchObject([{ id: "w1", pool: "default", languages: ["typescript", "javascript"], capacity: { workerId: "w1", draining: false } }])
    expect(status.workers[0].requests).toBeGreaterThan(0)
    expect(status.sessions.hosts).toMatchObject([{ sessionId: "s1", live: true }])
    expect(status.leases.sessions).toMatchObject([{ sessionId: "s1", profile: "standard", principal: "default", deploymentConsent: true, lease: { sessionId: "s1" } }])
    // what is left is the budget less what the live lease spent: its tool version (reported when it
    // was created) and the call the worker counted
    const { left, spent } = status.leases.sessions[0]
    expect(spent.tools).toBe(1)
    expect(left.tools).toBe(7)
    expect(left.invocations + spent.invocations).toBe(6_400)
    expect(spent.invocations).toBeLessThanOrEqual(1)
  }, 120_000)

  it("no coordinator in the namespace: the rest is shown, exit 1 with CoordinatorUnavailable", async () => {
    const child = spawnCli(["status", "--namespace", "nobody_here", "--timeout", "500ms"], { JITBOX_SERVER: server!.url })
    expect(await child.exited()).toBe(1)
    expect(child.stdout()).toMatch(/^coordinator: NOT ANSWERING: /m)
    expect(child.stdout()).toMatch(/^workers: 0$/m)
    expect(plain(child.stderr())).toMatch(/^jitbox: CoordinatorUnavailable: no coordinator of namespace 'nobody_here' answers: /m)
    expect(plain(child.stderr())).toContain("no coordinator answers in namespace nobody_here: start `jitbox coordinator --namespace nobody_here --profiles <file.json>`")
  }, 120_000)
})

describe("jitbox events tail", () => {
  it("piped: one line per event, no escape sequence; --json --session: one object per line until SIGINT, exit 0", async () => {
    const lines = spawnCli(["events", "tail", "--count", "6", "--timeout", "90s"], env())
    const json = spawnCli(["events", "tail", "--json", "--session", "s1"], env())
    const linesDone = exited(lines)
    await callUntil(
      () => linesDone() && json.stdout().split("\n").filter((line) => line.includes("jit_tool_completed")).length >= 2,
      () => `lines:\n${lines.stdout()}${lines.stderr()}\njson:\n${json.stdout()}${json.stderr()}`
    )
    expect(await lines.exited(), lines.stderr()).toBe(0)
    const printed = lines.stdout().trimEnd().split("\n")
    expect(printed).toHaveLength(6)
    expect(lines.stdout()).not.toContain("\x1b")
    for (const line of printed) {
      expect(line).toMatch(/^\d{4}-\d\d-\d\dT\S+Z s1 jit_tool_(started square call=\S+ origin=code|completed square call=\S+ origin=code (ok|failed RangeError)( \d+ms)?)$/)
    }
    expect(printed.some((line) => / jit_tool_completed square .* ok \d+ms$/.test(line))).toBe(true)

    json.child.kill("SIGINT")
    expect(await json.exited()).toBe(0)
    const objects = json.stdout().trimEnd().split("\n").map((line) => JSON.parse(line))
    for (const object of objects) {
      expect(object).toMatchObject({ sessionId: "s1", event: { type: "CUSTOM", payload: { session_id: "s1", tool_name: "square" } } })
    }
    const completed = objects.filter((object) => object.event.name === "jit_tool_completed")
    expect(completed.length).toBeGreaterThan(0)
    // each duration is the one the session measured: its profile record's, not the time between two arrivals here
    const measured = new Map((await session.profile("square", { limit: 1_000 })).calls.map((call) => [call.call_id, call.duration_ms]))
    for (const object of completed) expect(object.durationMs, object.event.payload.tool_call_id).toBe(measured.get(object.event.payload.tool_call_id))
  }, 150_000)

  it("on a terminal: the table is redrawn in place (cursor up, erase below) and ends with the final counts", async () => {
    const tail = spawnCli(["events", "tail", "--count", "4", "--timeout", "90s"], env(), { terminal: true })
    const done = exited(tail)
    // the first frame is drawn once it has subscribed
    await waitUntil("the first frame", () => tail.stdout().includes("TOOL"), 60_000)
    await callUntil(done, () => `tail:\n${JSON.stringify(tail.stdout())}${tail.stderr()}`)
    expect(await tail.exited(), tail.stderr()).toBe(0)
    const out = tail.stdout()
    expect(out).toMatch(/\x1b\[\d+F\x1b\[J/)
    expect(out).toContain("\x1b[?25l")
    expect(out).toContain("\x1b[?25h")
    const last = out.slice(out.lastIndexOf("\x1b[J") + 3)
    expect(last).toMatch(new RegExp(`^jitbox events ${namespace} +events 4 +dropped 0 +tools 1`))
    expect(last).toMatch(/\r?\nsquare +\d +\d +\d +(\d+ms ?)+ +\S+ ago/)
  }, 150_000)
})

describe("jitbox worker's drain", () => {
  it("SIGTERM on a terminal draws the drain's progress in place, then stopped; piped, stderr stays empty", async () => {
    const onTerminal = spawnCli(["worker", "--id", "w2", "--languages", "javascript"], env(), { terminal: true })
    const piped = spawnCli(["worker", "--id", "w3", "--languages", "javascript"], env())
    await Promise.all([waitUntil("w2 ready", () => onTerminal.stdout().includes("ready w2"), 90_000), piped.line(/^ready w3$/, 90_000)])
    // the worker runs under `script` (which may start it through a shell): signal the node process itself
    const node = descendants(onTerminal.child.pid!).find((pid) => commandLine(pid).split("\0")[0] === process.execPath)
    expect(node).toBeDefined()
    process.kill(node!, "SIGTERM")
    piped.child.kill("SIGTERM")
    expect(await onTerminal.exited()).toBe(0)
    expect(await piped.exited()).toBe(0)
    expect(onTerminal.stdout()).toMatch(/\r\x1b\[2K\S+ draining w2 /)
    expect(onTerminal.stdout()).toMatch(/\r\x1b\[2K\x1b\[\?25h[^]*stopped w2/)
    expect(piped.stdout().trimEnd().split("\n").at(-1)).toBe("stopped w3")
    expect(piped.stderr()).toBe("")
  }, 150_000)
})

describe("exit codes (in this process)", () => {
  const exitOf = (args: ReadonlyArray<string>) =>
    Effect.runPromiseExit(Cli.run(["node", "jitbox", ...args]).pipe(Effect.provide(NodeContext.layer))).then(ExitCode.of)

  it("a bad argument exits 2, --help 0", async () => {
    expect(await exitOf(["status", "--limit", "many"])).toBe(ExitCode.codes.usage)
    expect(await exitOf(["events", "tail", "--count", "0"])).toBe(ExitCode.codes.usage)
    expect(await exitOf(["events", "tail", "--timeout", "soon"])).toBe(ExitCode.codes.usage)
    expect(await exitOf(["status", "--help"])).toBe(ExitCode.codes.ok)
  })
})
