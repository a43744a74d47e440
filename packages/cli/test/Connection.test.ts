/**
 * The connection options every command shares, without a NATS server (`Cli.run` in this process,
 * the same parser and handlers as the binary): each command that connects names the credential,
 * TLS and inbox options and their environment variables in its help; options that do not go
 * together fail `ConfigError` naming the flags before anything connects; credentials in a
 * `--server` URL become a user and password (or a token) and leave the URL. A serving command
 * connecting without credentials to a server that is not this machine warns once on stderr; on
 * loopback, or with credentials, it does not.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { Connection } from "../src/index.js"
import { inProcess } from "./inProcess.js"


const failure = async (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<unknown> => {
  const { exit } = await inProcess(args, env)
  if (Exit.isSuccess(exit)) throw new Error(`jitbox ${args.join(" ")} succeeded`)
  return Option.getOrUndefined(Cause.failureOption(exit.cause))
}

const flags = ["--user", "--password", "--token", "--nkey", "--creds", "--tls-ca", "--tls-cert", "--tls-key", "--inbox-prefix", "--principal"]
const variables = ["JITBOX_USER", "JITBOX_PASSWORD", "JITBOX_TOKEN", "JITBOX_NKEY", "JITBOX_CREDS", "JITBOX_TLS_CA", "JITBOX_TLS_CERT", "JITBOX_TLS_KEY", "JITBOX_INBOX_PREFIX", "JITBOX_PRINCIPAL"]

describe("every command that connects takes the credential, TLS and inbox options", () => {
  it.each([
    ["coordinator"],
    ["worker"],
    ["sessions"],
    ["mcp"],
    ["status"],
    ["events", "tail"],
    ["snapshot", "inspect"],
    ["snapshot", "verify"],
    ["snapshot", "diff"],
    ["bench"]
  ])("jitbox %s --help names them and their environment variables", async (...command) => {
    const { exit, stdout } = await inProcess([...command, "--help"])
    expect(Exit.isSuccess(exit)).toBe(true)
    for (const name of [...flags, ...variables]) expect(stdout).toContain(name)
  })
})

// `status` fails before it connects (nothing listens on port 1 anyway)
const status = (...args: ReadonlyArray<string>) => ["status", "--server", "nats://127.0.0.1:1", ...args]

describe("options that do not go together fail ConfigError naming the flags", () => {
  it.each([
    [status("--token", "t", "--user", "u", "--password", "p"), {}, "--user", "--token"],
    [status("--password", "p"), {}, "--password", "--user"],
    [status("--user", "u"), {}, "--user", "--password"],
    [status("--tls-cert", "/tmp/cert.pem"), {}, "--tls-cert", "--tls-key"],
    [status("--tls-key", "/tmp/key.pem"), {}, "--tls-key", "--tls-cert"],
    [status("--nkey", "/tmp/user.nk", "--creds", "/tmp/user.creds"), {}, "--nkey", "--creds"],
    [status("--user", "u"), { JITBOX_TOKEN: "t", JITBOX_PASSWORD: "p" }, "--user", "--token"],
    [["status", "--server", "nats://u:p@127.0.0.1:1", "--token", "t"], {}, "--token", "credentials in --server"],
    [["status", "--server", "nats://a:p@127.0.0.1:1,nats://b:p@127.0.0.1:2"], {}, "--server", "different credentials"],
    [status("--inbox-prefix", "_INBOX.*"), {}, "--inbox-prefix", "no wildcards"],
    [status("--principal", "a.b"), {}, "--principal", "a principal"],
    [status(), { JITBOX_PRINCIPAL: "x y" }, "--principal", "a principal"],
    [["snapshot", "inspect", "--kv", "s1", "--server", "nats://127.0.0.1:1", "--token", "t", "--nkey", "/tmp/user.nk"], {}, "--token", "--nkey"]
  ])("jitbox %j with %j: ConfigError %s naming %s", async (args, env, option, named) => {
    const error = await failure(args, env)
    expect(error).toMatchObject({ _tag: "ConfigError", option })
    expect((error as Error).message).toContain(named)
  })
})

/** No security option given. */
const noSecurity = {
  creds: Option.none(),
  user: Option.none(),
  password: Option.none(),
  token: Option.none(),
  nkey: Option.none(),
  tlsCa: Option.none(),
  tlsCert: Option.none(),
  tlsKey: Option.none(),
  inboxPrefix: Option.none()
} as const

const options = (config: Partial<Connection.ConnectionConfig> & { readonly server: string }) =>
  Effect.runPromise(Connection.natsOptions({ ...noSecurity, ...config }, "test"))

describe("Connection.natsOptions", () => {
  it("takes a user and password, percent-decoded, out of the URLs", async () => {
    const made = await options({ server: "nats://al%40ice:p%3Ass@10.0.0.1:4222, nats://al%40ice:p%3Ass@10.0.0.2:4222" })
    expect(made).toMatchObject({ servers: ["nats://10.0.0.1:4222", "nats://10.0.0.2:4222"], user: "al@ice", password: "p:ss" })
  })

  it("takes a token out of a URL", async () => {
    expect(await options({ server: "nats://s3cret@10.0.0.1:4222" })).toMatchObject({ servers: ["nats://10.0.0.1:4222"], token: "s3cret", user: undefined })
  })

  it("hands the flags on: TLS files, an NKey seed file, an inbox prefix", async () => {
    const made = await options({
      server: "tls://nats.example.com:4222",
      tlsCa: Option.some("/ca.pem"),
      tlsCert: Option.some("/cert.pem"),
      tlsKey: Option.some("/key.pem"),
      nkey: Option.some("/user.nk"),
      inboxPrefix: Option.some("_INBOX_worker")
    })
    expect(made).toMatchObject({
      tls: { caFile: "/ca.pem", certFile: "/cert.pem", keyFile: "/key.pem" },
      nkeySeedFile: "/user.nk",
      inboxPrefix: "_INBOX_worker"
    })
  })

  it("a password is handed on, not printed", async () => {
    expect(await options({ server: "nats://127.0.0.1:4222", user: Option.some("u"), password: Option.some(Redacted.make("p")) })).toMatchObject({ user: "u", password: "p" })
  })
})

