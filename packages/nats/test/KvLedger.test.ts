/**
 * The JetStream KV ledger on a real nats-server (one for this file): the ledger suite, plus a
 * record written through one connection read back through another, as a restarted coordinator
 * reads it.
 */
import { NatsServer } from "@jitbox/testing"
import { Ledger } from "@jitbox/runtime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { afterAll, assert, beforeAll, it } from "@effect/vitest"
import { ledgerConformance } from "../../runtime/test/LedgerConformance.js"
import * as KvLedger from "../src/KvLedger.js"
import * as NatsConnection from "../src/NatsConnection.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

let buckets = 0
const layer = (bucket: string) =>
  KvLedger.layer({ bucket }).pipe(Layer.provide(NatsConnection.layer({ servers: server!.url, reconnectTimeWaitMs: 100 })))

ledgerConformance("JetStream KV", () => layer(`ledger-test-${++buckets}`))

it.effect("a record outlives the connection that wrote it", () =>
  Effect.gen(function*() {
    const bucket = `ledger-test-${++buckets}`
    const revision = yield* Effect.flatMap(Ledger.Ledger, (ledger) => ledger.put("session.s", { used: 5 }, 0)).pipe(Effect.provide(layer(bucket)))
    const read = yield* Effect.flatMap(Ledger.Ledger, (ledger) => ledger.get("session.s")).pipe(Effect.provide(layer(bucket)))
    assert.deepStrictEqual(read, { value: { used: 5 }, revision })
  }))
