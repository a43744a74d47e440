/**
 * Fault: the nats-server restarts (stopped, then started again on the same port) under load:
 * calls held open inside their tools across the outage, calls made during it, events emitted
 * during it, and calls after it.
 *
 * Proves, with a worker in its own process, sessions in this process publishing their events and
 * records on NATS (a `StreamPublisher`) and a client on its own connection: every connection
 * reconnects by itself; the calls in flight at the restart and those made during the outage all
 * end, with their result or a typed error (a `WireError`), never later than their own timeout
 * (none hangs); calls after the restart succeed; and every `jit_tool_started` event has its
 * `jit_tool_completed`, in the session's own event feed and on the NATS event subject, where
 * what the session emitted while the connection was down is reported by a `jit_events_dropped`
 * notice with its exact count.
 *
 * The observer of the NATS subject shares the publisher's connection, so it misses nothing the
 * publisher sent; and no call starts or ends at the instant the server stops. A message sent in
 * that instant can be lost without notice (NATS core delivers at most once), as can one sent to
 * an observer whose own connection is still reconnecting: neither is what this test is about.
 */
import { tool } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import { Ids, RemoteSession, StreamProtocol, Subject, Transport, WireError } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { afterAll, beforeAll } from "vitest"
import * as NatsConnection from "../../src/NatsConnection.js"
import * as NatsTransport from "../../src/NatsTransport.js"
import { add } from "../../../core/test/fixtures.js"
import { waitUntil, workerProcess } from "../fixtures/processes.js"
import { sessionsHere, type Tracked, track } from "../fixtures/sessionsHere.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

const waiting = new Set<number>()
let open!: () => void
const opened = new Promise<void>((resolve) => open = resolve)
const gate = tool(
  {
    name: "gate",
    description: "Answers n once the test opens the gate.",
    guidelines: "Use in tests.",
    parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }
  },
  async ({ n }: { n: number }) => {
    waiting.add(n)
    await opened
    return n
  }
)

const workJs = `export const work = tool({
  description: "Adds twice, with a pause between.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }) => {
  const doubled = await harness.callTool("add", { left: value, right: value })
  await new Promise((resolve) => setTimeout(resolve, 100))
  return await harness.callTool("add", { left: doubled, right: 1 })
})`

const heldJs = `export const held = tool({
  description: "Waits inside the tool for the session's gate.",
  guidelines: "Use in tests.",
  parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }
}, async ({ n }) => await harness.callTool("gate", { n }))`

/** A client's call timeout: the bound every call must end within. */
const callTimeoutMs = 8_000

interface Event {
  readonly name: string
  readonly id: string | undefined
  readonly dropped: number
}

const toEvent = (event: { name: string; payload: object }): Event => ({
  name: event.name,
  id: "tool_call_id" in event.payload ? String(event.payload.tool_call_id) : undefined,
  dropped: "dropped" in event.payload ? Number(event.payload.dropped) : 0
})

interface Call {
  readonly startedAt: number
  readonly call: Tracked<unknown>
  endedAt?: number
}

/** Started events with no completion, when no loss was reported. */
const unmatched = (events: ReadonlyArray<Event>) => {
  const completed = new Set(events.filter((event) => event.name === "jit_tool_completed").map((event) => event.id))
  const lossReported = events.some((event) => event.name === "jit_events_dropped")
  return events.filter((event) => event.name === "jit_tool_started" && !completed.has(event.id) && !lossReported)
}

/** Waits until `transport` refuses a publish: its client knows the connection is down. */
const refusing = (transport: Transport.TransportShape, what: string) =>
  waitUntil(`${what} noticing the outage`, () => {
    try {
      transport.publish(Subject.sessionCall(Subject.prefix(Ids.namespace("nobody")), Ids.sessionId("probe")), "probe")
      return false
    } catch {
      return true
    }
  }, 10_000)

