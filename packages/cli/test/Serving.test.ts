/**
 * The `jitbox` processes over a real nats-server (one for this file): a coordinator (profiles from
 * a file, ledger in NATS KV), a worker (`--log-invocations`, configured from JITBOX_SERVER and
 * JITBOX_NAMESPACE) and a session host (`--store`), each spawned from its sources. A
 * RemoteSession in this process creates a TypeScript tool and calls it: it runs on the worker,
 * and the session's snapshot lands in the store. Then SIGTERM: the worker drains (an invocation
 * past its grace period fails `Closed`), every process prints `stopped …`, exits 0 and leaves no
 * process behind; SIGINT does the same for the session host.
 */
import { Coordinator, CoordinatorClient, CoordinatorProtocol, Ids, Ledger, RemoteSession, Subject, Transport } from "@jitbox/runtime"
import { KvLedger, NatsConnection, NatsTransport } from "@jitbox/nats"
import { NatsServer } from "@jitbox/testing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { alive, type CliProcess, descendants, spawnCli, waitUntil } from "./cliProcess.js"

const namespace = `cli_${Math.random().toString(36).slice(2, 8)}`
const prefix = Subject.prefix(Ids.namespace(namespace))
const profileFile = {
  profiles: [{ name: "standard", credentialName: "SERVICE_TOKEN", policy: { allowedLanguages: ["JavaScript", "Python"], maximumInvocations: 100 } }]
}

let server: NatsServer.Handle | undefined
let directory: string
let scope: Scope.CloseableScope | undefined
let transport: Transport.TransportShape
let coordinator: CliProcess | undefined
let worker: CliProcess | undefined
let sessions: CliProcess | undefined

const run = <A, E>(effect: Effect.Effect<A, E, Transport.Transport>): Promise<A> =>
  Effect.runPromise(Effect.provideService(effect, Transport.Transport, transport))

beforeAll(async () => {
  server = await NatsServer.start()
  directory = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-cli-serving-"))
  fs.writeFileSync(path.join(directory, "profiles.json"), JSON.stringify(profileFile))
  scope = Effect.runSync(Scope.make())
  transport = await Effect.runPromise(Effect.map(NatsConnection.make({ servers: server.url }), NatsTransport.fromConnection).pipe(Scope.extend(scope)))
  coordinator = spawnCli(["coordinator", "--server", server.url, "--namespace", namespace, "--profiles", path.join(directory, "profiles.json")])
  worker = spawnCli(["worker", "--id", "w1", "--grace-ms", "300", "--log-invocations", "--credential", "SERVICE_TOKEN"], {
    JITBOX_SERVER: server.url,
    JITBOX_NAMESPACE: namespace,
    SERVICE_TOKEN: "tok-cli"
  })
  sessions = spawnCli([
    "sessions", "--server", server.url, "--namespace", namespace, "--store", path.join(directory, "store"), "--idle-timeout", "10m",
    "--profile", "standard", "--deployment-consent", "--policy", JSON.stringify({ allowedLanguages: ["JavaScript"] })
  ])
  await Promise.all([
    coordinator.line(/^ready /),
    worker.line(/^ready /),
    sessions.line(/^ready /)
  ])
}, 120_000)

afterAll(async () => {
  for (const child of [coordinator, worker, sessions]) child?.kill()
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  await server?.close()
  if (directory !== undefined) fs.rmSync(directory, { recursive: true, force: true })
}, 60_000)

const squareSource = `export const square = tool({
  description: "Square an integer.",
  guidelines: "Use to square an integer.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }: { value: number }) => value * value)
`

const tokenSource = `export const token = tool({ description: "Reads the profile's credential.", guidelines: "Use in tests." }, async () => process.env.SERVICE_TOKEN ?? null)
`

const startedSource = `export const started = tool({
  description: "Says that a slow call started.",
  guidelines: "Use in tests."
}, async () => "started")
`

const slowSource = `export const slow = tool({
  description: "Answers after a minute.",
  guidelines: "Use in tests."
}, async () => { await harness.callTool("started", {}); await new Promise((resolve) => setTimeout(resolve, 60_000)); return "slow" })
`

