/**
 * The cost-nothing path: a runtime without `@jitbox/otel` installed (the embedded runtime: a
 * session, a worker, a composed call crossing to the worker and back) sends no trace headers,
 * makes no span (a global OpenTelemetry tracer provider is registered and sees none) and
 * registers no jitbox metric. The same runtime with `Otel.layer` in its context does all three.
 */
import { assert, describe, it } from "@effect/vitest"
import { Metrics, Otel } from "@jitbox/otel"
import { Embedded, Ids, RemoteSession, type SessionApi, Subject, TraceContext, Transport } from "@jitbox/runtime"
import * as Api from "@opentelemetry/api"
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Stream from "effect/Stream"

const doubleSource = `export const double = tool({
  description: "Doubles a number.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }) => value * 2)`

const outerSource = `export const outer = tool({
  description: "Doubles a number on another call and adds one.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }) => (await harness.callTool("double", { value })) + 1)`

const take = (stream: Stream.Stream<Transport.Message, unknown>, count: number) =>
  Effect.map(Stream.runCollect(Stream.take(stream, count)), Chunk.toReadonlyArray)

/** A global tracer provider whose spans land in the returned exporter (the tests disable it at their end). */
const globalExporter = (): InMemorySpanExporter => {
  const exporter = new InMemorySpanExporter()
  Api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }))
  return exporter
}

/** Creates `double` and `outer` (which calls `double` and adds one) in `session`, then calls `outer(20)`. */
const composedCall = (session: Pick<SessionApi.SessionApi, "createTool" | "callTool">) =>
  Effect.promise(async () => {
    await session.createTool({ entrypoint: "double", language: "javascript", source: doubleSource })
    await session.createTool({ entrypoint: "outer", language: "javascript", source: outerSource })
    return await session.callTool("outer", { value: 20 })
  })

describe("without @jitbox/otel", () => {
  it.scopedLive("a composed call across a worker carries no trace headers, makes no span and no jitbox metric", () =>
    Effect.gen(function*() {
      const exporter = globalExporter()
      assert.strictEqual(yield* TraceContext.current, TraceContext.none)
      const runtime = yield* Embedded.make({ namespace: "absent", publishStreams: false, harness: { policy: { allowedLanguages: ["JavaScript"] } } })
      const invokes = yield* runtime.transport.subscribe(Subject.workerInvoke(runtime.prefix, Ids.poolName("default"), "javascript"))
      const nested = yield* runtime.transport.subscribe(Subject.sessionNested(runtime.prefix, Ids.sessionId("s1")))
      const session = runtime.sessions.get("s1")
      assert.strictEqual(yield* composedCall(session), 41)
      // two activations, then the invocations of outer and double
      const sent = [...yield* take(invokes, 4), ...yield* take(nested, 1)]
      assert.deepStrictEqual(sent.map((message) => message.headers), [{}, {}, {}, {}, {}])
      assert.lengthOf(exporter.getFinishedSpans(), 0)
      assert.deepStrictEqual(Metric.unsafeSnapshot().filter((pair) => pair.metricKey.name.startsWith("jitbox.")), [])
      Api.trace.disable()
    }), 60_000)

  it.scopedLive("the same runtime with Otel.layer in its context sends trace headers, makes spans and counts calls", () =>
    Effect.gen(function*() {
      const exporter = globalExporter()
      const runtime = yield* Embedded.make({ namespace: "present", publishStreams: false, harness: { policy: { allowedLanguages: ["JavaScript"] } } })
        .pipe(Effect.provide(Otel.layer()))
      const invokes = yield* runtime.transport.subscribe(Subject.workerInvoke(runtime.prefix, Ids.poolName("default"), "javascript"))
      const nested = yield* runtime.transport.subscribe(Subject.sessionNested(runtime.prefix, Ids.sessionId("s1")))
      const session = runtime.sessions.get("s1")
      assert.strictEqual(yield* composedCall(session), 41)
      const sent = [...(yield* take(invokes, 4)).slice(2), ...yield* take(nested, 1)]
      for (const message of sent) assert.match(message.headers.traceparent ?? "", /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
      const names = exporter.getFinishedSpans().map((span) => span.name).sort()
      assert.deepStrictEqual(names, ["execute_tool double", "execute_tool outer", "invoke double", "invoke outer"])
      assert.isNotEmpty(Metric.unsafeSnapshot().filter((pair) => pair.metricKey.name === "jitbox.calls"))
      Api.trace.disable()
    }), 60_000)

  it.scopedLive("with the runtime's stream publisher on, both the published events and the spans see every call; the session's lease is gauged", () =>
    Effect.gen(function*() {
      const exporter = globalExporter()
      const runtime = yield* Embedded.make({ namespace: "streams", harness: { policy: { allowedLanguages: ["JavaScript"] } } })
        .pipe(Effect.provide(Otel.layer()))
      const leases = runtime.leases
      const remote = yield* RemoteSession.make("s1", { prefix: runtime.prefix }).pipe(Effect.provideService(Transport.Transport, runtime.transport))
      const completed = yield* (yield* RemoteSession.events(remote)).pipe(
        Stream.filter((event) => event.name === "jit_tool_completed"),
        Stream.take(4),
        Stream.runCollect,
        Effect.fork
      )
      const session = runtime.sessions.get("s1")
      assert.strictEqual(yield* composedCall(session), 41)
      const published = Chunk.toReadonlyArray(yield* completed).map((event) => event.name === "jit_tool_completed" ? event.payload.tool_name : "")
      // the two tools created through the application API announce themselves as create_tool would
      assert.deepStrictEqual([...published].sort(), ["create_tool", "create_tool", "double", "outer"])
      const names = exporter.getFinishedSpans().map((span) => span.name).sort()
      assert.deepStrictEqual(names, ["execute_tool double", "execute_tool outer", "invoke double", "invoke outer"])
      const granted = leases.get("s1")!.invocationsLeft!()
      yield* Metrics.watchLeases(leases, { intervalMs: 10 })
      const left = () =>
        Metric.unsafeSnapshot().find((pair) =>
          pair.metricKey.name === "jitbox.lease.invocations_left" && pair.metricKey.tags.some((tag) => tag.value === "s1")
        )
      for (let i = 0; i < 200 && left() === undefined; i++) yield* Effect.sleep("10 millis")
      assert.strictEqual(Number((left()!.metricState as unknown as { value: number }).value), granted)
      Api.trace.disable()
    }), 60_000)
})