describe("fault: the nats-server restarted under load", () => {
  it.live("clients reconnect, no call hangs, every started event completes or its loss is reported, and later calls succeed", () =>
    Effect.gen(function*() {
      const namespace = `nrst_${Math.random().toString(36).slice(2, 8)}`
      const prefix = Subject.prefix(Ids.namespace(namespace))
      const sessionId = Ids.sessionId("s1")
      yield* workerProcess(server!.url, namespace, { concurrency: 8, environments: 4 })
      const { sessions, transport: host } = yield* sessionsHere({
        server: server!.url,
        prefix,
        harness: { tools: [add, gate], codeExecution: "sandboxed" },
        publish: true
      })
      const local: Array<Event> = []
      yield* Effect.acquireRelease(
        Effect.sync(() => sessions.get(sessionId).events.listen((event) => local.push(toEvent(event)))),
        (stop) => Effect.sync(stop)
      )
      const wire: Array<Event> = []
      yield* (yield* host.subscribe(Subject.sessionEvents(prefix, sessionId), { bufferSize: 10_000 })).pipe(
        Stream.runForEach((message) => Effect.sync(() => wire.push(...StreamProtocol.decodeEvents(message.data).map(toEvent)))),
        Effect.ignore,
        Effect.forkScoped
      )
      const clientTransport = yield* Effect.map(NatsConnection.make({ servers: server!.url, reconnectTimeWaitMs: 100 }), NatsTransport.fromConnection)
      const client = new RemoteSession.RemoteSession(clientTransport, sessionId, { prefix, timeoutMs: callTimeoutMs })
      yield* Effect.promise(async () => {
        await client.createTool({ entrypoint: "work", language: "javascript", source: workJs })
        await client.createTool({ entrypoint: "held", language: "javascript", source: heldJs })
        await client.createTool({ kind: "text", name: "howto", description: "How to work.", source: "# Steps" })
      })

      const calls: Array<Call> = []
      const call = (name: string, args: unknown) => {
        const entry: Call = { startedAt: Date.now(), call: track(client.callTool(name, args)) }
        entry.call.promise.then(() => entry.endedAt = Date.now(), () => entry.endedAt = Date.now())
        calls.push(entry)
        return entry.call
      }
      const works = (count: number) => Array.from({ length: count }, (_, i) => call("work", { value: i }))
      const results = (tracked: ReadonlyArray<Tracked<unknown>>) => Effect.promise(() => Promise.all(tracked.map((one) => one.promise)))

      assert.deepStrictEqual(yield* results(works(8)), Array.from({ length: 8 }, (_, i) => 2 * i + 1))
      for (const n of [1, 2, 3, 4]) call("held", { n })
      yield* waitUntil("the held calls wait inside their tools", () => waiting.size === 4, 60_000)

      yield* Effect.promise(() => server!.stop())
      yield* refusing(clientTransport, "the client")
      const duringOutage = works(4)
      yield* refusing(host, "the sessions' host")
      // Calls made here run in this process: what they emit cannot be published now.
      const beforeLocalCalls = local.length
      for (let i = 0; i < 3; i++) {
        assert.strictEqual(((yield* Effect.promise(() => sessions.get(sessionId).callTool("howto"))) as { content: string }).content, "# Steps")
      }
      const unpublished = local.slice(beforeLocalCalls)
      assert.strictEqual(unpublished.length, 6)
      yield* Effect.promise(() => server!.restart())

      yield* Effect.promise(async () => {
        const deadline = Date.now() + 30_000
        while (!(await call("work", { value: 0 }).promise.then(() => true, () => false))) {
          if (Date.now() > deadline) throw new Error("no call succeeded within 30 s of the restart")
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      })
      open()
      assert.deepStrictEqual(yield* results(works(8)), Array.from({ length: 8 }, (_, i) => 2 * i + 1))
      yield* Effect.promise(() => Promise.allSettled(calls.map((entry) => entry.call.promise)))

      // Every call ended, with its result or a typed error, never later than its own timeout (measured generously).
      for (const { call: one } of calls) {
        const outcome = one.outcome()!
        if (!outcome.ok) assert.isTrue(WireError.isWireError(outcome.error), `an untyped error: ${String(outcome.error)}`)
      }
      assert.deepStrictEqual(
        duringOutage.map((one) => one.outcome()).map((outcome) => outcome?.ok === false ? (outcome.error as { reason?: string }).reason : "ok"),
        ["Closed", "Closed", "Closed", "Closed"],
        "a call made while the client's connection is down is refused at once"
      )
      const longest = Math.max(...calls.map((entry) => entry.endedAt! - entry.startedAt))
      assert.isAtMost(longest, callTimeoutMs + 4_000, "no call outlasted its timeout")

      // In the session's feed every started call completed. On NATS, every event but the 6 emitted
      // in the outage, and a notice of the 9 messages lost then (each call's two events and its record).
      yield* waitUntil("every started call in the session's feed completes", () => unmatched(local).length === 0, 30_000)
      const key = (event: Event) => `${event.name} ${event.id} ${event.dropped}`
      const expected = [...local.filter((event) => !unpublished.includes(event)), { name: "jit_events_dropped", id: undefined, dropped: 9 }]
      yield* waitUntil("the events reach NATS", () => wire.length >= expected.length, 30_000)
      assert.deepStrictEqual(wire.map(key).sort(), expected.map(key).sort())
      assert.deepStrictEqual(unmatched(wire), [])
    }).pipe(Effect.scoped), 150_000)
})
