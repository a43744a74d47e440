/**
 * The security suite: a namespace run from the README's deployment block ("Deploying securely"),
 * read from the README and run as written (the server's address, the passwords and two paths are
 * the test's own): one nats-server whose authorization is what its `jitbox auth config` prints
 * (passwords in environment variables), and a real `jitbox` process per principal: the coordinator, a worker of pool
 * `default` and a session host (`sessions`), each with its own user and inbox prefix; a second
 * session host principal (`sessions2`) has a user but no process. The victim is an application
 * (`connect`, user `app`) whose session, hosted by `sessions`, runs a JavaScript tool on the worker.
 *
 * The session host opens the namespace's shared tool catalog as it starts (with its permissions,
 * which let it publish but not approve).
 *
 * Each test is one attack a principal's credential could make on a namespace before the wire
 * had authority: it asserts the refusal (by the server's permissions or by the runtime's
 * capabilities) and that the victim's session keeps working.
 */
import { JitHarnessSnapshot } from "@jitbox/core"
import { connect as connectJitbox } from "@jitbox/nats"
import { NatsServer } from "@jitbox/testing"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { counterJs, waitJs } from "./fixtures/tools.js"
import { type CliProcess, plain, spawnCli } from "./cliProcess.js"

/** nats.js, as @jitbox/nats (the one package that depends on it) resolves it: the attacker's client. */
interface NatsConnection {
  readonly subscribe: (
    subject: string,
    options: { readonly queue?: string; readonly callback: (error: Error | null, message: { readonly subject: string; readonly data: Uint8Array }) => void }
  ) => { readonly unsubscribe: () => void }
  readonly publish: (subject: string, data: Uint8Array) => void
  readonly request: (subject: string, data: Uint8Array, options: { readonly timeout: number }) => Promise<{ readonly data: Uint8Array }>
  readonly flush: () => Promise<void>
  readonly close: () => Promise<void>
  readonly status: () => AsyncIterable<{ readonly type: string; readonly error?: Error }>
}
const { connect } = createRequire(new URL("../../nats/package.json", import.meta.url))("@nats-io/transport-node") as {
  readonly connect: (options: Record<string, unknown>) => Promise<NatsConnection>
}

/** The README's deployment block ("The principals, and what a stolen credential reaches"), as written. */
const block = (() => {
  const readme = fs.readFileSync(new URL("../../../README.md", import.meta.url), "utf8")
  const start = readme.indexOf("# the operator, once:")
  return readme.slice(start, readme.indexOf("```", start)).replace(/\\\n\s*/g, " ")
})()

/** A shell line's words: quotes removed, a `> file` redirection left out. */
const words = (line: string): Array<string> => {
  const found: Array<string> = []
  for (const match of line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)) found.push(match[1] ?? match[2] ?? match[3]!)
  const redirect = found.indexOf(">")
  return redirect === -1 ? found : found.slice(0, redirect)
}

/** Each `jitbox` command of the block, by its subcommand (`auth`, `coordinator`, …), without `jitbox`. */
const commands = new Map(block.split("\n").filter((line) => line.startsWith("jitbox ")).map((line) => {
  const argv = words(line).slice(1)
  return [argv[0]!, argv] as const
}))
/** The variables the block exports: the namespace, and a password per principal (the test's own values). */
const namespace = /JITBOX_NAMESPACE=(\S+)/.exec(block)![1]!
const passwordVariables = [...block.matchAll(/(JITBOX_PASSWORD_[A-Z0-9_]+)=/g)].map((match) => match[1]!)
const environment: Record<string, string> = Object.fromEntries(passwordVariables.map((name) => [name, `${name.toLowerCase()}-secret`]))
const p = `jitbox.${namespace}`
const variable = (user: string) => `JITBOX_PASSWORD_${user.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`
const passwordOf = (user: string): string => environment[variable(user)]!

/** A command of the block with the test's server, passwords and directories in place of the README's. */
const asWritten = (name: string): ReadonlyArray<string> =>
  commands.get(name)!.map((word) =>
    word.startsWith("$") ? environment[word.slice(1)]! :
    word === "/etc/jitbox/profiles.json" ? path.join(directory, "profiles.json") :
    word === "/var/lib/jitbox/sessions" ? path.join(directory, "store") :
    word
  )

let server: NatsServer.Handle | undefined
let directory: string
const processes: Array<CliProcess> = []
let victim: Awaited<ReturnType<typeof connectJitbox>> | undefined


