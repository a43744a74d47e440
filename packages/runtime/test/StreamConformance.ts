/**
 * Event and profile streams over a transport, as one suite: call it with a name and a factory of
 * the transport layer (StreamPublisher.test.ts on the in-memory transport,
 * packages/nats/test/NatsStreamPublisher.test.ts on a real nats-server). Each test uses a
 * namespace of its own.
 */
import { Harness, tool } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Ids from "../src/Ids.js"
import * as RemoteSession from "../src/RemoteSession.js"
import * as Sessions from "../src/Sessions.js"
import * as SnapshotStore from "../src/SnapshotStore.js"
import * as StreamProtocol from "../src/StreamProtocol.js"
import * as StreamPublisher from "../src/StreamPublisher.js"
import * as Subject from "../src/Subject.js"
import * as Transport from "../src/Transport.js"
import { TransportError } from "../src/TransportError.js"
import { add, twiceSource } from "../../core/test/fixtures.js"

let namespaces = 0
const freshPrefix = () => Subject.prefix(Ids.namespace(`strm${++namespaces}_${Math.random().toString(36).slice(2, 8)}`))

/** A harness with \`twice\` (a code tool run in process) over the base tool \`add\`. */
const harnessWithTwice = (sessionId: string, sinks: Context.Context<never>) =>
  Effect.gen(function*() {
    const harness = yield* Harness.makeScoped({ tools: [add], sessionId, codeExecution: "trusted" }).pipe(Effect.provide(sinks))
    yield* Effect.promise(() => harness.createTool({ entrypoint: "twice", source: twiceSource }))
    return harness
  })

/** One item of a batch, with the subject and the kind of its batch. */
interface Received {
  readonly subject: string
  readonly kind: string
  readonly event?: { name: string; payload: Record<string, unknown> }
  readonly record?: Record<string, unknown>
}

const decodeEventBatch = Schema.decodeUnknownSync(Schema.parseJson(StreamProtocol.EventBatch))
const decodeRecordBatch = Schema.decodeUnknownSync(Schema.parseJson(StreamProtocol.RecordBatch))

/** A batch's items, each decoded with the batch schema of its kind (a message that does not decode fails the test). */
const itemsOf = (message: Transport.Message): Array<Received> => {
  const text = Transport.text(message)
  const kind = (JSON.parse(text) as { kind: string }).kind
  return kind === "events"
    ? decodeEventBatch(text).events.map((event) => ({ subject: message.subject, kind, event }))
    : decodeRecordBatch(text).records.map((record) => ({ subject: message.subject, kind, record }))
}

/** The first `count` items of the batches on `pattern`, read by a fiber subscribed before this returns. */
const collect = (transport: Transport.TransportShape, pattern: Subject.Pattern, count: number) =>
  Effect.gen(function*() {
    const stream = yield* transport.subscribe(pattern)
    return yield* stream.pipe(
      Stream.flatMap((message) => Stream.fromIterable(itemsOf(message))),
      Stream.take(count),
      Stream.runCollect,
      Effect.map(Chunk.toReadonlyArray),
      Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error(`fewer than ${count} messages on ${pattern}`) }),
      Effect.forkScoped
    )
  })

const started = (session: string, n: number) => ({
  type: "CUSTOM" as const,
  name: "jit_tool_started" as const,
  payload: { session_id: session, tool_call_id: `call_${n}`, tool_name: "add", origin: "text" as const }
})

