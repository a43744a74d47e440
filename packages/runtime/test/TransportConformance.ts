/**
 * The behaviour every layer of `Transport` must have, as one suite: call it with a name and a
 * factory of the layer, once per layer (MemoryTransport.test.ts, packages/nats/test/NatsTransport.test.ts).
 * Each test builds a fresh transport and works in a namespace of its own, so tests share nothing.
 *
 * Deliveries are asynchronous on both layers. Instead of sleeping, a test that must know that
 * earlier messages have arrived publishes a sentinel after them (both layers keep the order of one
 * publisher's messages to one subscriber) or makes a request on the same transport (its reply comes
 * after what was published before it).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as Layer from "effect/Layer"
import * as LayerModule from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Ids from "../src/Ids.js"
import * as Subject from "../src/Subject.js"
import * as Transport from "../src/Transport.js"
import type { TransportError } from "../src/TransportError.js"
import { isTransportError } from "../src/TransportError.js"

let namespaces = 0
/** A prefix no other test uses. */
const freshPrefix = () => Subject.prefix(Ids.namespace(`conf${++namespaces}_${Math.random().toString(36).slice(2, 8)}`))

const sid = Ids.sessionId

const collect = <E>(stream: Stream.Stream<Transport.Message, E>, count: number) =>
  stream.pipe(
    Stream.take(count),
    Stream.runCollect,
    Effect.map(Chunk.toArray),
    Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error(`fewer than ${count} messages arrived within 5 s`) })
  )

const texts = (messages: ReadonlyArray<Transport.Message>) => messages.map(Transport.text)

/** The TransportError a promise rejects with (fails the test if it resolves or rejects with anything else). */
const rejection = (promise: Promise<unknown>): Effect.Effect<TransportError, Error> =>
  Effect.promise(() => promise.then(() => undefined, (error: unknown) => error)).pipe(
    Effect.flatMap((error) =>
      isTransportError(error)
        ? Effect.succeed(error)
        : Effect.fail(new Error(`expected a TransportError, got ${error === undefined ? "a reply" : String(error)}`))
    )
  )

/** What a synchronous call throws, as a TransportError. */
const thrown = (f: () => void): TransportError => {
  try {
    f()
  } catch (error) {
    if (isTransportError(error)) return error
    throw error
  }
  throw new Error("expected a TransportError, nothing was thrown")
}

const echo: Transport.Handler = (request) => ({ payload: `echo:${Transport.text(request)}`, headers: request.headers })