beforeAll(async () => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-security-"))
  fs.writeFileSync(path.join(directory, "profiles.json"), JSON.stringify({
    profiles: [
      { name: "standard", policy: { allowedLanguages: ["JavaScript"] } },
      { name: "billing", credentialName: "BILLING_TOKEN", principals: ["sessions2"], policy: { allowedLanguages: ["JavaScript"] } }
    ]
  }))
  expect([...commands.keys()]).toEqual(["auth", "coordinator", "worker", "sessions", "status"])
  const printer = spawnCli(asWritten("auth"))
  expect(await printer.exited(), printer.stderr()).toBe(0)
  server = await NatsServer.start({ config: printer.stdout(), env: environment })
  const exported = { JITBOX_SERVER: server.url, JITBOX_NAMESPACE: namespace }
  const coordinator = spawnCli(asWritten("coordinator"), exported)
  const worker = spawnCli(asWritten("worker"), exported)
  const sessions = spawnCli(asWritten("sessions"), exported)
  processes.push(coordinator, worker, sessions)
  await coordinator.line(/^ready coordinator/, 120_000)
  await Promise.all([worker.line(/^ready worker/, 120_000), sessions.line(/^ready sessions/, 120_000)])
  victim = await connectJitbox({ servers: server.url, namespace, user: "app", password: passwordOf("app"), inboxPrefix: "_INBOX_app" })
  const session = victim.session("victim")
  await session.createTool({ entrypoint: "counter", language: "javascript", source: counterJs })
  await session.createTool({ entrypoint: "wait", language: "javascript", source: waitJs })
}, 240_000)

afterAll(async () => {
  await victim?.close()
  for (const process of processes) process.kill()
  await server?.close()
  if (directory !== undefined) fs.rmSync(directory, { recursive: true, force: true })
})

/** A raw connection with `user`'s credentials, as an attacker holding them would make. */
const attacker = async (user: string): Promise<{ nc: NatsConnection; refusals: Array<string> }> => {
  const nc = await connect({ servers: server!.url, user, pass: passwordOf(user), inboxPrefix: `_INBOX_${user}` })
  const refusals: Array<string> = []
  void (async () => {
    for await (const status of nc.status()) if (status.type === "error") refusals.push(String(status.error?.message ?? ""))
  })()
  return { nc, refusals }
}

/** Publishes `value` to `subject` as each of `users`, and expects the server to refuse each. */
const refusedWrites = async (users: ReadonlyArray<string>, subject: string, value: Uint8Array) => {
  for (const user of users) {
    const { nc, refusals } = await attacker(user)
    nc.publish(subject, value)
    await nc.flush()
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(refusals.some((refusal) => refusal.includes(`Publish to "${subject}"`)), `${user}: ${refusals.join("; ")}`).toBe(true)
    await nc.close()
  }
}

/** Subscribes `subject` (optionally in `queue`) and answers what the server said of it. */
const trySubscribe = async (nc: NatsConnection, subject: string, queue?: string): Promise<string> =>
  new Promise((resolve) => {
    const sub = nc.subscribe(subject, {
      ...(queue === undefined ? {} : { queue }),
      callback: (error, message) => resolve(error !== null ? `refused: ${error.message}` : `received: ${message.subject}`)
    })
    void nc.flush().then(() => setTimeout(() => {
      sub.unsubscribe()
      resolve("nothing")
    }, 1_500))
  })

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value))
const decode = (data: Uint8Array) => JSON.parse(new TextDecoder().decode(data)) as { kind: string; value?: unknown; error?: { _tag: string; reason?: string } }
const session = () => victim!.session("victim")

/** The victim keeps working: a call of its code tool on the worker answers. */
const victimWorks = async () => expect(typeof (await session().callTool("counter", {}))).toBe("number")

