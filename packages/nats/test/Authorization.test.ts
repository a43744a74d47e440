/**
 * NATS authorization with least privilege: a nats-server started with
 * fixtures/authorization.conf (one user per role for the namespace ns1, each allowed only the
 * subjects its role uses). A coordinator (with its KV ledger), a worker and a session host, each
 * on its own credentials, run a code tool end to end while an observer watches its events; what
 * a role may not do fails with a typed `TransportError` `PermissionDenied`.
 */
import { add } from "../../core/test/fixtures.js"
import {
  Coordinator,
  CoordinatorClient,
  ExecutionProfile,
  Ids,
  RemoteCodeRunner,
  RemoteSession,
  ServiceDiscovery,
  Sessions,
  SnapshotStore,
  StreamProtocol,
  StreamPublisher,
  Subject,
  Transport,
  TransportError,
  Worker
} from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import { afterAll, beforeAll } from "vitest"
import * as KvLedger from "../src/KvLedger.js"
import * as NatsConnection from "../src/NatsConnection.js"
import * as NatsTransport from "../src/NatsTransport.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start({ config: fs.readFileSync(new URL("./fixtures/authorization.conf", import.meta.url), "utf8") })
})
afterAll(() => server?.close())

const roles = {
  sessionHost: { user: "session_host", password: "session-host-secret", inboxPrefix: "_INBOX_sessions" },
  worker: { user: "worker", password: "worker-secret", inboxPrefix: "_INBOX_worker" },
  coordinator: { user: "coordinator", password: "coordinator-secret", inboxPrefix: "_INBOX_coordinator" },
  observer: { user: "observer", password: "observer-secret", inboxPrefix: "_INBOX_observer" }
} as const

type Role = keyof typeof roles

const options = (role: Role): NatsConnection.NatsConnectionOptions => ({ servers: server!.url, reconnectTimeWaitMs: 100, name: role, ...roles[role] })

/** A connection with `role`'s credentials for the rest of the scope. */
const as = (role: Role) => Layer.build(NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer(options(role)))))

const namespace = Ids.namespace("ns1")
const prefix = Subject.prefix(namespace)
const s1 = Ids.sessionId("s1")

const sandbox = {
  shortTimeoutSeconds: 30,
  activationTimeoutSeconds: 30,
  limits: { memoryMiB: 256, cpuSeconds: 30, openFiles: 64, processes: 256, fileSizeMiB: 8, tmpfsMiB: 16 }
} as const

const doubleJs = `export const double = tool({
  description: "Doubles a number.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }) => value * 2)`

/** The TransportError an effect fails with. */
const refusal = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (error) => {
    assert.isTrue(TransportError.isTransportError(error), `expected a TransportError, got ${String(error)}`)
    return error as unknown as TransportError.TransportError
  })

const rejection = (promise: Promise<unknown>) =>
  Effect.promise(() => promise.then((value) => assert.fail(`expected a rejection, got ${JSON.stringify(value)}`), (error: unknown) => error))

const waitFor = (what: string, check: () => boolean) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 20_000
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`${what} did not happen within 20 s`)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  })