export const streamConformance = (name: string, makeLayer: () => Layer.Layer<Transport.Transport, TransportError>) =>
  describe(`Event and profile streams: ${name}`, () => {
    it.scopedLive("a subscriber of one session and one of the namespace both receive a call's events and its record", () =>
      Effect.gen(function*() {
        const prefix = freshPrefix()
        const transportContext = yield* Layer.build(makeLayer())
        const transport = Context.get(transportContext, Transport.Transport)
        const session = Ids.sessionId("s1")
        const one = yield* collect(transport, Subject.sessionEvents(prefix, session), 2)
        const all = yield* collect(transport, Subject.allEvents(prefix), 2)
        const records = yield* collect(transport, Subject.profile(prefix, session), 2)
        const sinks = yield* Layer.build(StreamPublisher.layer({ prefix })).pipe(Effect.provide(transportContext))
        const harness = yield* harnessWithTwice(session, sinks)
        assert.strictEqual(yield* Effect.promise(() => harness.callTool("twice", { value: 2 })), 4)
        for (const received of [yield* Fiber.join(one), yield* Fiber.join(all)]) {
          assert.deepStrictEqual(received.map((m) => [m.subject, m.kind, m.event?.name]), [
            [`${prefix}.events.s1`, "events", "jit_tool_started"],
            [`${prefix}.events.s1`, "events", "jit_tool_completed"]
          ])
          assert.strictEqual(received[1]!.event?.payload.success, true)
          assert.strictEqual(received[0]!.event?.payload.tool_call_id, received[1]!.event?.payload.tool_call_id)
        }
        // One record per finished attempt: the nested base call first, then the code tool.
        const profile = yield* Fiber.join(records)
        assert.deepStrictEqual(profile.map((m) => [m.subject, m.kind, m.record?.tool_name, m.record?.depth, m.record?.status]), [
          [`${prefix}.profile.s1`, "records", "add", 2, "completed"],
          [`${prefix}.profile.s1`, "records", "twice", 1, "completed"]
        ])
        assert.strictEqual(profile[1]!.record?.session_id, "s1")
      }))

    it.scopedLive("in the context of Sessions, a remote call's events and records are published for the session it ran in", () =>
      Effect.gen(function*() {
        const prefix = freshPrefix()
        const transportContext = yield* Layer.build(makeLayer())
        const transport = Context.get(transportContext, Transport.Transport)
        const events = yield* collect(transport, Subject.allEvents(prefix), 2)
        const records = yield* collect(transport, Subject.allProfiles(prefix), 2)
        const sinks = yield* Layer.build(StreamPublisher.layer({ prefix })).pipe(Effect.provide(transportContext))
        yield* Sessions.make({ prefix, harness: { tools: [add] } }).pipe(
          Effect.provide(Context.merge(Context.add(transportContext, SnapshotStore.SnapshotStore, SnapshotStore.makeMemory()), sinks))
        )
        const remote = new RemoteSession.RemoteSession(transport, "remote1", { prefix, timeoutMs: 10_000 })
        yield* Effect.promise(() => remote.createTool({ entrypoint: "twice", source: twiceSource }))
        assert.strictEqual(yield* Effect.promise(() => remote.callTool("twice", { value: 3 })), 6)
        assert.deepStrictEqual((yield* Fiber.join(events)).map((m) => [m.subject, m.event?.name, m.event?.payload.session_id]), [
          [`${prefix}.events.remote1`, "jit_tool_started", "remote1"],
          [`${prefix}.events.remote1`, "jit_tool_completed", "remote1"]
        ])
        assert.deepStrictEqual((yield* Fiber.join(records)).map((m) => [m.subject, m.record?.tool_name]), [
          [`${prefix}.profile.remote1`, "add"],
          [`${prefix}.profile.remote1`, "twice"]
        ])
      }))

    it.scopedLive("RemoteSession gives one session's events, decoded, as a Stream and to a listener; another session's are not among them", () =>
      Effect.gen(function*() {
        const prefix = freshPrefix()
        const transportContext = yield* Layer.build(makeLayer())
        const transport = Context.get(transportContext, Transport.Transport)
        const sinks = yield* Layer.build(StreamPublisher.layer({ prefix })).pipe(Effect.provide(transportContext))
        yield* Sessions.make({ prefix, harness: { tools: [add] } }).pipe(
          Effect.provide(Context.merge(Context.add(transportContext, SnapshotStore.SnapshotStore, SnapshotStore.makeMemory()), sinks))
        )
        const remote = new RemoteSession.RemoteSession(transport, "watched", { prefix, timeoutMs: 10_000 })
        const other = new RemoteSession.RemoteSession(transport, "other", { prefix, timeoutMs: 10_000 })
        yield* Effect.promise(() => remote.createTool({ entrypoint: "twice", source: twiceSource }))
        yield* Effect.promise(() => other.createTool({ entrypoint: "twice", source: twiceSource }))
        const stream = yield* RemoteSession.events(remote)
        const taken = yield* Effect.fork(Stream.runCollect(Stream.take(stream, 2)))
        const heard: Array<string> = []
        const stop = yield* Effect.promise(() => remote.listen((event) => heard.push(`${event.name}:${(event.payload as { tool_name?: string }).tool_name}`)))
        assert.strictEqual(yield* Effect.promise(() => other.callTool("twice", { value: 1 })), 2)
        assert.strictEqual(yield* Effect.promise(() => remote.callTool("twice", { value: 3 })), 6)
        const events = [...(yield* Fiber.join(taken))]
        assert.deepStrictEqual(events.map((event) => [event.name, (event.payload as { session_id?: string }).session_id]), [
          ["jit_tool_started", "watched"],
          ["jit_tool_completed", "watched"]
        ])
        for (let i = 0; i < 200 && heard.length < 2; i++) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
        assert.deepStrictEqual(heard, ["jit_tool_started:twice", "jit_tool_completed:twice"])
        yield* Effect.promise(() => stop())
        assert.strictEqual(yield* Effect.promise(() => remote.callTool("twice", { value: 4 })), 8)
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
        assert.strictEqual(heard.length, 2, "nothing is heard after stop")
      }))

    it.scopedLive("a full queue drops, and the loss arrives in-band as jit_events_dropped with the exact count", () =>
      Effect.gen(function*() {
        const prefix = freshPrefix()
        const transportContext = yield* Layer.build(makeLayer())
        const transport = Context.get(transportContext, Transport.Transport)
        const received = yield* collect(transport, Subject.sessionEvents(prefix, Ids.sessionId("s2")), 6)
        const publisher = yield* StreamPublisher.make({ prefix, queueSize: 3 }).pipe(Effect.provide(transportContext))
        // Synchronously, as dispatch calls it: the drain cannot run in between.
        for (let n = 1; n <= 10; n++) publisher.events.emit(started("s2", n))
        assert.strictEqual(publisher.pending(), 3)
        yield* Effect.sleep("50 millis")
        publisher.events.emit(started("s2", 11))
        publisher.events.emit(started("s2", 12))
        const messages = yield* Fiber.join(received)
        assert.deepStrictEqual(messages.map((m) => m.event?.name === "jit_events_dropped" ? `dropped ${m.event.payload.dropped}` : m.event?.payload.tool_call_id), [
          "call_1",
          "call_2",
          "call_3",
          "dropped 7",
          "call_11",
          "call_12"
        ])
        assert.strictEqual(messages[3]!.subject, `${prefix}.events.s2`)
      }))

    it.scopedLive("a transport that refuses to publish does not hold up a call; the loss is reported once it recovers", () =>
      Effect.gen(function*() {
        const prefix = freshPrefix()
        const transportContext = yield* Layer.build(makeLayer())
        const transport = Context.get(transportContext, Transport.Transport)
        let broken = true
        let refused = 0
        const failing: Transport.TransportShape = {
          ...transport,
          publish: (subject, payload, headers) => {
            if (broken) {
              // the items of the batch, but not a loss notice
              const data = typeof payload === "string" ? new TextEncoder().encode(payload) : payload
              refused += itemsOf({ subject, data, headers: {}, dropped: 0 })
                .filter((item) => item.event?.name !== "jit_events_dropped").length
              throw new TransportError({ reason: "Closed", subject, detail: "the test broke it" })
            }
            transport.publish(subject, payload, headers)
          }
        }
        const received = yield* collect(transport, Subject.sessionEvents(prefix, Ids.sessionId("s3")), 1)
        const sinks = yield* Layer.build(StreamPublisher.layer({ prefix })).pipe(Effect.provide(Context.make(Transport.Transport, failing)))
        const harness = yield* harnessWithTwice("s3", sinks)
        for (let n = 0; n < 5; n++) assert.strictEqual(yield* Effect.promise(() => harness.callTool("twice", { value: n })), 2 * n)
        while (refused < 22) yield* Effect.sleep("10 millis")
        broken = false
        const [notice] = yield* Fiber.join(received)
        assert.strictEqual(notice!.event?.name, "jit_events_dropped")
        // Creating twice: create_tool's started and completed events; five calls: a started and a
        // completed event each, and two records (twice and its nested add).
        assert.strictEqual(notice!.event?.payload.dropped, 22)
      }))

    it.scopedLive("what one turn emits leaves as one batch per session and kind, in order; a batch over the bound is split, an item over it reported lost", () =>
      Effect.gen(function*() {
        const prefix = freshPrefix()
        const transportContext = yield* Layer.build(makeLayer())
        const transport = Context.get(transportContext, Transport.Transport)
        const messages: Array<Transport.Message> = []
        const stream = yield* transport.subscribe(Subject.allEvents(prefix))
        const reading = yield* Effect.forkScoped(Stream.runForEach(stream, (message) => Effect.sync(() => messages.push(message))))
        const publisher = yield* StreamPublisher.make({ prefix }).pipe(Effect.provide(transportContext))
        const long = (session: string, n: number) => ({ ...started(session, n), payload: { ...started(session, n).payload, tool_name: "x".repeat(1_000) } })
        // one turn: three small events of a and b, interleaved
        for (let n = 1; n <= 3; n++) {
          publisher.events.emit(started("a", n))
          publisher.events.emit(started("b", n))
        }
        yield* Effect.sleep("50 millis")
        assert.deepStrictEqual(messages.map((m) => [m.subject, itemsOf(m).map((item) => item.event?.payload.tool_call_id)]), [
          [`${prefix}.events.a`, ["call_1", "call_2", "call_3"]],
          [`${prefix}.events.b`, ["call_1", "call_2", "call_3"]]
        ])
        messages.length = 0
        // one turn over the bound: 150 events of about 1.1 KB, then one too large for any batch
        for (let n = 1; n <= 150; n++) publisher.events.emit(long("c", n))
        publisher.events.emit({ ...started("c", 151), payload: { ...started("c", 151).payload, tool_name: "y".repeat(StreamProtocol.maxBatchBytes) } })
        publisher.events.emit(started("c", 152))
        yield* Effect.sleep("50 millis")
        assert.isAbove(messages.length, 2)
        for (const message of messages) assert.isAtMost(message.data.length, StreamProtocol.maxBatchBytes)
        const items = messages.flatMap(itemsOf).map((item) => item.event?.name === "jit_events_dropped" ? `dropped ${item.event.payload.dropped}` : item.event?.payload.tool_call_id)
        assert.deepStrictEqual(items, [...Array.from({ length: 150 }, (_, i) => `call_${i + 1}`), "dropped 1", "call_152"])
        yield* Fiber.interrupt(reading)
      }))
  })