describe("a namespace run with the authorization of `jitbox auth config`", () => {
  it("worker: a plain (non-queue) subscription to the invocations, or another queue group, is refused; a call still runs", async () => {
    const { nc } = await attacker("worker-default")
    const calling = session().callTool("counter", {})
    expect(await trySubscribe(nc, `${p}.worker.*.*.invoke`)).toMatch(/^refused: Permissions Violation/)
    expect(await trySubscribe(nc, `${p}.worker.default.javascript.invoke`, "eavesdroppers")).toMatch(/^refused: Permissions Violation/)
    expect(typeof await calling).toBe("number")
    await nc.close()
  }, 60_000)

  it("worker: a package fetch with a version id but not its capability gets no source", async () => {
    const { nc } = await attacker("worker-default")
    const record = (await session().snapshot()).tools.find((tool) => tool.name === "counter")!
    const reply = decode((await nc.request(`${p}.session.victim.package`, encode({
      v: 2,
      kind: "package",
      version_id: JitHarnessSnapshot.codeVersionId(record),
      chunk: 0,
      capability: "AAAAAAAAAAAAAAAAAAAAAA"
    }), { timeout: 10_000 })).data)
    expect(reply.kind).toBe("error")
    expect(reply.error?._tag).toBe("TransportError")
    expect(reply.error?.reason).toBe("InvalidArgument")
    await victimWorks()
    await nc.close()
  }, 60_000)

  it("worker: a nested update_tool or create_tool naming the victim's running call is refused and stores nothing", async () => {
    const { nc } = await attacker("worker-default")
    const before = await session().snapshot()
    const running = session().callTool("wait", { ms: 2_000 }, { callId: "victim_running" })
    await new Promise((resolve) => setTimeout(resolve, 500))
    for (const [name, args] of [["update_tool", { name: "counter", source: waitJs }], ["create_tool", { entrypoint: "wait2", language: "javascript", source: waitJs }]] as const) {
      const reply = decode((await nc.request(`${p}.session.victim.nested`, encode({
        v: 2,
        kind: "nested",
        parent_call_id: "victim_running",
        capability: "AAAAAAAAAAAAAAAAAAAAAA",
        name,
        args
      }), { timeout: 10_000 })).data)
      expect(reply.error?._tag, JSON.stringify(reply)).toBe("ToolRejected")
      expect(reply.error?.reason).toBe("NoActiveInvocation")
    }
    expect(await running).toBe("waited")
    expect(await session().snapshot()).toEqual(before)
    await nc.close()
  }, 60_000)

  it("application: another principal's replies (_INBOX_sessions.>), every session's subjects and serving a session's call are refused", async () => {
    const { nc } = await attacker("app")
    expect(await trySubscribe(nc, "_INBOX_sessions.>")).toMatch(/^refused: Permissions Violation/)
    expect(await trySubscribe(nc, "_INBOX.>")).toMatch(/^refused: Permissions Violation/)
    expect(await trySubscribe(nc, `${p}.session.*.*`)).toMatch(/^refused: Permissions Violation/)
    expect(await trySubscribe(nc, `${p}.session.victim.call`)).toMatch(/^refused: Permissions Violation/)
    await victimWorks()
    await nc.close()
  }, 60_000)

  it("application: a call sent again with its call_id runs once (DuplicateCall)", async () => {
    const { nc } = await attacker("app")
    const call = encode({ v: 2, kind: "call", name: "counter", call_id: "replayed_1", args: {} })
    const first = decode((await nc.request(`${p}.session.victim.call`, call, { timeout: 10_000 })).data)
    expect(first.kind).toBe("ok")
    const again = decode((await nc.request(`${p}.session.victim.call`, call, { timeout: 10_000 })).data)
    expect(again.error?.reason, JSON.stringify(again)).toBe("DuplicateCall")
    expect(await session().callTool("counter", {})).toBe((first.value as number) + 1)
    await nc.close()
  }, 60_000)

  it("application: publishing a cancel to the workers, a forged event, or any coordinator operation is refused by the server", async () => {
    const { nc, refusals } = await attacker("app")
    const observer = await attacker("observer")
    const forged: Array<string> = []
    observer.nc.subscribe(`${p}.events.>`, { callback: (_error, message) => forged.push(new TextDecoder().decode(message.data)) })
    await observer.nc.flush()
    nc.publish(`${p}.workers.cancel`, encode({ v: 2, kind: "cancel", session_id: "victim", call_id: "x", capability: "AAAAAAAAAAAAAAAAAAAAAA" }))
    nc.publish(`${p}.events.victim`, encode({ v: 2, kind: "events", events: [{ type: "CUSTOM", name: "jit_tool_completed", payload: { forged: true } }] }))
    for (const op of ["admit", "renew", "release", "verify"]) {
      nc.publish(`${p}.coordinator.app.${op}`, encode({ v: 2, kind: op, session_id: "victim" }))
      nc.publish(`${p}.coordinator.sessions.${op}`, encode({ v: 2, kind: op, session_id: "victim" }))
    }
    await nc.flush()
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    for (const subject of ["workers.cancel", "events.victim", "coordinator.app.admit", "coordinator.app.release", "coordinator.sessions.admit", "coordinator.sessions.release"]) {
      expect(refusals.some((refusal) => refusal.includes(`Publish to "${p}.${subject}"`)), `${subject}: ${refusals.join("; ")}`).toBe(true)
    }
    expect(forged.filter((text) => text.includes("forged"))).toEqual([])
    await victimWorks()
    await nc.close()
    await observer.nc.close()
  }, 60_000)

  it("another session host: asking as the victim's host is refused by the server; admit, renew and release of the victim's session as itself are refused NotOwner", async () => {
    const { nc, refusals } = await attacker("sessions2")
    for (const op of ["admit", "release"]) nc.publish(`${p}.coordinator.sessions.${op}`, encode({ v: 2, kind: op, session_id: "victim" }))
    await nc.flush()
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    for (const op of ["admit", "release"]) {
      expect(refusals.some((refusal) => refusal.includes(`Publish to "${p}.coordinator.sessions.${op}"`)), `${op}: ${refusals.join("; ")}`).toBe(true)
    }
    const ask = async (op: string, payload: Record<string, unknown>) =>
      decode((await nc.request(`${p}.coordinator.sessions2.${op}`, encode({ v: 2, kind: op, ...payload }), { timeout: 10_000 })).data)
    const admitted = await ask("admit", { session_id: "victim", profile: "standard", policy: { allowedLanguages: ["JavaScript"] }, deployment_consent: true })
    expect(admitted.error?._tag, JSON.stringify(admitted)).toBe("AdmissionError")
    expect(admitted.error?.reason).toBe("NotOwner")
    const released = await ask("release", { session_id: "victim", lease_id: "lease_guess_0", spent: { invocations: 0, tools: 0, repairs: 0 } })
    expect(released.error?.reason, JSON.stringify(released)).toBe("NotOwner")
    const renewed = await ask("renew", { session_id: "victim", lease_id: "lease_guess_0", more: true })
    expect(renewed.error?.reason, JSON.stringify(renewed)).toBe("NotOwner")
    // its own subjects work for what any principal may ask
    const policy = await ask("policy", { profile: "standard" })
    expect(policy.kind, JSON.stringify(policy)).toBe("ok")
    await victimWorks()
    await nc.close()
  }, 60_000)

  it("a session host's word: releasing a lease claiming nothing spent is charged what the workers ran, neither refilled nor charged whole", async () => {
    const spender = victim!.session("spender")
    await spender.createTool({ entrypoint: "counter", language: "javascript", source: counterJs })
    for (let i = 0; i < 3; i++) await spender.callTool("counter", {})
    const operator = await attacker("operator")
    const spentOf = async () => {
      const reply = decode((await operator.nc.request(`${p}.coordinator.operator.leases`, encode({ v: 2, kind: "leases" }), { timeout: 10_000 })).data)
      const sessions = (reply.value as { sessions: Array<{ sessionId: string; spent: { invocations: number; tools: number } }> }).sessions
      return sessions.find((entry) => entry.sessionId === "spender")?.spent
    }
    // the worker tells the coordinator what it ran every second
    for (let i = 0; i < 100 && (await spentOf())?.invocations !== 3; i++) await new Promise((resolve) => setTimeout(resolve, 100))
    expect(await spentOf()).toEqual({ invocations: 3, tools: 1, repairs: 0 })
    // the host's own credential, stolen: admit the session again, then release claiming nothing
    const { nc } = await attacker("sessions")
    const ask = async (op: string, payload: Record<string, unknown>) =>
      decode((await nc.request(`${p}.coordinator.sessions.${op}`, encode({ v: 2, kind: op, ...payload }), { timeout: 10_000 })).data)
    const admitted = await ask("admit", { session_id: "spender", profile: "standard", policy: { allowedLanguages: ["JavaScript"] }, deployment_consent: true })
    expect(admitted.kind, JSON.stringify(admitted)).toBe("ok")
    const lease = (admitted.value as { lease: { id: string } }).lease
    const released = await ask("release", { session_id: "spender", lease_id: lease.id, spent: { invocations: 0, tools: 0, repairs: 0 } })
    expect(released.kind, JSON.stringify(released)).toBe("ok")
    expect(await spentOf()).toEqual({ invocations: 3, tools: 1, repairs: 0 })
    await victimWorks()
    await nc.close()
    await operator.nc.close()
  }, 60_000)

  it("a session host a credential profile does not list: admitting under it is refused NotAllowed, so its credential never reaches that host's code", async () => {
    const { nc } = await attacker("sessions")
    const ask = async (op: string, payload: Record<string, unknown>) =>
      decode((await nc.request(`${p}.coordinator.sessions.${op}`, encode({ v: 2, kind: op, ...payload }), { timeout: 10_000 })).data)
    const refused = await ask("admit", { session_id: "mine", profile: "billing", deployment_consent: true })
    expect(refused.error?._tag, JSON.stringify(refused)).toBe("AdmissionError")
    expect(refused.error?.reason).toBe("NotAllowed")
    // the principal it lists is admitted
    const listed = await attacker("sessions2")
    const admitted = decode((await listed.nc.request(`${p}.coordinator.sessions2.admit`, encode({ v: 2, kind: "admit", session_id: "billed", profile: "billing", deployment_consent: true }), { timeout: 10_000 })).data)
    expect(admitted.kind, JSON.stringify(admitted)).toBe("ok")
    await victimWorks()
    await nc.close()
    await listed.nc.close()
  }, 60_000)

  it("worker, application, observer: writing a claim on a session (garbage, or a squatting owner) into the claims bucket is refused by the server", async () => {
    await refusedWrites(["worker-default", "app", "observer"], `$KV.jitbox-owners-${namespace}.session.victim`, encode({ v: 1, owner: "squatter", expiresAt: 8.64e15 }))
    await victimWorks()
  }, 60_000)

  it("worker, session host, application: writing a lease into the coordinator's ledger bucket is refused by the server", async () => {
    await refusedWrites(["worker-default", "sessions", "app"], `$KV.jitbox-ledger-${namespace}.session.victim`, encode({ format: 2, principal: "sessions", sessionId: "victim", lease: { id: "lease_forged" } }))
    await victimWorks()
  }, 60_000)

  it("session host, worker, application, observer: approving a catalog version (writing its review) is refused by the server; a worker, an application or an observer cannot publish an entry or a package", async () => {
    const bucket = `jitbox-catalog-${namespace}`
    const versionId = "v_0123456789abcdef0123"
    await refusedWrites(["sessions", "worker-default", "app", "observer"], `$KV.${bucket}.review.forged.${versionId}`, encode({ status: "approved", by: "operator", at: 1, entry_sha256: "0".repeat(64) }))
    await refusedWrites(["worker-default", "app", "observer"], `$KV.${bucket}.entry.forged.${versionId}`, encode({ name: "forged" }))
    await refusedWrites(["worker-default", "app", "observer"], `$KV.${bucket}.pkg.${versionId}`, encode({ files: {} }))
    await victimWorks()
  }, 60_000)

  it("anyone: a connection without a user, or with a wrong password, is refused", async () => {
    await expect(connect({ servers: server!.url })).rejects.toThrow(/Authorization Violation/i)
    await expect(connect({ servers: server!.url, user: "worker-default", pass: "guess" })).rejects.toThrow(/Authorization Violation/i)
  }, 60_000)

  it("operator: jitbox catalog ls reads the catalog the session host created as it started (the operator may not create it)", async () => {
    const { password, inboxPrefix } = { password: passwordOf("operator"), inboxPrefix: "_INBOX_operator" }
    const ls = spawnCli(["catalog", "ls", "--user", "operator", "--inbox-prefix", inboxPrefix], { JITBOX_SERVER: server!.url, JITBOX_NAMESPACE: namespace, JITBOX_PASSWORD: password })
    expect(await ls.exited(), plain(ls.stderr())).toBe(0)
    expect(plain(ls.stdout())).toContain("no published tools")
  }, 120_000)

  it("operator: jitbox status runs with the operator's permissions", async () => {
    const status = spawnCli([...asWritten("status"), "--timeout", "5s"], { JITBOX_SERVER: server!.url, JITBOX_NAMESPACE: namespace })
    const code = await status.exited()
    expect(code, plain(status.stderr())).toBe(0)
    expect(plain(status.stdout())).toContain("coordinator: answering")
  }, 120_000)
})