export const transportConformance = (name: string, makeLayer: () => Layer.Layer<Transport.Transport, TransportError>) =>
  describe(`Transport conformance: ${name}`, () => {
    const withTransport = <A, E>(
      body: (transport: Transport.TransportShape) => Effect.Effect<A, E, Scope.Scope | Transport.Transport>
    ): Effect.Effect<A, E | TransportError, Scope.Scope> =>
      Effect.flatMap(Transport.Transport, body).pipe(Effect.provide(makeLayer()))

    it.scopedLive("publish/subscribe: `*` and `>` patterns receive exactly the subjects they match, in order", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const prefix = freshPrefix()
          const all = yield* transport.subscribe(Subject.allEvents(prefix))
          const ofOne = yield* transport.subscribe(Subject.sessionEvents(prefix, sid("s1")))
          const profiles = yield* transport.subscribe(Subject.allProfiles(prefix))
          const everything = yield* transport.subscribe(Subject.everything(prefix))
          transport.publish(Subject.events(prefix, sid("s1")), "a")
          transport.publish(Subject.events(prefix, sid("s2")), "b")
          transport.publish(Subject.profile(prefix, sid("s1")), "p1")
          transport.publish(Subject.sessionCall(prefix, sid("s1")), "not an event")
          transport.publish(Subject.events(Subject.prefix(Ids.namespace("other")), sid("s1")), "other namespace")
          transport.publish(Subject.events(prefix, sid("s1")), "end")
          transport.publish(Subject.profile(prefix, sid("s2")), "p-end")

          const allMessages = yield* collect(all, 3)
          assert.deepStrictEqual(texts(allMessages), ["a", "b", "end"])
          assert.deepStrictEqual(allMessages.map((message) => message.subject), [
            Subject.events(prefix, sid("s1")),
            Subject.events(prefix, sid("s2")),
            Subject.events(prefix, sid("s1"))
          ])
          assert.deepStrictEqual(allMessages.map((message) => message.dropped), [0, 0, 0])
          assert.deepStrictEqual(texts(yield* collect(ofOne, 2)), ["a", "end"])
          assert.deepStrictEqual(texts(yield* collect(profiles, 2)), ["p1", "p-end"])
          assert.deepStrictEqual(texts(yield* collect(everything, 6)), ["a", "b", "p1", "not an event", "end", "p-end"])
        })
      ))

    it.scopedLive("request/reply: the handler sees the payload and headers, the caller gets its reply", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const prefix = freshPrefix()
          const subject = Subject.sessionCall(prefix, sid("s1"))
          yield* transport.serve(subject, { concurrency: 4 }, echo)
          const reply = yield* Effect.promise(() => transport.request(subject, "hi", { timeoutMs: 5_000, headers: { "Jitbox-Test": "1" } }))
          assert.strictEqual(Transport.text(reply), "echo:hi")
          assert.strictEqual(reply.headers["Jitbox-Test"], "1")
          const bytes = yield* Effect.promise(() => transport.request(subject, new Uint8Array([104, 111]), { timeoutMs: 5_000 }))
          assert.strictEqual(Transport.text(bytes), "echo:ho")
          const viaEffect = yield* Transport.request(subject, "effect", { timeoutMs: 5_000 })
          assert.strictEqual(Transport.text(viaEffect), "echo:effect")
        })
      ))

    it.scopedLive("headers: trace context reaches subscribers and responders, and comes back in replies; more than the bounds is refused", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const prefix = freshPrefix()
          const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
          const tracestate = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
          const subject = Subject.sessionNested(prefix, sid("s1"))
          const seen: Array<Transport.Headers> = []
          yield* transport.serve(subject, { concurrency: 1 }, (request) => {
            seen.push(request.headers)
            return { payload: "ok", headers: { traceparent: request.headers.traceparent ?? "none" } }
          })
          const reply = yield* Effect.promise(() => transport.request(subject, "x", { timeoutMs: 5_000, headers: { traceparent, tracestate } }))
          assert.deepStrictEqual(seen.map((headers) => [headers.traceparent, headers.tracestate]), [[traceparent, tracestate]])
          assert.strictEqual(reply.headers.traceparent, traceparent)
          const plain = yield* Effect.promise(() => transport.request(subject, "y", { timeoutMs: 5_000 }))
          assert.strictEqual(plain.headers.traceparent, "none")
          assert.isUndefined(seen[1]!.traceparent)

          const events = yield* transport.subscribe(Subject.sessionEvents(prefix, sid("s1")))
          transport.publish(Subject.events(prefix, sid("s1")), "t", { traceparent })
          const [message] = yield* collect(events, 1)
          assert.strictEqual(message!.headers.traceparent, traceparent)

          const many: Record<string, string> = {}
          for (let i = 0; i <= Transport.headerLimits.count; i++) many[`X-H${i}`] = "v"
          assert.strictEqual(thrown(() => transport.publish(subject, "x", many)).reason, "InvalidArgument")
          const huge = { tracestate: "a".repeat(Transport.headerLimits.bytes) }
          assert.strictEqual((yield* rejection(transport.request(subject, "x", { timeoutMs: 5_000, headers: huge }))).reason, "InvalidArgument")
          assert.lengthOf(seen, 2)
        })
      ))

    it.scopedLive("no responders: a TransportError NoResponders at once, not a timeout", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const prefix = freshPrefix()
          const error = yield* rejection(transport.request(Subject.sessionCall(prefix, sid("nobody")), "hi", { timeoutMs: 20_000 }))
          assert.strictEqual(error.reason, "NoResponders")
          assert.strictEqual(error.subject, Subject.sessionCall(prefix, sid("nobody")))
          const viaEffect = yield* Effect.flip(Transport.request(Subject.sessionCall(prefix, sid("nobody")), "hi", { timeoutMs: 20_000 }))
          assert.strictEqual(viaEffect.reason, "NoResponders")
        })
      ))

    it.scopedLive("a responder that does not answer: TransportError Timeout after timeoutMs", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const subject = Subject.sessionCall(freshPrefix(), sid("slow"))
          yield* transport.serve(subject, { concurrency: 1, graceMs: 0 }, () => new Promise<never>(() => {}))
          const error = yield* rejection(transport.request(subject, "hi", { timeoutMs: 150 }))
          assert.strictEqual(error.reason, "Timeout")
        })
      ))

    it.scopedLive("an aborted signal cancels the request: TransportError Cancelled; an already aborted one sends nothing", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const subject = Subject.sessionCall(freshPrefix(), sid("s1"))
          const started = yield* Deferred.make<void>()
          let calls = 0
          yield* transport.serve(subject, { concurrency: 2, graceMs: 0 }, () => {
            calls++
            Deferred.unsafeDone(started, Exit.void)
            return new Promise<never>(() => {})
          })
          const controller = new AbortController()
          const pending = transport.request(subject, "hi", { timeoutMs: 20_000, signal: controller.signal })
          yield* Deferred.await(started)
          controller.abort()
          assert.strictEqual((yield* rejection(pending)).reason, "Cancelled")

          const aborted = AbortSignal.abort()
          assert.strictEqual((yield* rejection(transport.request(subject, "again", { timeoutMs: 20_000, signal: aborted }))).reason, "Cancelled")
          // A request on the same transport as a barrier: had "again" been sent, the handler would have seen it by now.
          const barrier = Subject.sessionManage(freshPrefix(), sid("barrier"))
          yield* transport.serve(barrier, { concurrency: 1 }, echo)
          yield* Effect.promise(() => transport.request(barrier, "sync", { timeoutMs: 5_000 }))
          assert.strictEqual(calls, 1)
          // The Effect form: interrupting the fiber cancels the request.
          const fiber = yield* Effect.fork(Transport.request(subject, "effect", { timeoutMs: 20_000 }))
          assert.isTrue(Exit.isInterrupted(yield* Fiber.interrupt(fiber)))
        })
      ))

    it.scopedLive("a queue group: each message goes to exactly one member, and both members get some", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const prefix = freshPrefix()
          const subject = Subject.workerInvoke(prefix, Ids.poolName("default"), "python")
          const counts = { a: 0, b: 0 }
          yield* transport.serve(subject, { queue: "workers", concurrency: 8 }, () => {
            counts.a++
            return "a"
          })
          yield* transport.serve(subject, { queue: "workers", concurrency: 8 }, () => {
            counts.b++
            return "b"
          })
          const observer = yield* transport.subscribe(subject)
          const total = 40
          const replies = yield* Effect.promise(() =>
            Promise.all(Array.from({ length: total }, (_, i) => transport.request(subject, String(i), { timeoutMs: 5_000 })))
          )
          const byMember = { a: 0, b: 0 }
          for (const reply of replies) byMember[Transport.text(reply) as "a" | "b"]++
          assert.strictEqual(counts.a + counts.b, total)
          assert.deepStrictEqual(byMember, counts)
          assert.isAbove(counts.a, 0)
          assert.isAbove(counts.b, 0)
          // A subscriber outside the group sees every message once.
          const seen = texts(yield* collect(observer, total))
          assert.deepStrictEqual([...seen].sort((x, y) => Number(x) - Number(y)), Array.from({ length: total }, (_, i) => String(i)))
        })
      ))

    it.scopedLive("serve: no more handlers run at once than `concurrency`; beyond the backlog a request is answered Busy", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const prefix = freshPrefix()
          const subject = Subject.sessionCall(prefix, sid("bounded"))
          let running = 0
          let most = 0
          // The first handlers wait until three run at once; had the bound let a fourth start, it would be counted.
          let open!: () => void
          const threeRunning = new Promise<void>((resolve) => {
            open = resolve
          })
          yield* transport.serve(subject, { concurrency: 3 }, async (request) => {
            running++
            most = Math.max(most, running)
            if (running === 3) open()
            await threeRunning
            running--
            return Transport.text(request)
          })
          const replies = yield* Effect.promise(() =>
            Promise.all(Array.from({ length: 24 }, (_, i) => transport.request(subject, String(i), { timeoutMs: 10_000 })))
          )
          assert.deepStrictEqual(texts(replies), Array.from({ length: 24 }, (_, i) => String(i)))
          assert.strictEqual(most, 3)

          const gated = Subject.sessionCall(prefix, sid("gated"))
          const release = yield* Deferred.make<void>()
          yield* transport.serve(gated, { concurrency: 1, backlog: 1 }, async (request) => {
            await Effect.runPromise(Deferred.await(release))
            return Transport.text(request)
          })
          const first = transport.request(gated, "first", { timeoutMs: 10_000 })
          const second = transport.request(gated, "second", { timeoutMs: 10_000 })
          const third = yield* rejection(transport.request(gated, "third", { timeoutMs: 10_000 }))
          assert.strictEqual(third.reason, "Busy")
          yield* Deferred.succeed(release, undefined)
          assert.deepStrictEqual(texts(yield* Effect.promise(() => Promise.all([first, second]))), ["first", "second"])
        })
      ))

    it.scopedLive("a handler that throws is answered ResponderFailed, and the responder keeps serving", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const subject = Subject.sessionManage(freshPrefix(), sid("s1"))
          yield* transport.serve(subject, { concurrency: 2 }, (request) => {
            const said = Transport.text(request)
            if (said === "throw") throw new Error("boom")
            if (said === "reject") return Promise.reject(new Error("bang"))
            if (said === "nonsense") return 42 as unknown as Transport.Reply
            return "fine"
          })
          const thrownError = yield* rejection(transport.request(subject, "throw", { timeoutMs: 5_000 }))
          assert.strictEqual(thrownError.reason, "ResponderFailed")
          assert.include(thrownError.detail, "boom")
          assert.strictEqual((yield* rejection(transport.request(subject, "reject", { timeoutMs: 5_000 }))).reason, "ResponderFailed")
          assert.strictEqual((yield* rejection(transport.request(subject, "nonsense", { timeoutMs: 5_000 }))).reason, "ResponderFailed")
          assert.strictEqual(Transport.text(yield* Effect.promise(() => transport.request(subject, "ok", { timeoutMs: 5_000 }))), "fine")
        })
      ))

    it.scopedLive("payloads: exactly maxPayload (headers counted) passes; one byte more is refused before the wire", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const prefix = freshPrefix()
          const max = transport.maxPayload()
          assert.isAbove(max, 1_000)
          const subject = Subject.profile(prefix, sid("big"))
          const stream = yield* transport.subscribe(subject)
          const headers = { a: "b" }
          // NATS/1.0\r\n + "a: b\r\n" + \r\n
          const headerBytes = 10 + 6 + 2

          const tooBig = thrown(() => transport.publish(subject, new Uint8Array(max + 1)))
          assert.strictEqual(tooBig.reason, "PayloadTooLarge")
          assert.strictEqual(thrown(() => transport.publish(subject, new Uint8Array(max - headerBytes + 1), headers)).reason, "PayloadTooLarge")
          assert.strictEqual(
            (yield* rejection(transport.request(Subject.sessionCall(prefix, sid("x")), "x".repeat(max + 1), { timeoutMs: 5_000 }))).reason,
            "PayloadTooLarge"
          )
          transport.publish(subject, new Uint8Array(max))
          transport.publish(subject, new Uint8Array(max - headerBytes), headers)
          transport.publish(subject, "sentinel")
          const received = yield* collect(stream, 3)
          assert.deepStrictEqual(received.map((message) => message.data.length), [max, max - headerBytes, 8])

          // A reply too large for the wire is answered PayloadTooLarge by the responder.
          const replying = Subject.sessionCall(prefix, sid("replies"))
          yield* transport.serve(replying, { concurrency: 1 }, () => new Uint8Array(max + 1))
          assert.strictEqual((yield* rejection(transport.request(replying, "x", { timeoutMs: 5_000 }))).reason, "PayloadTooLarge")
        })
      ))

    it.scopedLive("closing a scope stops its responder (NoResponders after) and ends its subscription's stream", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const prefix = freshPrefix()
          const subject = Subject.sessionCall(prefix, sid("scoped"))
          const scope = yield* Scope.make()
          yield* Scope.extend(transport.serve(subject, { concurrency: 1 }, echo), scope)
          const stream = yield* Scope.extend(transport.subscribe(Subject.sessionEvents(prefix, sid("scoped"))), scope)
          const reading = yield* Effect.fork(Stream.runCollect(stream))
          assert.strictEqual(Transport.text(yield* Effect.promise(() => transport.request(subject, "x", { timeoutMs: 5_000 }))), "echo:x")
          transport.publish(Subject.events(prefix, sid("scoped")), "before")
          // The request is a barrier: the event was delivered before its reply came back.
          yield* Effect.promise(() => transport.request(subject, "barrier", { timeoutMs: 5_000 }))
          yield* Scope.close(scope, Exit.void)
          const read = yield* Fiber.join(reading).pipe(Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("the stream did not end") }))
          assert.deepStrictEqual(texts(Chunk.toArray(read)), ["before"])
          assert.strictEqual((yield* rejection(transport.request(subject, "x", { timeoutMs: 5_000 }))).reason, "NoResponders")
        })
      ))

    it.scopedLive("closing drains: a request sent just before the responder's scope closes is still answered", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const subject = Subject.sessionCall(freshPrefix(), sid("last"))
          const scope = yield* Scope.make()
          yield* Scope.extend(transport.serve(subject, { concurrency: 1 }, echo), scope)
          const pending = transport.request(subject, "last", { timeoutMs: 5_000 }).then(Transport.text, (error: TransportError) => error.reason)
          yield* Scope.close(scope, Exit.void)
          assert.strictEqual(yield* Effect.promise(() => pending), "echo:last")
        })
      ))

    it.scopedLive("closing drains: a request taken before the close is answered; past the grace it is answered Closed", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const prefix = freshPrefix()
          for (const [graceMs, expect] of [[5_000, "answered"], [0, "Closed"]] as const) {
            const subject = Subject.sessionCall(prefix, sid(`drain${graceMs}`))
            const scope = yield* Scope.make()
            const started = yield* Deferred.make<void>()
            const release = yield* Deferred.make<void>()
            let sawAbort = false
            yield* Scope.extend(
              transport.serve(subject, { concurrency: 1, graceMs }, async (request) => {
                request.signal.addEventListener("abort", () => {
                  sawAbort = true
                })
                Deferred.unsafeDone(started, Exit.void)
                await Effect.runPromise(Deferred.await(release))
                return "answered"
              }),
              scope
            )
            const pending = transport.request(subject, "x", { timeoutMs: 10_000 }).then(Transport.text, (error: TransportError) => error.reason)
            yield* Deferred.await(started)
            const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
            if (graceMs > 0) yield* Deferred.succeed(release, undefined)
            yield* Fiber.join(closing)
            assert.strictEqual(yield* Effect.promise(() => pending), expect)
            assert.strictEqual(sawAbort, graceMs === 0)
            yield* Deferred.succeed(release, undefined)
          }
        })
      ))

    it.scopedLive("a slow subscriber is bounded: it keeps the newest bufferSize messages and is told how many it lost", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const prefix = freshPrefix()
          const barrier = Subject.sessionCall(prefix, sid("barrier"))
          yield* transport.serve(barrier, { concurrency: 1 }, echo)
          const subject = Subject.profile(prefix, sid("firehose"))
          const stream = yield* transport.subscribe(subject, { bufferSize: 5 })
          for (let i = 0; i < 50; i++) transport.publish(subject, String(i))
          yield* Effect.promise(() => transport.request(barrier, "sync", { timeoutMs: 5_000 }))
          transport.publish(subject, "50")
          yield* Effect.promise(() => transport.request(barrier, "sync", { timeoutMs: 5_000 }))
          const read = yield* collect(stream, 5)
          assert.deepStrictEqual(texts(read), ["46", "47", "48", "49", "50"])
          assert.deepStrictEqual(read.map((message) => message.dropped), [46, 0, 0, 0, 0])
        })
      ))

    it.scopedLive("closing the transport: subscriptions fail Closed, later calls fail Closed", () =>
      Effect.gen(function*() {
        const prefix = freshPrefix()
        const layerScope = yield* Scope.make()
        const context = yield* LayerModule.buildWithScope(makeLayer(), layerScope)
        const transport = Context.get(context, Transport.Transport)
        const stream = yield* transport.subscribe(Subject.allEvents(prefix))
        const reading = yield* Effect.fork(Stream.runCollect(stream))
        yield* Scope.close(layerScope, Exit.void)
        const error = yield* Fiber.join(reading).pipe(
          Effect.flip,
          Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("the stream did not end") })
        )
        assert.strictEqual(error.reason, "Closed")
        assert.strictEqual((yield* rejection(transport.request(Subject.sessionCall(prefix, sid("s")), "x", { timeoutMs: 5_000 }))).reason, "Closed")
        assert.strictEqual(thrown(() => transport.publish(Subject.sessionCall(prefix, sid("s")), "x")).reason, "Closed")
      }))

    it.scopedLive("malformed subjects, queue groups, headers and options are InvalidArgument", () =>
      withTransport((transport) =>
        Effect.gen(function*() {
          const prefix = freshPrefix()
          const subject = Subject.sessionCall(prefix, sid("s"))
          for (const bad of ["", "a..b", "a.*", "a.>", "a b", "a.b."]) {
            assert.strictEqual(thrown(() => transport.publish(bad as Subject.Subject, "x")).reason, "InvalidArgument")
          }
          assert.strictEqual(thrown(() => transport.publish(subject, "x", { "Bad Name": "x" })).reason, "InvalidArgument")
          assert.strictEqual(thrown(() => transport.publish(subject, "x", { "X-Ok": "line\r\nbreak" })).reason, "InvalidArgument")
          assert.strictEqual((yield* rejection(transport.request(subject, "x", { timeoutMs: 0 }))).reason, "InvalidArgument")
          for (const pattern of ["a.>.b", "a.b*", ""]) {
            const error = yield* Effect.flip(transport.subscribe(pattern as Subject.Pattern))
            assert.strictEqual(error.reason, "InvalidArgument")
          }
          assert.strictEqual((yield* Effect.flip(transport.serve(subject, { concurrency: 0 }, echo))).reason, "InvalidArgument")
          assert.strictEqual((yield* Effect.flip(transport.serve(subject, { concurrency: 1, queue: "a b" }, echo))).reason, "InvalidArgument")
        })
      ))
  })
