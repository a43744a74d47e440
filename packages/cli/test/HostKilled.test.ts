/**
 * Fault: a session host SIGKILLed in a namespace with a coordinator, all as `jitbox` processes
 * (coordinator, worker, two session hosts sharing a snapshot directory) on a real nats-server.
 *
 * The session's next call, sent right after the kill, is served by the other host within its
 * deadline: the client asks again while the dead host's claim holds the session, and the new host
 * resumes the session's live lease. The call that was running on the dead host fails
 * `RemoteExecutionError` `HostLost` once the new host serves the session, not after its own
 * 60 s. Budgets are charged for what was spent: the coordinator's ledger shows exactly the
 * invocations the worker ran and the tools created, the rest of every budget left.
 */
import { connect as connectJitbox } from "@jitbox/nats"
import { NatsServer } from "@jitbox/testing"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { counterJs, waitJs } from "./fixtures/tools.js"
import { type CliProcess, spawnCli } from "./cliProcess.js"

const { connect } = createRequire(new URL("../../nats/package.json", import.meta.url))("@nats-io/transport-node") as {
  connect: (options: { servers: string }) => Promise<{ request: (subject: string, data: Uint8Array, options: { timeout: number }) => Promise<{ data: Uint8Array }>; close: () => Promise<void> }>
}

const namespace = "hostkill"

let server: NatsServer.Handle | undefined
let directory: string
const processes: Array<CliProcess> = []

beforeAll(async () => {
  server = await NatsServer.start()
  directory = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-hostkill-"))
  fs.writeFileSync(path.join(directory, "profiles.json"), JSON.stringify({ profiles: [{ name: "standard", policy: { allowedLanguages: ["JavaScript", "Python"], maximumInvocations: 20 } }] }))
}, 60_000)

afterAll(async () => {
  for (const process of processes) process.kill()
  await server?.close()
  fs.rmSync(directory, { recursive: true, force: true })
})

const env = () => ({ JITBOX_SERVER: server!.url, JITBOX_NAMESPACE: namespace })
const host = () => spawnCli(["sessions", "--store", path.join(directory, "store"), "--profile", "standard", "--deployment-consent"], env())

interface Budget {
  readonly sessionId: string
  readonly spent: { invocations: number; tools: number; repairs: number }
  readonly left: { invocations: number; tools: number; repairs: number }
  readonly lease: { id: string } | null
}

/** The session's budget in the coordinator's ledger (`leases`, asked as the default principal). */
const budgetOf = async (sessionId: string): Promise<Budget | undefined> => {
  const nc = await connect({ servers: server!.url })
  try {
    const reply = await nc.request(`jitbox.${namespace}.coordinator.default.leases`, new TextEncoder().encode(JSON.stringify({ v: 2, kind: "leases" })), { timeout: 10_000 })
    const answer = JSON.parse(new TextDecoder().decode(reply.data)) as { value: { sessions: Array<Budget> } }
    return answer.value.sessions.find((session) => session.sessionId === sessionId)
  } finally {
    await nc.close()
  }
}

const until = async (what: string, check: () => Promise<boolean>, ms = 20_000) => {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe("fault: a session host SIGKILLed, with a coordinator", () => {
  it("the next call is served by another host within its deadline, the live lease resumed, and every budget less exactly what was spent", async () => {
    const coordinator = spawnCli(["coordinator", "--profiles", path.join(directory, "profiles.json")], env())
    const worker = spawnCli(["worker"], env())
    const first = host()
    processes.push(coordinator, worker, first)
    await Promise.all([coordinator, worker, first].map((child) => child.line(/^ready /, 120_000)))
    const client = await connectJitbox({ servers: server!.url, namespace, timeoutMs: 20_000 })
    try {
      const session = client.session("s1")
      await session.createTool({ entrypoint: "counter", language: "javascript", source: counterJs })
      await session.createTool({ entrypoint: "wait", language: "javascript", source: waitJs })
      expect(await session.callTool("counter", {})).toBe(1)
      await until("the worker's count of the call", async () => (await budgetOf("s1"))?.spent.invocations === 1)
      const before = (await budgetOf("s1"))!
      expect(before.spent).toEqual({ invocations: 1, tools: 2, repairs: 0 })

      const second = host()
      processes.push(second)
      await second.line(/^ready /, 120_000)
      // a call running on the first host when it dies
      const running = session.callTool("wait", { ms: 30_000 }, { timeoutMs: 60_000 }).then(() => "answered", (error: unknown) => error)
      await until("the wait call counted", async () => (await budgetOf("s1"))?.spent.invocations === 2)
      first.child.kill("SIGKILL")
      await first.exited()
      const killedAt = Date.now()
      const answer = await session.callTool("counter", {})
      const outageMs = Date.now() - killedAt
      expect(typeof answer).toBe("number")
      const lost = await running
      const lostAfterMs = Date.now() - killedAt
      expect(lost).toMatchObject({ _tag: "RemoteExecutionError", reason: "HostLost", toolName: "wait" })
      console.log(`host SIGKILL → the session served again: ${outageMs} ms; the call it ran failed HostLost after ${lostAfterMs} ms`)

      await until("the worker's count of the third call", async () => (await budgetOf("s1"))?.spent.invocations === 3)
      const after = (await budgetOf("s1"))!
      expect(after.lease?.id).toBe(before.lease?.id)
      expect(after.spent).toEqual({ invocations: 3, tools: 2, repairs: 0 })
      expect(after.left).toEqual({ invocations: 17, tools: 6, repairs: 1 })
      // the resumed session goes on creating and calling within what is left
      await session.createTool({ entrypoint: "counter2", language: "javascript", source: counterJs.replace("counter =", "counter2 =") })
      expect(await session.callTool("counter2", {})).toBe(1)
      await until("the fourth call counted", async () => (await budgetOf("s1"))?.spent.invocations === 4)
      expect((await budgetOf("s1"))!.left).toEqual({ invocations: 16, tools: 5, repairs: 1 })
    } finally {
      await client.close()
    }
  }, 240_000)
})
