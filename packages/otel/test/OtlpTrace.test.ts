/**
 * One trace across processes, through the real OTLP/HTTP exporters: sessions here (this process)
 * and a worker in its own process, over a real nats-server, each exporting to the same local
 * receiver. A code tool composing another code tool forms one trace: outer dispatch span →
 * the worker's invocation span → the nested dispatch span here → the worker's invocation of it;
 * the spans carry the call's attributes, a failure is an error span, and the metrics arrive. A
 * `RemoteSession` given the caller's trace context puts the whole composed call under the caller's span.
 */
import { assert, describe, it } from "@effect/vitest"
import { Otel, Propagation } from "@jitbox/otel"
import { Ids, RemoteCodeRunner, RemoteSession, Sessions, SnapshotStore, Subject, Transport } from "@jitbox/runtime"
import * as Api from "@opentelemetry/api"
import { NatsServer } from "@jitbox/testing"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { afterAll, beforeAll } from "vitest"
import * as NatsConnection from "../../nats/src/NatsConnection.js"
import * as NatsTransport from "../../nats/src/NatsTransport.js"
import { exited, spawnReady, waitUntil } from "../../nats/test/fixtures/processes.js"
import { type ReceivedSpan, receiver } from "./fixtures/otlpReceiver.js"
import { otlpSdk } from "./fixtures/otlpSdk.js"
import * as path from "node:path"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

const doubleSource = `export const double = tool({
  description: "Doubles a number.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }: { value: number }) => value * 2)`

const outerSource = `export const outer = tool({
  description: "Doubles a number on another call and adds one.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
}, async ({ value }: { value: number }) => (await harness.callTool("double", { value })) + 1)`

const boomSource = `export const boom = tool({
  description: "Fails.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: {} }
}, async () => { throw new RangeError("no") })`

/** Sessions in this process on the namespace's workers, with jitbox's OpenTelemetry exporting to `url`. */
const sessionsHere = (url: string, prefix: Subject.Prefix) =>
  Effect.gen(function*() {
    const transport = yield* Layer.build(NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer({ servers: server!.url, reconnectTimeWaitMs: 100 }))))
    const otel = yield* Layer.build(Otel.layer().pipe(Layer.provide(otlpSdk(url, "jitbox-session"))))
    const runner = yield* Layer.build(RemoteCodeRunner.layer({ prefix })).pipe(Effect.provide(Context.merge(transport, otel)))
    const context = Context.add(Context.merge(Context.merge(transport, runner), otel), SnapshotStore.SnapshotStore, SnapshotStore.makeMemory())
    const sessions = yield* Sessions.make({ prefix, harness: { codeExecution: "sandboxed" }, idleTimeout: "10 minutes" }).pipe(Effect.provide(context))
    return { sessions, transport: Context.get(transport, Transport.Transport) }
  })

/** The span of an orchestrator in another process that calls the session through a `RemoteSession`. */
const orchestrator = Api.trace.setSpanContext(Api.ROOT_CONTEXT, { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1 })

const one = (spans: ReadonlyArray<ReceivedSpan>, name: string, service: string): ReceivedSpan => {
  const found = spans.filter((span) => span.name === name && span.service === service)
  assert.lengthOf(found, 1, `one span ${name} from ${service}; got ${JSON.stringify(spans.map((s) => [s.service, s.name]))}`)
  return found[0]!
}