describe("jitbox coordinator, worker and sessions as processes", () => {
  it("each prints its ready line: the worker its id, the others what they serve", () => {
    expect(worker!.stdout().split("\n")[0]).toBe("ready w1")
    expect(coordinator!.stdout().split("\n")[0]).toBe(`ready coordinator ${namespace}`)
    expect(sessions!.stdout().split("\n")[0]).toBe(`ready sessions ${namespace}`)
  })

  it("a RemoteSession here creates a TypeScript tool in the session host and calls it: it runs on the worker", async () => {
    const session = new RemoteSession.RemoteSession(transport, "s1", { prefix, timeoutMs: 60_000 })
    expect(await session.createTool({ entrypoint: "square", language: "typescript", source: squareSource })).toMatchObject({ name: "square" })
    expect(await session.callTool("square", { value: 7 })).toBe(49)
    const line = await worker!.line(/^invocation .* tool=square /)
    expect(line).toMatch(/^invocation worker=w1 session=s1 tool=square call=\S+ outcome=ok$/)
    const profile = await session.profile("square")
    expect(profile.calls.map((call) => call.status)).toEqual(["completed"])
    expect(fs.existsSync(path.join(directory, "store", "s1.json"))).toBe(true)
  }, 120_000)

  it("--credential: the worker hands the profile's credential to the session's code; unset in its environment, exit 2", async () => {
    const session = new RemoteSession.RemoteSession(transport, "s1", { prefix, timeoutMs: 60_000 })
    await session.createTool({ entrypoint: "token", language: "typescript", source: tokenSource })
    expect(await session.callTool("token", {})).toBe("tok-cli")
    const unset = spawnCli(["worker", "--credential", "SERVICE_TOKEN"], { JITBOX_SERVER: server!.url, JITBOX_NAMESPACE: namespace, SERVICE_TOKEN: undefined })
    expect(await unset.exited()).toBe(2)
    expect(unset.stderr()).toContain("--credential SERVICE_TOKEN: this process's environment has no SERVICE_TOKEN to hand out")
  }, 120_000)

  it("the coordinator admits under the profile of its file and keeps the grant in the namespace's KV bucket", async () => {
    const client = await run(CoordinatorClient.make({ namespace: Ids.namespace(namespace) }))
    const ceiling = await Effect.runPromise(client.policy("standard"))
    expect([ceiling.allowedLanguages, ceiling.maximumInvocations]).toEqual([["JavaScript", "Python"], 100])
    const admitted = await Effect.runPromise(
      client.admit({ sessionId: Ids.sessionId("s9"), profile: "standard", policy: { allowedLanguages: ["JavaScript"] }, deploymentConsent: true })
    )
    expect(admitted.policy.allowedLanguages).toEqual(["JavaScript"])
    expect(admitted.lease.invocations).toBeGreaterThan(0)
    const unknown = await Effect.runPromise(Effect.flip(client.admit({ sessionId: Ids.sessionId("s9"), profile: "premium" })))
    expect(unknown).toMatchObject({ _tag: "AdmissionError", reason: "ProfileNotFound" })
    const stored = await Effect.runPromise(
      Effect.flatMap(Ledger.Ledger, (ledger) => ledger.get("session.s9")).pipe(
        Effect.provide(KvLedger.layer({ bucket: KvLedger.bucketOf(namespace) }).pipe(Layer.provide(NatsConnection.layer({ servers: server!.url }))))
      )
    )
    expect(stored?.value).toMatchObject({ sessionId: "s9", profile: "standard", consent: true })
    // s9 gives its slots back: the profile's other sessions need them
    await Effect.runPromise(client.release({ sessionId: Ids.sessionId("s9"), leaseId: admitted.lease.id, spent: { invocations: 0, tools: 0, repairs: 0 } }))
  }, 60_000)

  it("SIGTERM: the worker drains (the call past its grace fails Closed), each process exits 0 and leaves no process behind", async () => {
    const session = new RemoteSession.RemoteSession(transport, "s2", { prefix, timeoutMs: 60_000 })
    await session.createTool({ entrypoint: "started", language: "typescript", source: startedSource })
    await session.createTool({ entrypoint: "slow", language: "typescript", source: slowSource })
    const pending = session.callTool("slow", {}).then(() => undefined, (error: unknown) => error)
    await worker!.line(/^invocation .* session=s2 tool=started .*outcome=ok$/)
    const trees = { coordinator: descendants(coordinator!.child.pid!), worker: descendants(worker!.child.pid!), sessions: descendants(sessions!.child.pid!) }
    expect(trees.worker.length, "the worker runs the slow tool in a child process").toBeGreaterThan(1)

    worker!.child.kill("SIGTERM")
    expect(await pending).toMatchObject({ _tag: "TransportError", reason: "Closed" })
    expect(await worker!.exited()).toBe(0)
    expect(worker!.stdout()).toMatch(/^invocation worker=w1 session=s2 tool=slow call=\S+ outcome=cancelled$/m)
    expect(worker!.stdout().trimEnd().split("\n").at(-1)).toBe("stopped w1")

    coordinator!.child.kill("SIGTERM")
    sessions!.child.kill("SIGINT")
    expect(await coordinator!.exited()).toBe(0)
    expect(await sessions!.exited()).toBe(0)
    expect(coordinator!.stdout().trimEnd().split("\n").at(-1)).toBe(`stopped coordinator ${namespace}`)
    expect(sessions!.stdout().trimEnd().split("\n").at(-1)).toBe(`stopped sessions ${namespace}`)
    const all = [...trees.coordinator, ...trees.worker, ...trees.sessions]
    await waitUntil("every process of the three is gone", () => all.every((pid) => !alive(pid)), 10_000)
  }, 120_000)
})
