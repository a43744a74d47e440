/**
 * The JetStream KV ledger on a real nats-server (one for this file): the ledger suite, plus a
 * record written through one connection read back through another, as a restarted coordinator
 * reads it, and a removed record leaving nothing in the bucket's stream.
 */
import { NatsServer } from "@jitbox/testing"
import { Kvm } from "@nats-io/kv"
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

it.effect("a removal leaves nothing of the record in the bucket's stream: no value, no marker; a later write of the key stays", () =>
  Effect.gen(function*() {
    const bucket = `ledger-test-${++buckets}`
    const { nc } = yield* NatsConnection.make({ servers: server!.url })
    const ledger = yield* KvLedger.make(nc, { bucket })
    const kv = yield* Effect.promise(() => new Kvm(nc).open(bucket))
    const messages = Effect.map(Effect.promise(() => kv.status()), (status) => status.values)
    for (let i = 0; i < 20; i++) {
      const revision = yield* ledger.put(`session.s${i}`, { used: i }, 0)
      yield* ledger.put(`session.s${i}`, { used: i + 1 }, revision).pipe(Effect.flatMap((next) => ledger.remove(`session.s${i}`, next)))
    }
    const kept = yield* ledger.put("session.kept", { used: 1 }, 0)
    assert.strictEqual(yield* messages, 1)
    assert.deepStrictEqual(yield* ledger.keys("session.", 100), ["session.kept"])
    yield* ledger.remove("session.kept", kept)
    const again = yield* ledger.put("session.kept", { used: 2 }, 0)
    assert.deepStrictEqual(yield* ledger.get("session.kept"), { value: { used: 2 }, revision: again })
    assert.strictEqual(yield* messages, 1)
  }).pipe(Effect.scoped))
