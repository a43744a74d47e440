/**
 * `--otlp` of the serving commands, as processes over a real nats-server exporting to a local
 * OTLP/HTTP receiver (the real exporters; the receiver decodes what they post with a schema):
 * a coordinator, `jitbox worker --otlp URL` and `jitbox sessions` with OTEL_EXPORTER_OTLP_ENDPOINT,
 * and a RemoteSession here calling a JavaScript tool that composes another. After SIGTERM the
 * receiver holds one trace across both services (execute_tool outer → invoke outer → execute_tool
 * inner → invoke inner) and their metrics. `jitbox mcp --otlp` with a local session, called by the
 * official MCP client, exports its composed call as one trace of `jitbox-mcp`. A worker without the option resolves no module of
 * OpenTelemetry (a module hook records what each worker resolves), while the one with it does.
 * A bad endpoint or export interval fails `ConfigError` before the command connects.
 */
import { NodeContext } from "@effect/platform-node"
import { NatsConnection, NatsTransport } from "@jitbox/nats"
import { Ids, RemoteSession, Subject } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import * as Cause from "effect/Cause"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Receiver, type ReceivedSpan, receiver } from "../../otel/test/fixtures/otlpReceiver.js"
import { Cli } from "../src/index.js"
import { type CliProcess, plain, spawnCli, waitUntil } from "./cliProcess.js"

const recordImports = fileURLToPath(new URL("./fixtures/recordImports.mjs", import.meta.url))
const namespace = `otlp_${Math.random().toString(36).slice(2, 8)}`
const prefix = Subject.prefix(Ids.namespace(namespace))
const profileFile = { profiles: [{ name: "standard", policy: { allowedLanguages: ["JavaScript"], maximumInvocations: 100 } }] }

const innerSource = `export const inner = tool({
  description: "Doubles a number.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }) => value * 2)
`

const outerSource = `export const outer = tool({
  description: "Doubles a number with inner and adds one.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }) => (await harness.callTool("inner", { value })) + 1)
`

let server: NatsServer.Handle | undefined
let directory: string
let scope: Scope.CloseableScope | undefined
let otlp: Receiver
const serving: Array<CliProcess> = []

beforeAll(async () => {
  server = await NatsServer.start()
  directory = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-cli-otlp-"))
  fs.writeFileSync(path.join(directory, "profiles.json"), JSON.stringify(profileFile))
  scope = Effect.runSync(Scope.make())
  otlp = await Effect.runPromise(receiver.pipe(Scope.extend(scope)))
}, 60_000)

afterAll(async () => {
  for (const child of serving) child.kill()
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  await server?.close()
  if (directory !== undefined) fs.rmSync(directory, { recursive: true, force: true })
}, 60_000)

const one = (spans: ReadonlyArray<ReceivedSpan>, name: string, service: string): ReceivedSpan => {
  const found = spans.filter((span) => span.name === name && span.service === service)
  expect(found.map((span) => [span.service, span.name]), JSON.stringify(spans.map((s) => [s.service, s.name]))).toEqual([[service, name]])
  return found[0]!
}

const importsOf = (file: string): Array<string> => fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter((line) => line !== "") : []

