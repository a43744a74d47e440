/**
 * NATS service discovery (ADR-32) over the in-memory transport: every instance answers `PING`,
 * `INFO` and `STATS` on the three subjects of each verb, with the fields of the micro protocol;
 * `measure` counts requests, errors and processing time; workers and coordinators advertise
 * themselves. packages/nats/test/NatsServiceDiscovery.test.ts asks a real nats-server with a raw
 * nats.js connection.
 */
import { HarnessError } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as fs from "node:fs"
import * as Coordinator from "../src/Coordinator.js"
import * as CoordinatorClient from "../src/CoordinatorClient.js"
import * as CoordinatorProtocol from "../src/CoordinatorProtocol.js"
import * as Envelope from "../src/Envelope.js"
import * as ExecutionProfile from "../src/ExecutionProfile.js"
import * as Ids from "../src/Ids.js"
import * as Ledger from "../src/Ledger.js"
import * as MemoryTransport from "../src/MemoryTransport.js"
import * as ServiceDiscovery from "../src/ServiceDiscovery.js"
import * as Subject from "../src/Subject.js"
import * as Transport from "../src/Transport.js"
import { ProtocolError } from "../src/ProtocolError.js"
import { TransportError } from "../src/TransportError.js"
import * as Worker from "../src/Worker.js"

/** A memory transport whose responders' replies are recorded, so a test sees every answer to one request (a request resolves with the first). */
const recordingTransport = () => {
  const replies: Array<{ readonly subject: string; readonly text: string }> = []
  const layer = Layer.scoped(
    Transport.Transport,
    Effect.acquireRelease(Effect.sync(() => MemoryTransport.driver()), (driver) => Effect.sync(driver.close)).pipe(
      Effect.map((driver) =>
        Transport.fromDriver({
          ...driver,
          subscribe: (pattern, queue, sink) =>
            driver.subscribe(pattern, queue, {
              ...sink,
              deliver: (message) =>
                sink.deliver({
                  ...message,
                  respond: message.respond === undefined ? undefined : (data, headers) => {
                    replies.push({ subject: message.subject, text: new TextDecoder().decode(data) })
                    message.respond!(data, headers)
                  }
                })
            })
        })
      )
    )
  )
  return { layer, replies }
}

const ask = (subject: Subject.Subject) =>
  Effect.map(Transport.request(subject, "", { timeoutMs: 5_000 }), (reply) => JSON.parse(Transport.text(reply)) as unknown)

const decode = <A, I>(schema: Schema.Schema<A, I>) => (u: unknown) => Schema.decodeUnknownSync(schema, { onExcessProperty: "error" })(u)

const settle = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 20)))

const name = Ids.token("echo")

