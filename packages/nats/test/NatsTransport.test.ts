/**
 * The NATS layer against a real nats-server (one per file, on a free port): the transport
 * conformance suite, then what only a real server shows: connect failures, and the server dying
 * and coming back under live connections.
 */
import { NatsServer } from "@jitbox/testing"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as net from "node:net"
import { afterAll, beforeAll } from "vitest"
import { Ids, Subject, Transport, TransportError } from "@jitbox/runtime"
import { transportConformance } from "../../runtime/test/TransportConformance.js"
import * as NatsConnection from "../src/NatsConnection.js"
import * as NatsTransport from "../src/NatsTransport.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

const url = () => server!.url

transportConformance("NatsTransport", () => NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer({ servers: url(), reconnectTimeWaitMs: 100 }))))

/** The transport's layer over a connection of its own, built. */
const transportLayer = (options: NatsConnection.NatsConnectionOptions) => Layer.build(NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer(options))))

/** Polls `check` every 20 ms until it holds; fails after `ms`. */
const waitUntil = (what: string, ms: number, check: () => boolean | Promise<boolean>): Effect.Effect<void, Error> =>
  Effect.promise(async () => {
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      if (await check()) return true
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    return false
  }).pipe(Effect.flatMap((ok) => ok ? Effect.void : Effect.fail(new Error(`${what} did not happen within ${ms} ms`))))

const settle = (promise: Promise<Transport.Message>): Promise<string> =>
  promise.then(
    (reply) => `reply:${Transport.text(reply)}`,
    (error: unknown) => TransportError.isTransportError(error) ? `error:${error.reason}` : `untyped:${String(error)}`
  )

const unusedPort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = net.createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address() as net.AddressInfo
      probe.close(() => resolve(address.port))
    })
  })

describe("NatsTransport with a real server", () => {
  it.scopedLive("no server at the address: the layer fails with TransportError Connect", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(unusedPort)
      const error = yield* Effect.flip(transportLayer({ servers: `nats://127.0.0.1:${port}`, connectTimeoutMs: 2_000 }))
      assert.strictEqual(error.reason, "Connect")
      assert.include(error.detail, String(port))
    }))

  it.scopedLive("an unreadable credentials file fails with TransportError Connect naming it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(transportLayer({ servers: url(), credentialsFile: "/nonexistent/jitbox.creds" }))
      assert.strictEqual(error.reason, "Connect")
      assert.include(error.detail, "/nonexistent/jitbox.creds")
    }))

  it.scopedLive("maxPayload is the server's max_payload", () =>
    Effect.gen(function*() {
      const transport = yield* Effect.map(NatsConnection.make({ servers: url() }), NatsTransport.fromConnection)
      assert.strictEqual(transport.maxPayload(), 1_048_576)
    }))

  it.scopedLive(
    "the server killed and restarted under live connections: requests in flight end typed, none hangs, nothing is sent into the outage; afterwards requests and subscriptions work",
    () =>
      Effect.gen(function*() {
        const options = { servers: url(), reconnectTimeWaitMs: 100 }
        const requester = yield* Effect.map(NatsConnection.make({ ...options, name: "requester" }), NatsTransport.fromConnection)
        const responder = yield* Effect.map(NatsConnection.make({ ...options, name: "responder" }), NatsTransport.fromConnection)
        const prefix = Subject.prefix(Ids.namespace("restart"))
        const subject = Subject.workerInvoke(prefix, Ids.poolName("default"), "javascript")
        let taken = 0
        let holding = true
        let releaseHeld!: () => void
        const held = new Promise<void>((resolve) => {
          releaseHeld = resolve
        })
        yield* responder.serve(subject, { queue: "workers", concurrency: 16, graceMs: 0 }, async (request) => {
          taken++
          if (holding) await held
          return `done:${Transport.text(request)}`
        })
        const events = yield* requester.subscribe(Subject.allEvents(prefix))

        const inFlight = Array.from({ length: 8 }, (_, i) => settle(requester.request(subject, String(i), { timeoutMs: 1_500 })))
        yield* waitUntil("the responder taking all 8 requests", 5_000, () => taken === 8)
        yield* Effect.promise(() => server!.kill())

        // Once the client knows the connection is down it would drop whatever is sent (on
        // reconnecting): the transport refuses it instead, a publish and a request alike.
        const elsewhere = Subject.sessionCall(prefix, Ids.sessionId("probe"))
        yield* waitUntil("the requester refusing a publish", 5_000, () => {
          try {
            requester.publish(elsewhere, "probe")
            return false
          } catch (error) {
            return TransportError.isTransportError(error) && error.reason === "Closed"
          }
        })
        const duringOutage = settle(requester.request(subject, "outage", { timeoutMs: 500 }))
        // The held handlers answer into the void: the requests in flight end at their timeout.
        holding = false
        releaseHeld()
        const outcomes = yield* Effect.promise(() => Promise.all([...inFlight, duringOutage]))
        assert.deepStrictEqual(outcomes, [...Array.from({ length: 8 }, () => "error:Timeout"), "error:Closed"])

        yield* Effect.promise(() => server!.restart())
        yield* waitUntil("a request succeeding after the restart", 10_000, async () =>
          (await settle(requester.request(subject, "probe", { timeoutMs: 300 }))) === "reply:done:probe")
        const after = yield* Effect.promise(() =>
          Promise.all(Array.from({ length: 20 }, (_, i) => settle(requester.request(subject, `after${i}`, { timeoutMs: 5_000 }))))
        )
        assert.deepStrictEqual(after, Array.from({ length: 20 }, (_, i) => `reply:done:after${i}`))

        // The subscription made before the outage was re-established by the client.
        responder.publish(Subject.events(prefix, Ids.sessionId("s1")), "after the restart")
        const event = yield* Stream.runHead(events).pipe(
          Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("no event after the restart") })
        )
        assert.strictEqual(event._tag === "Some" ? Transport.text(event.value) : undefined, "after the restart")
      }),
    30_000
  )
})