describe("OpenTelemetry across a session and a worker process", () => {
  it.live("a composed call across a worker forms one trace with the right parents; attributes, errors and metrics arrive over OTLP", () =>
    Effect.gen(function*() {
      const otlp = yield* receiver
      const namespace = `otel_${Math.random().toString(36).slice(2, 8)}`
      const prefix = Subject.prefix(Ids.namespace(namespace))
      const worker = yield* spawnReady(path.join(import.meta.dirname, "fixtures", "otelWorkerProcess.ts"), {
        JITBOX_SERVER: server!.url,
        JITBOX_NAMESPACE: namespace,
        JITBOX_OTLP_URL: otlp.url
      })
      const { sessions, transport } = yield* sessionsHere(otlp.url, prefix)
      const session = sessions.get("s1")
      yield* Effect.promise(() => session.createTool({ entrypoint: "double", source: doubleSource }))
      yield* Effect.promise(() => session.createTool({ entrypoint: "outer", source: outerSource }))
      yield* Effect.promise(() => session.createTool({ entrypoint: "boom", source: boomSource }))
      assert.strictEqual(yield* Effect.promise(() => session.callTool("outer", { value: 20 })), 41)
      const failure = yield* Effect.promise(() => session.callTool("boom", {}).then(() => undefined, (error: unknown) => error))
      assert.isDefined(failure)
      const remote = new RemoteSession.RemoteSession(transport, "s1", { prefix, traceHeaders: () => Propagation.current(orchestrator) })
      assert.strictEqual(yield* Effect.promise(() => remote.callTool("outer", { value: 1 })), 3)

      yield* waitUntil("the worker reported its capacity", () => otlp.points.some((p) => p.name === "jitbox.worker.capacity"), 20_000)
      worker.child.kill("SIGTERM")
      assert.strictEqual(yield* exited(worker.child), 0)
      const names = ["execute_tool outer", "execute_tool double", "execute_tool boom"]
      const joined = () => otlp.spans.filter((span) => span.traceId === "0af7651916cd43dd8448eb211c80319c")
      yield* waitUntil("every span arrived", () =>
        names.every((name) => otlp.spans.some((span) => span.name === name)) &&
        ["invoke outer", "invoke double", "invoke boom"].every((name) => otlp.spans.some((span) => span.name === name)) &&
        joined().length === 4, 20_000)
      yield* waitUntil("the session's call metrics arrived", () =>
        otlp.points.some((p) => p.name === "jitbox.calls" && p.service === "jitbox-session" && p.attributes["gen_ai.tool.name"] === "boom") &&
        otlp.points.some((p) => p.name === "jitbox.calls" && p.service === "jitbox-session" && p.attributes["gen_ai.tool.name"] === "outer" && p.value === 2), 20_000)
      assert.deepStrictEqual(otlp.refused, [])

      const spans = otlp.spans.filter((span) => span.traceId !== "0af7651916cd43dd8448eb211c80319c")
      const outer = one(spans, "execute_tool outer", "jitbox-session")
      const invokeOuter = one(spans, "invoke outer", "jitbox-worker")
      const double = one(spans, "execute_tool double", "jitbox-session")
      const invokeDouble = one(spans, "invoke double", "jitbox-worker")
      assert.deepStrictEqual([invokeOuter.traceId, double.traceId, invokeDouble.traceId], [outer.traceId, outer.traceId, outer.traceId])
      assert.isUndefined(outer.parentSpanId)
      assert.strictEqual(invokeOuter.parentSpanId, outer.spanId)
      assert.strictEqual(double.parentSpanId, invokeOuter.spanId)
      assert.strictEqual(invokeDouble.parentSpanId, double.spanId)

      const outerCallId = outer.attributes["gen_ai.tool.call.id"]
      assert.isString(outerCallId)
      assert.deepInclude(double.attributes, {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "double",
        "jitbox.tool.origin": "code",
        "jitbox.call.status": "completed",
        "jitbox.call.parent_id": outerCallId,
        "jitbox.call.depth": 2,
        "jitbox.session.id": "s1"
      })
      assert.strictEqual(outer.attributes["jitbox.call.depth"], 1)
      assert.notProperty(outer.attributes, "jitbox.call.parent_id")
      assert.strictEqual(invokeDouble.attributes["jitbox.worker.id"], `worker-${worker.pid}`)
      assert.strictEqual(invokeDouble.attributes["jitbox.invocation.outcome"], "ok")

      const boom = one(spans, "execute_tool boom", "jitbox-session")
      const invokeBoom = one(spans, "invoke boom", "jitbox-worker")
      assert.strictEqual(invokeBoom.parentSpanId, boom.spanId)
      assert.notStrictEqual(boom.traceId, outer.traceId)
      assert.strictEqual(boom.statusCode, 2)
      assert.strictEqual(boom.attributes["jitbox.call.status"], "failed")
      assert.isString(boom.attributes["error.type"])
      assert.strictEqual(invokeBoom.statusCode, 2)
      assert.strictEqual(invokeBoom.attributes["jitbox.invocation.outcome"], "failed")

      // the orchestrator's span is the parent of the remote call, and the whole composition is in its trace
      const remoteOuter = one(joined(), "execute_tool outer", "jitbox-session")
      assert.strictEqual(remoteOuter.parentSpanId, "b7ad6b7169203331")
      const remoteInvokeOuter = one(joined(), "invoke outer", "jitbox-worker")
      const remoteDouble = one(joined(), "execute_tool double", "jitbox-session")
      assert.strictEqual(remoteInvokeOuter.parentSpanId, remoteOuter.spanId)
      assert.strictEqual(remoteDouble.parentSpanId, remoteInvokeOuter.spanId)
      assert.strictEqual(one(joined(), "invoke double", "jitbox-worker").parentSpanId, remoteDouble.spanId)

      const calls = otlp.points.filter((p) => p.name === "jitbox.calls" && p.service === "jitbox-session")
      const count = (tool: string, status: string) =>
        Math.max(0, ...calls.filter((p) => p.attributes["gen_ai.tool.name"] === tool && p.attributes["jitbox.call.status"] === status).map((p) => p.value))
      assert.deepStrictEqual([count("outer", "completed"), count("double", "completed"), count("boom", "failed")], [2, 2, 1])
      assert.isTrue(otlp.points.some((p) => p.name === "jitbox.call.duration" && p.attributes["gen_ai.tool.name"] === "double" && p.value >= 1))
      assert.isTrue(otlp.points.some((p) => p.name === "jitbox.calls.in_flight" && p.attributes["jitbox.tool.origin"] === "code"))
      const capacity = otlp.points.filter((p) => p.name === "jitbox.worker.capacity" && p.service === "jitbox-worker")
      assert.isTrue(capacity.every((p) => p.attributes["jitbox.worker.id"] === `worker-${worker.pid}`))
      assert.isAbove(capacity[0]!.value, 0)
      assert.isTrue(otlp.points.some((p) => p.name === "jitbox.worker.invocations.in_flight" && p.service === "jitbox-worker"))
    }).pipe(Effect.scoped), 120_000)
})