describe("ServiceDiscovery", () => {
  it("the advertised version is the package's", () => {
    const pkg = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
    assert.strictEqual(ServiceDiscovery.runtimeVersion, pkg.version)
    assert.match(ServiceDiscovery.runtimeVersion, ServiceDiscovery.semVer)
  })

  it("the $SRV subjects are literal subjects the transport accepts, outside every prefix", () => {
    assert.deepStrictEqual(
      [Subject.serviceDiscovery("PING"), Subject.serviceDiscovery("INFO", name), Subject.serviceDiscovery("STATS", name, Ids.token("abc_1"))],
      ["$SRV.PING", "$SRV.INFO.echo", "$SRV.STATS.echo.abc_1"]
    )
    for (const subject of ["$SRV.PING", "$SRV.INFO.echo", "$SRV.STATS.echo.abc_1"]) {
      assert.isTrue(Subject.isLiteral(subject))
      assert.isTrue(Subject.isPattern(subject))
    }
    assert.isTrue(Subject.matches("$SRV.>", "$SRV.PING.echo"))
    assert.isFalse(Subject.matches(Subject.everything(Subject.prefix(Ids.namespace("ns1"))), "$SRV.PING"))
    assert.throws(() => Subject.serviceDiscovery("HELLO" as Subject.ServiceVerb), HarnessError.ConfigError)
  })

  it.effect("two instances each answer PING, INFO and STATS on all three subjects of each verb", () => {
    const { layer, replies } = recordingTransport()
    return Effect.gen(function*() {
      yield* TestClock.adjust("90 seconds")
      const endpoint = Subject.coordinator(Subject.prefix(Ids.namespace("ns1")), Ids.defaultPrincipal, Ids.token("echo"))
      const a = yield* ServiceDiscovery.advertise({
        name,
        version: "1.2.3-beta.1+build.5",
        id: "instance_a",
        description: "echoes",
        metadata: { namespace: "ns1" },
        endpoints: [{ name: "echo", subject: endpoint, queueGroup: "echoes", metadata: { kind: "test" } }]
      })
      const b = yield* ServiceDiscovery.advertise({ name, version: "1.2.3", endpoints: [] })
      assert.strictEqual(a.id, "instance_a")
      assert.match(b.id, /^svc_[0-9a-f]{24}_/)

      for (const verb of Subject.serviceVerbs) {
        replies.length = 0
        yield* ask(Subject.serviceDiscovery(verb))
        yield* ask(Subject.serviceDiscovery(verb, name))
        yield* settle
        // no queue group: both instances answered both requests
        assert.strictEqual(replies.length, 4, verb)
        const ids = replies.map((reply) => (JSON.parse(reply.text) as { id: string }).id).sort()
        assert.deepStrictEqual(ids, [a.id, a.id, b.id, b.id].sort(), verb)
      }

      const ping = decode(ServiceDiscovery.PingResponse)(yield* ask(Subject.serviceDiscovery("PING", name, a.id)))
      assert.deepStrictEqual(ping, { type: "io.nats.micro.v1.ping_response", name: "echo", id: "instance_a", version: "1.2.3-beta.1+build.5", metadata: { namespace: "ns1" } })

      const info = decode(ServiceDiscovery.InfoResponse)(yield* ask(Subject.serviceDiscovery("INFO", name, a.id)))
      assert.strictEqual(info.description, "echoes")
      assert.deepStrictEqual(info.endpoints, [{ name: "echo", subject: endpoint, queue_group: "echoes", metadata: { kind: "test" } }])

      const stats = decode(ServiceDiscovery.StatsResponse)(yield* ask(Subject.serviceDiscovery("STATS", name, b.id)))
      assert.strictEqual(stats.id, b.id)
      // `started` is the context's Clock when the service began
      assert.strictEqual(stats.started, "1970-01-01T00:01:30.000Z")
      assert.deepStrictEqual(stats.endpoints, [])
    }).pipe(Effect.scoped, Effect.provide(layer))
  })

  it.effect("measure counts requests, processing time and errors: error replies, throws and rejections", () =>
    Effect.gen(function*() {
      const prefix = Subject.prefix(Ids.namespace("ns1"))
      const subject = Subject.coordinator(prefix, Ids.defaultPrincipal, Ids.token("work"))
      const stats = ServiceDiscovery.counter()
      yield* Transport.serve(subject, { concurrency: 4 }, ServiceDiscovery.measure(stats, async (request) => {
        const text = new TextDecoder().decode(request.data)
        if (text === "throw") throw new Error("it broke")
        if (text === "reject") return Promise.reject(new Error("it rejected"))
        if (text === "error") return Envelope.error(new ProtocolError({ reason: "Decode", subject, detail: "bad input" }))
        await new Promise((resolve) => setTimeout(resolve, 5))
        return Envelope.ok("1")
      }))
      const service = yield* ServiceDiscovery.advertise({ name, version: "0.1.0", endpoints: [{ name: "work", subject, stats }] })

      const empty = decode(ServiceDiscovery.StatsResponse)(yield* ask(Subject.serviceDiscovery("STATS", name, service.id)))
      assert.deepStrictEqual(empty.endpoints, [{
        name: "work",
        subject,
        queue_group: "",
        num_requests: 0,
        num_errors: 0,
        last_error: "",
        processing_time: 0,
        average_processing_time: 0
      }])

      for (const body of ["ok", "ok", "error", "throw", "reject"]) {
        yield* Effect.either(Transport.request(subject, body, { timeoutMs: 5_000 }))
      }
      const counted = decode(ServiceDiscovery.StatsResponse)(yield* ask(Subject.serviceDiscovery("STATS", name))).endpoints[0]!
      assert.strictEqual(counted.num_requests, 5)
      assert.strictEqual(counted.num_errors, 3)
      assert.strictEqual(counted.last_error, "it rejected")
      // two handlers slept 5 ms each; a Node timer may fire up to a millisecond early by the monotonic clock
      assert.isTrue(Number.isInteger(counted.processing_time) && counted.processing_time >= 2 * 4_000_000, String(counted.processing_time))
      assert.strictEqual(counted.average_processing_time, Math.trunc(counted.processing_time / 5))
      assert.deepStrictEqual(stats.counts(), {
        requests: 5,
        errors: 3,
        lastError: "it rejected",
        processingNanos: counted.processing_time
      })
      assert.strictEqual(ServiceDiscovery.envelopeFailure(Envelope.error(new TransportError({ reason: "Busy", subject, detail: "full" }))), "Busy on " + subject + ": full")
      assert.isUndefined(ServiceDiscovery.envelopeFailure(Envelope.ok("{\"kind\":\"error\"}")))
    }).pipe(Effect.scoped, Effect.provide(MemoryTransport.layer())))

  it.effect("a name, version, id or endpoint the protocol does not allow is a ConfigError", () =>
    Effect.gen(function*() {
      const subject = Subject.coordinator(Subject.prefix(Ids.namespace("ns1")), Ids.defaultPrincipal, Ids.token("work"))
      const cases: Array<[Partial<ServiceDiscovery.ServiceOptions>, string]> = [
        [{ name: "a.b" }, "name"],
        [{ name: "" }, "name"],
        [{ version: "1.2" }, "version"],
        [{ version: "v1.2.3" }, "version"],
        [{ id: "x y" }, "id"],
        [{ endpoints: [{ name: "a b", subject }] }, "endpoints"],
        [{ endpoints: [{ name: "ok", subject: "a..b" as Subject.Pattern }] }, "endpoints"]
      ]
      for (const [options, option] of cases) {
        const error = yield* Effect.flip(ServiceDiscovery.advertise({ name: "good", version: "1.0.0", endpoints: [], ...options }))
        assert.instanceOf(error, HarnessError.ConfigError)
        assert.strictEqual((error as HarnessError.ConfigError).option, option)
      }
    }).pipe(Effect.scoped, Effect.provide(MemoryTransport.layer())))

  it.live("a worker and a coordinator advertise themselves; the worker counts its invocations", () =>
    Effect.gen(function*() {
      const namespace = Ids.namespace("disco1")
      const prefix = Subject.prefix(namespace)
      const worker = yield* Worker.make({ prefix, pool: "gpu", languages: ["javascript"], concurrency: 2 })
      const coordinator = yield* Coordinator.make({ namespace, profiles: ExecutionProfile.all([{ name: "standard" }]) }).pipe(
        Effect.provide(Layer.succeed(Ledger.Ledger, Ledger.makeMemory()))
      )
      const workerName = Ids.token(Worker.serviceName)
      const coordinatorName = Ids.token(Coordinator.serviceName)

      const ping = decode(ServiceDiscovery.PingResponse)(yield* ask(Subject.serviceDiscovery("PING", workerName)))
      assert.deepStrictEqual(ping, {
        type: "io.nats.micro.v1.ping_response",
        name: "jitbox-worker",
        id: worker.workerId,
        version: ServiceDiscovery.runtimeVersion,
        metadata: { namespace: "disco1", pool: "gpu", languages: "javascript" }
      })
      const info = decode(ServiceDiscovery.InfoResponse)(yield* ask(Subject.serviceDiscovery("INFO", workerName, worker.workerId)))
      assert.deepStrictEqual(info.endpoints, [{ name: "invoke-javascript", subject: "jitbox.disco1.worker.gpu.javascript.invoke", queue_group: "workers-gpu-javascript", metadata: {} }])

      // a malformed invocation is answered with an error, and counted as one
      yield* Transport.request(Subject.workerInvoke(prefix, worker.pool, "javascript"), "{ not json", { timeoutMs: 5_000 })
      const stats = decode(ServiceDiscovery.StatsResponse)(yield* ask(Subject.serviceDiscovery("STATS", workerName, worker.workerId)))
      assert.strictEqual(stats.endpoints[0]!.num_requests, 1)
      assert.strictEqual(stats.endpoints[0]!.num_errors, 1)
      assert.match(stats.endpoints[0]!.last_error, /not JSON/)

      const coordinatorInfo = decode(ServiceDiscovery.InfoResponse)(yield* ask(Subject.serviceDiscovery("INFO", coordinatorName)))
      assert.strictEqual(coordinatorInfo.id, coordinator.id)
      assert.deepStrictEqual(coordinatorInfo.metadata, { namespace: "disco1" })
      assert.deepStrictEqual(coordinatorInfo.endpoints, [{ name: "coordinator", subject: "jitbox.disco1.coordinator.*.*", queue_group: "coordinator", metadata: {} }])
      const client = yield* CoordinatorClient.make({ namespace })
      yield* client.policy("standard")
      yield* Effect.flip(client.policy("premium"))
      const coordinatorStats = decode(ServiceDiscovery.StatsResponse)(yield* ask(Subject.serviceDiscovery("STATS", coordinatorName, Ids.token(coordinator.id))))
      assert.strictEqual(coordinatorStats.endpoints[0]!.num_requests, 2)
      assert.strictEqual(coordinatorStats.endpoints[0]!.num_errors, 1)
      assert.match(coordinatorStats.endpoints[0]!.last_error, /ProfileNotFound/)
    }).pipe(Effect.scoped, Effect.provide(MemoryTransport.layer())), 30_000)
})
