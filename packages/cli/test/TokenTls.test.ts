/**
 * `jitbox events tail` (spawned from its sources) on a nats-server (one for this file) that asks
 * for a token and speaks TLS with a certificate of a CA made here with openssl: it connects with
 * `--token` or JITBOX_TOKEN, or the token in the URL (`nats://token@host:port`), trusting the
 * server through `--tls-ca` or JITBOX_TLS_CA; without the CA the server's certificate is refused,
 * and a wrong token is refused `PermissionDenied`, both with exit code 1.
 */
import { NatsServer } from "@jitbox/testing"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { plain, spawnCli } from "./cliProcess.js"

const token = "tok-0123456789-secret"
let server: NatsServer.Handle | undefined
let directory: string
let caFile: string

/** A CA, and a certificate it signs for 127.0.0.1 and localhost, in `directory`. */
const makeCertificates = (directory: string) => {
  const file = (name: string) => path.join(directory, name)
  const openssl = (...args: ReadonlyArray<string>) => execFileSync("openssl", args, { cwd: directory, stdio: "pipe" })
  openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=jitbox test CA", "-keyout", file("ca-key.pem"), "-out", file("ca.pem"))
  openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", file("server-key.pem"), "-out", file("server.csr"))
  fs.writeFileSync(file("server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
  openssl("x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca-key.pem"), "-CAcreateserial", "-days", "1", "-extfile", file("server.ext"), "-out", file("server.pem"))
  return { ca: file("ca.pem"), cert: file("server.pem"), key: file("server-key.pem") }
}

beforeAll(async () => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-cli-tls-"))
  const made = makeCertificates(directory)
  caFile = made.ca
  server = await NatsServer.start({
    config: `
      authorization { token: "${token}" }
      tls { cert_file: "${made.cert}", key_file: "${made.key}" }
    `
  })
}, 60_000)

afterAll(async () => {
  await server?.close()
  if (directory !== undefined) fs.rmSync(directory, { recursive: true, force: true })
})

/** Runs `jitbox events tail` for a moment: its exit code and stderr (exit 0 once it has connected and listened). */
const tail = async (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const child = spawnCli(["events", "tail", "--timeout", "300ms", ...args], env)
  const code = await child.exited()
  return { code, stderr: plain(child.stderr()) }
}

describe("jitbox on a nats-server with a token and TLS", () => {
  it("--token with --tls-ca connects", async () => {
    const { code, stderr } = await tail(["--server", server!.url, "--token", token, "--tls-ca", caFile])
    expect(code, stderr).toBe(0)
  }, 120_000)

  it("JITBOX_TOKEN and JITBOX_TLS_CA connect", async () => {
    const { code, stderr } = await tail(["--server", server!.url], { JITBOX_TOKEN: token, JITBOX_TLS_CA: caFile })
    expect(code, stderr).toBe(0)
  }, 120_000)

  it("the token in the URL connects", async () => {
    const { code, stderr } = await tail(["--server", server!.url.replace("nats://", `nats://${token}@`), "--tls-ca", caFile])
    expect(code, stderr).toBe(0)
  }, 120_000)

  it("without --tls-ca the server's certificate is not trusted: exit 1", async () => {
    const { code, stderr } = await tail(["--server", server!.url, "--token", token])
    expect(code).toBe(1)
    expect(stderr).toMatch(/^jitbox: TransportError: Connect: cannot connect to .*(certificate|TLS)/im)
  }, 120_000)

  it("a wrong token: PermissionDenied, exit 1, the token nowhere", async () => {
    const { code, stderr } = await tail(["--server", server!.url, "--token", "wrong-token", "--tls-ca", caFile])
    expect(code).toBe(1)
    expect(stderr).toContain("jitbox: TransportError: PermissionDenied")
    expect(stderr).not.toContain("wrong-token")
  }, 120_000)
})
