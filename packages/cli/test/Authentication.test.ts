/**
 * `jitbox` processes (spawned from their sources) on a nats-server that lets in only its users
 * (one for this file): `admin` with a password, `alice` with a password who may subscribe only to
 * `_INBOX_alice.>`, and a user known by the public key of an NKey generated here. A coordinator
 * serves as `admin` with `--user`/`--password` (and warns of nothing: it authenticates, and the
 * server is this machine); `jitbox status`, which needs the coordinator's answers, then gets in
 * with JITBOX_USER/JITBOX_PASSWORD, with `--nkey`, with credentials in the `--server` URL, and
 * with a `--password` that wins over a wrong JITBOX_PASSWORD. `alice` gets her replies only with
 * `--inbox-prefix _INBOX_alice`: without it the command fails `PermissionDenied`. A wrong
 * password exits 1 with the refusal on stderr, and the password nowhere.
 */
import { NatsServer } from "@jitbox/testing"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CliProcess, plain, spawnCli } from "./cliProcess.js"

/** nats.js's NKey functions, as @jitbox/nats (the one package that depends on nats.js) resolves them. */
const { nkeys } = createRequire(new URL("../../nats/package.json", import.meta.url))("@nats-io/transport-node") as {
  readonly nkeys: { readonly createUser: () => { readonly getSeed: () => Uint8Array; readonly getPublicKey: () => string } }
}

let server: NatsServer.Handle | undefined
let directory: string
let seedFile: string
let coordinator: CliProcess | undefined

beforeAll(async () => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-cli-auth-"))
  const user = nkeys.createUser()
  seedFile = path.join(directory, "user.nk")
  fs.writeFileSync(seedFile, `${new TextDecoder().decode(user.getSeed())}\n`, { mode: 0o600 })
  fs.writeFileSync(path.join(directory, "profiles.json"), JSON.stringify({ profiles: [{ name: "standard" }] }))
  server = await NatsServer.start({
    config: `
      authorization {
        users = [
          { user: admin, password: "admin-secret" }
          { user: alice, password: "alice-secret", permissions: { publish: ">", subscribe: "_INBOX_alice.>" } }
          { nkey: ${user.getPublicKey()} }
        ]
      }
    `
  })
  coordinator = spawnCli(["coordinator", "--server", server.url, "--user", "admin", "--password", "admin-secret", "--profiles", path.join(directory, "profiles.json")])
  await coordinator.line(/^ready coordinator default/, 120_000)
}, 150_000)

afterAll(async () => {
  coordinator?.kill()
  await server?.close()
  if (directory !== undefined) fs.rmSync(directory, { recursive: true, force: true })
})

/** Runs `jitbox status` to the end: its exit code and output. */
const status = async (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const child = spawnCli(["status", "--timeout", "5s", ...args], env)
  const code = await child.exited()
  return { code, stdout: plain(child.stdout()), stderr: plain(child.stderr()) }
}

describe("jitbox on a nats-server with users", () => {
  it("a coordinator serves with --user and --password, and warns of nothing", () => {
    expect(plain(coordinator!.stderr())).not.toContain("warning")
  })

  it("JITBOX_USER and JITBOX_PASSWORD: status connects and sees the coordinator", async () => {
    const { code, stdout, stderr } = await status(["--server", server!.url], { JITBOX_USER: "admin", JITBOX_PASSWORD: "admin-secret" })
    expect(code, stderr).toBe(0)
    expect(stdout).toContain("coordinator: answering")
  }, 120_000)

  it("--nkey: a file holding an NKey seed", async () => {
    const { code, stderr } = await status(["--server", server!.url, "--nkey", seedFile])
    expect(code, stderr).toBe(0)
  }, 120_000)

  it("nats://user:password@host:port in --server", async () => {
    const { code, stderr } = await status(["--server", server!.url.replace("nats://", "nats://admin:admin-secret@")])
    expect(code, stderr).toBe(0)
  }, 120_000)

  it("--password wins over JITBOX_PASSWORD", async () => {
    const { code, stderr } = await status(["--server", server!.url, "--user", "admin", "--password", "admin-secret"], { JITBOX_PASSWORD: "wrong" })
    expect(code, stderr).toBe(0)
  }, 120_000)

  it("a user who may subscribe only to _INBOX_alice.>: PermissionDenied without --inbox-prefix, answers with it", async () => {
    const env = { JITBOX_USER: "alice", JITBOX_PASSWORD: "alice-secret" }
    const refused = await status(["--server", server!.url], env)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/^jitbox: TransportError: PermissionDenied .*_INBOX\./m)
    const answered = await status(["--server", server!.url, "--inbox-prefix", "_INBOX_alice"], env)
    expect(answered.code, answered.stderr).toBe(0)
    expect(answered.stdout).toContain("coordinator: answering")
  }, 180_000)

  it("a wrong password: exit 1, the refusal on stderr, the password nowhere", async () => {
    const { code, stdout, stderr } = await status(["--server", server!.url, "--user", "admin", "--password", "not-the-password"])
    expect(code).toBe(1)
    expect(stderr).toContain(`jitbox: TransportError: PermissionDenied: cannot connect to ${server!.url}: AuthorizationError: Authorization Violation`)
    expect(`${stdout}${stderr}`).not.toContain("not-the-password")
  }, 120_000)
})
