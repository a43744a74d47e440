/**
 * `jitbox catalog` as processes over a real nats-server (one for this file) whose authorization
 * is what `jitbox auth config` prints: harnesses publish and load through `KvCatalog` with the
 * session host's credentials, the operator reviews with the real CLI. A version published is
 * listed `proposed` and does not load; `approve` makes it load in another session, pinned;
 * `show` prints its entry, files and measurements; `revoke` stops new loads and reaches a watch.
 * The server refuses what a role may not do: a session host approving (by the API or the CLI),
 * an application reading the catalog.
 */
import { JitHarness, SharedCatalog } from "@jitbox/core"
import { Authorization, KvCatalog } from "@jitbox/nats"
import { NatsServer } from "@jitbox/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { codeTool } from "../../core/test/fixtures.js"
import { plain, spawnCli } from "./cliProcess.js"

const namespace = "cat1"
const users = ["sessions", "operator", "app"] as const
const passwords = Object.fromEntries(Authorization.principals({ namespace }).map((principal) => [principal.passwordVariable, `${principal.user}-secret`]))

let server: NatsServer.Handle | undefined
const opened: Array<{ close: () => Promise<void> }> = []
beforeAll(async () => {
  server = await NatsServer.start({ config: Authorization.config({ namespace, jetstream: true }), env: passwords })
}, 60_000)
afterAll(async () => {
  for (const handle of opened) await handle.close()
  await server?.close()
})

const credentials = (user: (typeof users)[number]) => ({ user, password: `${user}-secret`, inboxPrefix: `_INBOX_${user}` })

const catalogAs = async (user: (typeof users)[number], options: Partial<KvCatalog.KvCatalogOptions> = {}) => {
  const catalog = await KvCatalog.open({ namespace, ...options, connection: { servers: server!.url, ...credentials(user) } })
  opened.push(catalog)
  return catalog
}

/** `jitbox catalog <args>` as `user`: its exit code and output. */
const jitboxCatalog = async (args: ReadonlyArray<string>, user: (typeof users)[number] = "operator") => {
  const { password, inboxPrefix } = credentials(user)
  const child = spawnCli(["catalog", ...args], {
    JITBOX_SERVER: server!.url,
    JITBOX_NAMESPACE: namespace,
    JITBOX_USER: user,
    JITBOX_PASSWORD: password,
    JITBOX_INBOX_PREFIX: inboxPrefix
  })
  const code = await child.exited()
  return { code, stdout: plain(child.stdout()), stderr: plain(child.stderr()) }
}

const slugify = codeTool("slugify", "String(args.title).trim().toLowerCase().split(/\\s+/).join(\"-\")")

const rejection = (promise: Promise<unknown>) => promise.then(() => undefined, (cause: unknown) => cause)

describe("jitbox catalog", () => {
  it("a published version is listed proposed and does not load; approve makes it load elsewhere pinned; show prints it; revoke stops new loads and reaches a watch", async () => {
    const hostCatalog = await catalogAs("sessions")
    const writer = new JitHarness({ sessionId: "writer", catalog: hostCatalog, principal: "agent-writer" })
    await writer.createTool({ entrypoint: "slugify", source: slugify, examples: [{ input: { title: "Hello World" }, expected_output: "hello-world" }] })
    await writer.callTool("slugify", { title: "A B" })
    const published = await writer.publishTool("slugify")

    const listed = await jitboxCatalog(["ls"])
    expect(listed.code, listed.stderr).toBe(0)
    expect(listed.stdout).toMatch(new RegExp(`slugify\\s+${published.version_id}\\s+proposed\\s+\\S+\\s+agent-writer\\s+writer\\s+1\\s+0`))
    const reader = new JitHarness({ sessionId: "reader", catalog: await catalogAs("sessions"), principal: "agent-reader" })
    expect(await rejection(reader.loadFromCatalog("slugify", { version: published.version_id }))).toMatchObject({ reason: "NotApproved" })

    const approved = await jitboxCatalog(["approve", "slugify", published.version_id])
    expect(approved.code, approved.stderr).toBe(0)
    expect(approved.stdout).toMatch(new RegExp(`^slugify ${published.version_id}: approved by operator`))
    await reader.loadFromCatalog("slugify", { version: published.version_id })
    expect(await reader.callTool("slugify", { title: "Shared Tools" })).toBe("shared-tools")

    const shown = await jitboxCatalog(["show", "slugify"])
    expect(shown.code, shown.stderr).toBe(0)
    expect(shown.stdout).toContain(`slugify ${published.version_id}: approved by operator`)
    expect(shown.stdout).toContain("published: ")
    expect(shown.stdout).toContain("by agent-writer from session writer")
    expect(shown.stdout).toContain("measurements: 1 calls, 0 failures")
    expect(shown.stdout).toMatch(/index\.ts\s+\d+/)
    const json = await jitboxCatalog(["ls", "--name", "slugify", "--json"])
    expect(JSON.parse(json.stdout)).toEqual([{ ...published, status: "approved", reviewed: { by: "operator", at: expect.any(Number) } }])

    const revocations: Array<string> = []
    const stop = hostCatalog.watch((entry) => revocations.push(`${entry.name} ${entry.status}`))
    const revoked = await jitboxCatalog(["revoke", "slugify", published.version_id])
    expect(revoked.code, revoked.stderr).toBe(0)
    const late = new JitHarness({ sessionId: "late", catalog: await catalogAs("sessions") })
    expect(await rejection(late.loadFromCatalog("slugify", { version: published.version_id }))).toMatchObject({ reason: "Revoked" })
    expect(await rejection(late.loadFromCatalog("slugify"))).toMatchObject({ reason: "NotFound" })
    await expect.poll(() => revocations, { timeout: 10_000 }).toEqual(["slugify revoked"])
    stop()
    expect(await reader.callTool("slugify", { title: "Still Here" })).toBe("still-here")
    const again = await jitboxCatalog(["approve", "slugify", published.version_id])
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/CatalogError: Revoked/)
  }, 120_000)

  it("the server refuses a session host's approval (API and CLI) and an application's access to the catalog", async () => {
    const hostCatalog = await catalogAs("sessions")
    const writer = new JitHarness({ sessionId: "self", catalog: hostCatalog, principal: "agent-self" })
    await writer.createTool({ entrypoint: "slugify", source: codeTool("slugify", "String(args.title).toLowerCase().split(\" \").join(\"-\")"), examples: [{ input: { title: "A B" }, expected_output: "a-b" }] })
    const published = await writer.publishTool("slugify")
    const selfApproval = await rejection(hostCatalog.review("slugify", published.version_id, "approved", "sessions"))
    expect(selfApproval).toBeInstanceOf(SharedCatalog.CatalogError)
    expect(String((selfApproval as SharedCatalog.CatalogError).detail)).toMatch(/permission/i)
    const byCli = await jitboxCatalog(["approve", "slugify", published.version_id], "sessions")
    expect(byCli.code).toBe(1)
    expect(byCli.stderr).toMatch(/CatalogError/)
    expect((await hostCatalog.entry("slugify", published.version_id)).status).toBe("proposed")

    const application = await rejection(catalogAs("app").then((catalog) => catalog.entries()))
    expect(application).toMatchObject({ _tag: "CatalogError", reason: "NoCatalog" })
    const appLists = await jitboxCatalog(["ls"], "app")
    expect(appLists.code).toBe(1)
  }, 120_000)
})
