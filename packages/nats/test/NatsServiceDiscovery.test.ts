/**
 * NATS service discovery on a real nats-server (one for this file), asked as NATS tooling asks
 * (`nats micro ls/info/stats`): a raw nats.js connection sends `$SRV.PING|INFO|STATS[.<name>[.<id>]]`
 * and gathers every answer. Two workers and a coordinator, each on its own connection, answer;
 * every answer is decoded with a schema written from the micro protocol (ADR-32 and the Go
 * `micro` types the `nats` CLI decodes with), strict about extra fields.
 */
import { Coordinator, ExecutionProfile, Ids, Ledger, Subject, Worker } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import { assert, describe, it } from "@effect/vitest"
import { connect, errors, type NatsConnection as NatsClient } from "@nats-io/transport-node"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { afterAll, beforeAll } from "vitest"
import * as NatsConnection from "../src/NatsConnection.js"
import * as NatsTransport from "../src/NatsTransport.js"

let server: NatsServer.Handle | undefined
let nc: NatsClient | undefined
beforeAll(async () => {
  server = await NatsServer.start()
  nc = await connect({ servers: server.url })
})
afterAll(async () => {
  await nc?.close()
  await server?.close()
})

// The micro protocol's answers, as the spec spells them.
const semVer =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/
const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/
const Name = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9\-_]+$/))
const Nanos = Schema.Int.pipe(Schema.nonNegative())
const Metadata = Schema.Record({ key: Schema.String, value: Schema.String })
const identity = { name: Name, id: Name, version: Schema.String.pipe(Schema.pattern(semVer)), metadata: Metadata }
const Ping = Schema.Struct({ type: Schema.Literal("io.nats.micro.v1.ping_response"), ...identity })
const Info = Schema.Struct({
  type: Schema.Literal("io.nats.micro.v1.info_response"),
  ...identity,
  description: Schema.String,
  endpoints: Schema.Array(Schema.Struct({ name: Name, subject: Schema.String, queue_group: Schema.String, metadata: Schema.NullOr(Metadata) }))
})
const Stats = Schema.Struct({
  type: Schema.Literal("io.nats.micro.v1.stats_response"),
  ...identity,
  started: Schema.String.pipe(Schema.pattern(rfc3339), Schema.filter((s) => !Number.isNaN(Date.parse(s)))),
  endpoints: Schema.Array(Schema.Struct({
    name: Name,
    subject: Schema.String,
    queue_group: Schema.String,
    num_requests: Nanos,
    num_errors: Nanos,
    last_error: Schema.String,
    data: Schema.optional(Schema.Unknown),
    processing_time: Nanos,
    average_processing_time: Nanos
  }))
})

const strict = { onExcessProperty: "error" } as const

/** Every answer to one request within `ms` (or the first `count`), decoded with `schema`. */
const gather = <A, I>(schema: Schema.Schema<A, I>, subject: string, count?: number) =>
  Effect.promise(async () => {
    const out: Array<A> = []
    try {
      const replies = await nc!.requestMany(subject, "", count === undefined ? { strategy: "timer", maxWait: 750 } : { strategy: "count", maxMessages: count, maxWait: 5_000 })
      for await (const reply of replies) out.push(Schema.decodeUnknownSync(schema, strict)(reply.json()))
    } catch (error) {
      if (!(error instanceof errors.NoRespondersError || (error instanceof errors.RequestError && error.isNoResponders()))) throw error
    }
    return out
  })

const ids = (answers: ReadonlyArray<{ readonly id: string }>) => answers.map((answer) => answer.id).sort()

/** A connection of its own for the rest of the scope. */
const connection = () => Layer.build(NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer({ servers: server!.url, reconnectTimeWaitMs: 100 }))))