describe("NATS authorization: each role with the least permissions it needs", () => {
  it.live("a coordinator, a worker and a session host on their own credentials run a code tool; the observer sees its events", () =>
    Effect.gen(function*() {
      const coordinator = yield* Coordinator.make({
        namespace,
        profiles: ExecutionProfile.all([{ name: "standard", policy: { allowedLanguages: ["JavaScript"] } }])
      }).pipe(
        Effect.provide(
          yield* Layer.build(
            Layer.merge(NatsTransport.layer, KvLedger.layer({ bucket: KvLedger.bucketOf(namespace) })).pipe(Layer.provide(NatsConnection.layer(options("coordinator"))))
          )
        )
      )
      const worker = yield* Worker.make({ prefix, principal: roles.worker.user, languages: ["javascript"], sandbox }).pipe(Effect.provide(yield* as("worker")))

      const observer = yield* as("observer")
      const seen: Array<{ readonly subject: string; readonly name: string }> = []
      const events = yield* Transport.subscribe(Subject.allEvents(prefix)).pipe(Effect.provide(observer))
      yield* events.pipe(
        Stream.runForEach((message) =>
          Effect.sync(() => {
            for (const event of StreamProtocol.decodeEvents(message.data)) seen.push({ subject: message.subject, name: event.name })
          })
        ),
        Effect.forkScoped
      )

      const host = yield* as("sessionHost")
      const hostContext = Context.merge(
        Context.add(host, SnapshotStore.SnapshotStore, SnapshotStore.makeMemory()),
        yield* Layer.build(Layer.merge(StreamPublisher.layer({ prefix }), RemoteCodeRunner.layer({ prefix }))).pipe(Effect.provide(host))
      )
      const sessions = yield* Sessions.make({
        prefix,
        harness: { tools: [add], codeExecution: "sandboxed", policy: { allowedLanguages: ["JavaScript"] } },
        admission: { principal: roles.sessionHost.user, profile: "standard", deploymentConsent: true },
        idleTimeout: "10 minutes"
      }).pipe(Effect.provide(hostContext))

      // The application (the session host's role) creates a JavaScript tool and calls it: it runs on the worker.
      const application = Context.get(yield* as("sessionHost"), Transport.Transport)
      const remote = new RemoteSession.RemoteSession(application, s1, { prefix, timeoutMs: 30_000 })
      yield* Effect.promise(() => remote.createTool({ entrypoint: "double", language: "javascript", source: doubleJs }))
      assert.strictEqual(yield* Effect.promise(() => remote.callTool("double", { value: 21 })), 42)
      assert.strictEqual(worker.fetches(), 1)
      assert.deepStrictEqual(sessions.active(), [s1])
      assert.isString(sessions.leases.get(s1)?.leaseId(), "the session holds a lease the worker checked")
      assert.isAtLeast(coordinator.requests(), 1)
      // The session host reads the coordinator's ledger, asking as itself.
      const view = yield* Effect.flatMap(CoordinatorClient.make({ namespace, principal: roles.sessionHost.user }), (client) => client.leases()).pipe(Effect.provide(host))
      assert.deepStrictEqual(view.sessions.map((session) => session.sessionId), [s1])

      yield* waitFor("the observer sees the call's events", () => seen.some((event) => event.name === "jit_tool_completed"))
      assert.includeMembers(seen.map((event) => `${event.subject} ${event.name}`), [`${prefix}.events.s1 jit_tool_started`, `${prefix}.events.s1 jit_tool_completed`])

      // The observer may ask service discovery, and the worker and coordinator may answer it.
      const ping = yield* Transport.request(Subject.serviceDiscovery("PING", Ids.token(Worker.serviceName)), "", { timeoutMs: 5_000 })
        .pipe(Effect.provide(observer))
      assert.strictEqual(Schema.decodeUnknownSync(ServiceDiscovery.PingResponse)(JSON.parse(Transport.text(ping))).id, worker.workerId)
      const info = yield* Transport.request(Subject.serviceDiscovery("INFO", Ids.token(Coordinator.serviceName)), "", { timeoutMs: 5_000 })
        .pipe(Effect.provide(observer))
      assert.strictEqual(Schema.decodeUnknownSync(ServiceDiscovery.InfoResponse)(JSON.parse(Transport.text(info))).id, coordinator.id)
      // Nothing any of them did on the way (heartbeats, capacity reports, profile records, KV writes) was refused.
      assert.notMatch(server!.log(), /Violation/)
    }).pipe(Effect.scoped), 90_000)

  it.live("a worker's credentials can neither call or manage a session, nor serve its subjects, nor read another namespace or others' replies", () =>
    Effect.gen(function*() {
      const ns2 = Subject.prefix(Ids.namespace("ns2"))
      const refusals = [
        yield* refusal(Transport.request(Subject.sessionManage(prefix, s1), "{}", { timeoutMs: 5_000 })),
        yield* refusal(Transport.request(Subject.sessionCall(prefix, s1), "{}", { timeoutMs: 5_000 })),
        yield* refusal(Transport.serve(Subject.sessionCall(prefix, s1), { concurrency: 1 }, () => "")),
        yield* refusal(Transport.subscribe(Subject.allEvents(ns2))),
        yield* refusal(Transport.subscribe(Subject.workerInvoke(ns2, Ids.poolName("default"), "javascript"))),
        yield* refusal(Transport.subscribe(Subject.workersCapacity(prefix))),
        yield* refusal(Transport.subscribe("_INBOX.>" as Subject.Pattern)),
        yield* refusal(Transport.subscribe("_INBOX_sessions.>" as Subject.Pattern)),
        yield* refusal(Transport.serve(Subject.serviceDiscovery("PING", Ids.token(Coordinator.serviceName)), { concurrency: 1 }, () => ""))
      ]
      assert.deepStrictEqual(refusals.map((error) => error.reason), refusals.map(() => "PermissionDenied"))
      assert.match(refusals[0]!.detail, /Permissions Violation for Publish to "jitbox\.ns1\.session\.s1\.manage"/)
      assert.match(refusals[3]!.detail, /Permissions Violation for Subscription to "jitbox\.ns2\.events\.\*"/)
      // The connection outlives every refusal: what a worker does still works on it.
      yield* Transport.serve(Subject.workerInvoke(prefix, Ids.poolName("default"), "javascript"), { concurrency: 1, queue: "workers-default-javascript" }, () => "")
      yield* Transport.subscribe(Subject.workerCancel(prefix))
    }).pipe(Effect.provide(NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer(options("worker"))))), Effect.scoped), 60_000)

  it.live("an observer reads events but cannot call a tool, manage a session or read its calls; a session host cannot pose as a worker", () =>
    Effect.gen(function*() {
      const observer = Context.get(yield* as("observer"), Transport.Transport)
      yield* Transport.subscribe(Subject.sessionEvents(prefix, s1)).pipe(Effect.provideService(Transport.Transport, observer))
      yield* Transport.subscribe(Subject.allProfiles(prefix)).pipe(Effect.provideService(Transport.Transport, observer))
      const remote = new RemoteSession.RemoteSession(observer, s1, { prefix, timeoutMs: 5_000 })
      for (const attempt of [() => remote.callTool("double", { value: 1 }), () => remote.listTools()]) {
        const error = yield* rejection(attempt())
        assert.isTrue(TransportError.isTransportError(error), String(error))
        assert.strictEqual((error as TransportError.TransportError).reason, "PermissionDenied")
      }
      const eavesdrop = yield* refusal(Transport.subscribe(Subject.sessionAll(prefix, s1)).pipe(Effect.provideService(Transport.Transport, observer)))
      assert.strictEqual(eavesdrop.reason, "PermissionDenied")

      const host = yield* as("sessionHost")
      const posing = yield* refusal(
        Transport.serve(Subject.workerInvoke(prefix, Ids.poolName("default"), "javascript"), { concurrency: 1, queue: "workers-default-javascript" }, () => "")
          .pipe(Effect.provide(host))
      )
      assert.strictEqual(posing.reason, "PermissionDenied")
      const ledger = yield* refusal(Transport.request(`$KV.${KvLedger.bucketOf(namespace)}.session_s1` as Subject.Subject, "{}", { timeoutMs: 5_000 }).pipe(Effect.provide(host)))
      assert.strictEqual(ledger.reason, "PermissionDenied")
      // The coordinator's subjects carry the asker: a session host cannot ask as the worker, as
      // the default principal, or as a made-up one.
      for (const principal of ["worker", "default", "sessions2"]) {
        const posingAs = yield* refusal(
          Transport.request(Subject.coordinator(prefix, Ids.principal(principal), Ids.token("admit")), "{}", { timeoutMs: 5_000 }).pipe(Effect.provide(host))
        )
        assert.strictEqual(posingAs.reason, "PermissionDenied", principal)
      }
      const worker = yield* as("worker")
      const workerAdmits = yield* refusal(
        Transport.request(Subject.coordinator(prefix, Ids.principal("worker"), Ids.token("admit")), "{}", { timeoutMs: 5_000 }).pipe(Effect.provide(worker))
      )
      assert.strictEqual(workerAdmits.reason, "PermissionDenied")
    }).pipe(Effect.scoped), 60_000)

  it.live("a wrong password is refused at connect with a typed error", () =>
    Effect.gen(function*() {
      const error = yield* refusal(Layer.build(NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer({ ...options("worker"), password: "guess", maxReconnectAttempts: 0 })))))
      assert.strictEqual(error.reason, "PermissionDenied")
      assert.match(error.detail, /Authorization Violation/i)
    }).pipe(Effect.scoped), 30_000)
})