describe("the warning of a serving command without credentials", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.1.2.3", true],
    ["localhost", true],
    ["LOCALHOST", true],
    ["::1", true],
    ["[::1]", true],
    ["128.0.0.1", false],
    ["10.0.0.5", false],
    ["nats.example.com", false],
    ["localhost.example.com", false],
    ["::", false]
  ])("isLoopback(%s) is %s", (host, expected) => {
    expect(Connection.isLoopback(host)).toBe(expected)
  })

  it("is given for a server elsewhere without credentials, and names the README section", () => {
    const warning = Connection.unauthenticatedWarning({ servers: ["nats://127.0.0.1:4222", "nats://10.0.0.5:4222"] })
    expect(Option.getOrThrow(warning)).toMatch(/^jitbox: warning: connecting to nats:\/\/10\.0\.0\.5:4222 without credentials: .*trusts every client of the server.*"Deploying securely"/)
    expect(Option.getOrThrow(warning)).not.toContain("\n")
  })

  it.each([
    [{ servers: ["nats://127.0.0.1:4222", "localhost:4222", "nats://[::1]:4222"] }],
    [{ servers: "nats://10.0.0.5:4222", user: "u", password: "p" }],
    [{ servers: "nats://10.0.0.5:4222", token: "t" }],
    [{ servers: "nats://10.0.0.5:4222", nkeySeedFile: "/user.nk" }],
    [{ servers: "nats://10.0.0.5:4222", credentialsFile: "/user.creds" }],
    [{ servers: "nats://10.0.0.5:4222", tls: { certFile: "/cert.pem", keyFile: "/key.pem" } }]
  ])("is not given for %j", (given) => {
    expect(Option.isNone(Connection.unauthenticatedWarning(given))).toBe(true)
  })

  /** An address of this machine that is not loopback, else a name that resolves to nothing: either way not loopback. */
  const elsewhere = Object.values(os.networkInterfaces()).flat().find((address) => address !== undefined && address.family === "IPv4" && !address.internal)?.address ??
    "jitbox-test.invalid"

  it(`jitbox worker --server nats://${elsewhere}:1 prints the warning once on stderr, before it fails to connect`, async () => {
    const { exit, stderr } = await inProcess(["worker", "--server", `nats://${elsewhere}:1`])
    expect(Exit.isFailure(exit)).toBe(true)
    expect(stderr.split("\n").filter((line) => line.includes("without credentials"))).toEqual([
      `jitbox: warning: connecting to nats://${elsewhere}:1 without credentials: ${Connection.openServerWarning}`
    ])
  })

  const profiles = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-connection-")), "profiles.json")
  fs.writeFileSync(profiles, JSON.stringify({ profiles: [{ name: "standard" }] }))
  afterAll(() => fs.rmSync(path.dirname(profiles), { recursive: true, force: true }))

  it.each([
    [["coordinator", "--profiles", profiles]],
    [["sessions"]],
    [["mcp", "--session", "s1"]]
  ])(`jitbox %j warns too`, async (args) => {
    const { stderr } = await inProcess([...args, "--server", `nats://${elsewhere}:1`])
    expect(stderr).toContain("without credentials")
  })

  it.each([
    [["worker", "--server", "nats://127.0.0.1:1"], {}],
    [["worker", "--server", `nats://${elsewhere}:1`, "--token", "t"], {}],
    [["worker", "--server", `nats://${elsewhere}:1`], { JITBOX_USER: "u", JITBOX_PASSWORD: "p" }],
    [["worker", "--server", `nats://u:p@${elsewhere}:1`], {}],
    [["status", "--server", `nats://${elsewhere}:1`], {}]
  ])("jitbox %j with %j does not warn", async (args, env) => {
    const { exit, stderr } = await inProcess(args, env)
    expect(Exit.isFailure(exit)).toBe(true)
    expect(stderr).not.toContain("without credentials")
  })
})

describe("Connection.principalOf", () => {
  const none = noSecurity
  const principal = (config: Partial<Connection.SecurityConfig> & { readonly server?: string }) =>
    Effect.runPromise(Effect.either(Connection.principalOf({ ...none, ...config })))

  it("--principal, else the --user (or the user in --server), else default", async () => {
    expect(await principal({})).toMatchObject({ right: "default" })
    expect(await principal({ user: Option.some("sessions") })).toMatchObject({ right: "sessions" })
    expect(await principal({ server: "nats://sessions2:pw@127.0.0.1:4222" })).toMatchObject({ right: "sessions2" })
    expect(await principal({ user: Option.some("sessions"), principal: Option.some("hosts") })).toMatchObject({ right: "hosts" })
  })

  it("a principal that is not a subject token is a ConfigError naming --principal", async () => {
    expect(await principal({ principal: Option.some("a.b") })).toMatchObject({ left: { _tag: "ConfigError", option: "--principal" } })
    const fromUser = await principal({ user: Option.some("al@ice") })
    expect(fromUser).toMatchObject({ left: { _tag: "ConfigError", option: "--principal" } })
    expect(String((fromUser as { left: Error }).left.message)).toContain("give --principal")
  })
})