describe("jitbox worker and sessions with --otlp", () => {
  it("a composed call across the session host and the worker is one trace of both services; metrics arrive; spans are flushed on SIGTERM", async () => {
    const env = { JITBOX_SERVER: server!.url, JITBOX_NAMESPACE: namespace, OTEL_EXPORTER_OTLP_ENDPOINT: undefined, OTEL_METRIC_EXPORT_INTERVAL: "500" }
    const hooked = (log: string) => ({ NODE_OPTIONS: `--import=${recordImports}`, JITBOX_IMPORT_LOG: path.join(directory, log) })
    const coordinator = spawnCli(["coordinator", "--profiles", path.join(directory, "profiles.json")], env)
    const worker = spawnCli(["worker", "--id", "w1", "--languages", "javascript", "--otlp", otlp.url], { ...env, ...hooked("worker.log") })
    const sessions = spawnCli(
      ["sessions", "--profile", "standard", "--deployment-consent", "--policy", JSON.stringify({ allowedLanguages: ["JavaScript"] })],
      { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: `${otlp.url}/` }
    )
    // another namespace, so it takes none of the calls
    const plainWorker = spawnCli(["worker", "--id", "w2", "--languages", "javascript"], { ...env, JITBOX_NAMESPACE: `${namespace}_plain`, ...hooked("plain.log") })
    serving.push(coordinator, worker, sessions, plainWorker)
    await Promise.all(serving.map((child) => child.line(/^ready /)))

    const sessionScope = Effect.runSync(Scope.make())
    try {
      const transport = await Effect.runPromise(Effect.map(NatsConnection.make({ servers: server!.url }), NatsTransport.fromConnection).pipe(Scope.extend(sessionScope)))
      const session = new RemoteSession.RemoteSession(transport, "s1", { prefix, timeoutMs: 60_000 })
      await session.createTool({ entrypoint: "inner", language: "javascript", source: innerSource })
      await session.createTool({ entrypoint: "outer", language: "javascript", source: outerSource })
      expect(await session.callTool("outer", { value: 20 })).toBe(41)
      // exported while the session is hosted, with invocations left on its lease
      await waitUntil("the lease gauge arrived", () =>
        otlp.points.some((p) => p.service === "jitbox-sessions" && p.name === "jitbox.lease.invocations_left" && p.attributes["jitbox.session.id"] === "s1" && p.value > 0), 20_000)
    } finally {
      await Effect.runPromise(Scope.close(sessionScope, Exit.void))
    }

    for (const child of [worker, sessions, plainWorker]) child.child.kill("SIGTERM")
    expect(await Promise.all([worker.exited(), sessions.exited(), plainWorker.exited()])).toEqual([0, 0, 0])
    coordinator.child.kill("SIGTERM")
    expect(await coordinator.exited()).toBe(0)

    // exported before each process exited; the receiver may still be reading the last request
    const names = ["execute_tool outer", "invoke outer", "execute_tool inner", "invoke inner"]
    await waitUntil("the spans arrived", () => names.every((name) => otlp.spans.some((span) => span.name === name)), 10_000)
    await waitUntil("both services' metrics arrived", () =>
      otlp.points.some((p) => p.service === "jitbox-worker" && p.name === "jitbox.worker.capacity") &&
      otlp.points.some((p) => p.service === "jitbox-sessions" && p.name === "jitbox.calls"), 10_000)
    expect(otlp.refused).toEqual([])

    const outer = one(otlp.spans, "execute_tool outer", "jitbox-sessions")
    const invokeOuter = one(otlp.spans, "invoke outer", "jitbox-worker")
    const inner = one(otlp.spans, "execute_tool inner", "jitbox-sessions")
    const invokeInner = one(otlp.spans, "invoke inner", "jitbox-worker")
    expect([invokeOuter.traceId, inner.traceId, invokeInner.traceId]).toEqual([outer.traceId, outer.traceId, outer.traceId])
    expect(outer.parentSpanId).toBeUndefined()
    expect(invokeOuter.parentSpanId).toBe(outer.spanId)
    expect(inner.parentSpanId).toBe(invokeOuter.spanId)
    expect(invokeInner.parentSpanId).toBe(inner.spanId)
    expect(inner.attributes).toMatchObject({ "jitbox.session.id": "s1", "jitbox.call.depth": 2, "jitbox.call.status": "completed" })
    expect(invokeInner.attributes).toMatchObject({ "jitbox.worker.id": "w1", "jitbox.invocation.outcome": "ok" })

    const calls = otlp.points.filter((p) => p.service === "jitbox-sessions" && p.name === "jitbox.calls" && p.attributes["gen_ai.tool.name"] === "outer")
    expect(Math.max(0, ...calls.map((p) => p.value))).toBe(1)
    const capacity = otlp.points.filter((p) => p.service === "jitbox-worker" && p.name === "jitbox.worker.capacity")
    expect(capacity.every((p) => p.attributes["jitbox.worker.id"] === "w1" && p.value > 0)).toBe(true)

    // with --otlp the worker loaded the SDK and @jitbox/otel; without it, nothing of OpenTelemetry
    expect(importsOf(path.join(directory, "worker.log"))).toEqual(expect.arrayContaining(["@jitbox/otel", "@effect/opentelemetry/NodeSdk"]))
    expect(importsOf(path.join(directory, "plain.log"))).toEqual([])
  }, 110_000)

  it("jitbox mcp --otlp: a local session's composed call is one trace of jitbox-mcp, flushed on SIGTERM", async () => {
    const mcp = spawnCli(["mcp", "--http", "0", "--no-auth", "--otlp", otlp.url], { OTEL_EXPORTER_OTLP_ENDPOINT: undefined })
    serving.push(mcp)
    const url = /ready mcp (\S+)/.exec(await mcp.line(/^ready mcp /))![1]!
    const client = new Client({ name: "telemetry-test", version: "0.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(url)))
    for (const [entrypoint, source] of [["inner", innerSource], ["outer", outerSource]] as const) {
      const created = (await client.callTool({ name: "create_tool", arguments: { entrypoint, language: "javascript", source } })) as CallToolResult
      expect(created.isError ?? false, JSON.stringify(created)).toBe(false)
    }
    const called = (await client.callTool({ name: "outer", arguments: { value: 20 } })) as CallToolResult
    expect(called.content[0]).toMatchObject({ type: "text", text: "41" })
    await client.close()
    mcp.child.kill("SIGTERM")
    expect(await mcp.exited()).toBe(0)

    await waitUntil("the mcp spans arrived", () => ["execute_tool outer", "execute_tool inner"].every((name) => otlp.spans.some((span) => span.service === "jitbox-mcp" && span.name === name)), 10_000)
    const outer = one(otlp.spans, "execute_tool outer", "jitbox-mcp")
    const inner = one(otlp.spans, "execute_tool inner", "jitbox-mcp")
    expect(outer.parentSpanId).toBeUndefined()
    expect([inner.traceId, inner.parentSpanId]).toEqual([outer.traceId, outer.spanId])
    await waitUntil("the mcp call metrics arrived", () => otlp.points.some((p) => p.service === "jitbox-mcp" && p.name === "jitbox.calls" && p.attributes["gen_ai.tool.name"] === "outer"), 10_000)
  }, 60_000)

  it("jitbox worker, sessions and mcp --help name --otlp and OTEL_EXPORTER_OTLP_ENDPOINT", async () => {
    for (const subcommand of ["worker", "sessions", "mcp"]) {
      const out: Array<string> = []
      const exit = await Effect.runPromiseExit(
        Cli.run(["node", "jitbox", subcommand, "--help"]).pipe(
          Effect.provide(NodeContext.layer),
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map())),
          Effect.withConsole({ ...Effect.runSync(Effect.console), log: (...args: ReadonlyArray<unknown>) => Effect.sync(() => void out.push(args.join(" "))) })
        )
      )
      expect(Exit.isSuccess(exit)).toBe(true)
      const help = plain(out.join("\n"))
      expect(help).toContain("--otlp")
      expect(help).toContain("OTEL_EXPORTER_OTLP_ENDPOINT")
    }
  })

  it.each([
    [["worker", "--otlp", "ftp://collector:4318"], {}, "--otlp"],
    [["sessions"], { OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" }, "--otlp"],
    [["worker", "--otlp", "http://127.0.0.1:4318"], { OTEL_METRIC_EXPORT_INTERVAL: "5" }, "OTEL_METRIC_EXPORT_INTERVAL"]
  ])("jitbox %j with %j fails ConfigError naming %s before it connects", async (args, env, option) => {
    const exit = await Effect.runPromiseExit(
      Cli.run(["node", "jitbox", ...args, "--server", "nats://127.0.0.1:1"]).pipe(
        Effect.provide(NodeContext.layer),
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
        Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("did not end") })
      )
    )
    expect(Exit.isFailure(exit)).toBe(true)
    const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
    expect(Option.getOrUndefined(failure)).toMatchObject({ _tag: "ConfigError", option })
  })
})