describe("NATS service discovery on a real nats-server", () => {
  it.live("two workers and a coordinator answer PING, INFO and STATS as the micro protocol says", () =>
    Effect.gen(function*() {
      const namespace = Ids.namespace("ns1")
      const prefix = Subject.prefix(namespace)
      const workers = [
        yield* Worker.make({ prefix, pool: "default", languages: ["javascript"] }).pipe(Effect.provide(yield* connection())),
        yield* Worker.make({ prefix, pool: "gpu", languages: ["javascript"] }).pipe(Effect.provide(yield* connection()))
      ]
      const coordinator = yield* Coordinator.make({ namespace, profiles: ExecutionProfile.all([{ name: "standard" }]) }).pipe(
        Effect.provide(yield* connection()),
        Effect.provideService(Ledger.Ledger, Ledger.makeMemory())
      )
      const workerIds = workers.map((worker) => worker.workerId as string).sort()
      const everyone = [...workerIds, coordinator.id].sort()

      for (const verb of ["PING", "INFO", "STATS"] as const) {
        const schema = (verb === "PING" ? Ping : verb === "INFO" ? Info : Stats) as unknown as Schema.Schema<{ readonly id: string; readonly version: string }>
        const [all, kind, one, coordinators] = yield* Effect.all([
          gather(schema, `$SRV.${verb}`),
          gather(schema, `$SRV.${verb}.jitbox-worker`),
          gather(schema, `$SRV.${verb}.jitbox-worker.${workers[1]!.workerId}`, 1),
          gather(schema, `$SRV.${verb}.jitbox-coordinator`)
        ], { concurrency: "unbounded" })
        assert.deepStrictEqual(ids(all), everyone, `${verb} to everyone`)
        assert.deepStrictEqual(ids(kind), workerIds, `${verb} to the workers`)
        assert.deepStrictEqual(ids(one), [workers[1]!.workerId], `${verb} to one worker`)
        assert.deepStrictEqual(ids(coordinators), [coordinator.id], `${verb} to the coordinators`)
        for (const answer of all) assert.strictEqual(answer.version, "0.1.0")
      }

      const [info] = yield* gather(Info, `$SRV.INFO.jitbox-worker.${workers[1]!.workerId}`, 1)
      assert.strictEqual(info!.name, "jitbox-worker")
      assert.deepStrictEqual(info!.metadata, { namespace: "ns1", pool: "gpu", languages: "javascript" })
      assert.deepStrictEqual(info!.endpoints, [{ name: "invoke-javascript", subject: "jitbox.ns1.worker.gpu.javascript.invoke", queue_group: "workers-gpu-javascript", metadata: {} }])
      const [coordinatorInfo] = yield* gather(Info, `$SRV.INFO.jitbox-coordinator.${coordinator.id}`, 1)
      assert.deepStrictEqual(coordinatorInfo!.endpoints, [{ name: "coordinator", subject: "jitbox.ns1.coordinator.*.*", queue_group: "coordinator", metadata: {} }])

      // A request to the gpu worker's invoke subject, straight from the raw connection: counted, as an error.
      yield* Effect.promise(() => nc!.request("jitbox.ns1.worker.gpu.javascript.invoke", "{ not json", { timeout: 5_000 }))
      const [stats] = yield* gather(Stats, `$SRV.STATS.jitbox-worker.${workers[1]!.workerId}`, 1)
      const endpoint = stats!.endpoints[0]!
      assert.deepStrictEqual([endpoint.name, endpoint.num_requests, endpoint.num_errors], ["invoke-javascript", 1, 1])
      assert.match(endpoint.last_error, /not JSON/)
      assert.strictEqual(endpoint.average_processing_time, endpoint.processing_time)
      const [idle] = yield* gather(Stats, `$SRV.STATS.jitbox-worker.${workers[0]!.workerId}`, 1)
      assert.deepStrictEqual([idle!.endpoints[0]!.num_requests, idle!.endpoints[0]!.last_error], [0, ""])
    }).pipe(Effect.scoped), 60_000)

  it.live("a worker whose scope closed no longer answers", () =>
    Effect.gen(function*() {
      const prefix = Subject.prefix(Ids.namespace("ns2"))
      const scope = yield* Scope.make()
      const worker = yield* Worker.make({ prefix, languages: ["javascript"] }).pipe(Effect.provide(yield* connection()), Scope.extend(scope))
      assert.include(ids(yield* gather(Ping, "$SRV.PING.jitbox-worker")), worker.workerId)
      yield* Scope.close(scope, Exit.void)
      assert.notInclude(ids(yield* gather(Ping, "$SRV.PING.jitbox-worker")), worker.workerId)
    }).pipe(Effect.scoped), 60_000)
})
