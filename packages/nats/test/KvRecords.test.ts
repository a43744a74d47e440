/**
 * The record store under `KvLedger` and `KvSessionOwnership`, on a real nats-server (one for this
 * file): what the two services' suites do not reach through their own schemas. A value someone else
 * wrote reads as JSON, as its text when it is not JSON, as `null` past `maxValueBytes`, and is
 * replaced at its revision; a removal by either kind reads as missing and is not listed.
 */
import { NatsServer } from "@jitbox/testing"
import { Kvm } from "@nats-io/kv"
import * as Effect from "effect/Effect"
import { afterAll, assert, beforeAll, it } from "@effect/vitest"
import * as KvRecords from "../src/internal/kvRecords.js"
import * as NatsConnection from "../src/NatsConnection.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

let buckets = 0
const bucket = (options: KvRecords.KvRecordsOptions) =>
  Effect.gen(function*() {
    const { nc } = yield* NatsConnection.make({ servers: server!.url })
    const kv = yield* Effect.promise(() => new Kvm(nc).create(`records-test-${++buckets}`, { history: 1 }))
    return { kv, records: KvRecords.make(kv, options) }
  })

it.scoped("a value written by someone else reads as JSON, as text when it is not JSON, as null past maxValueBytes; each is replaced at its revision", () =>
  Effect.gen(function*() {
    const { kv, records } = yield* bucket({ removal: "purge", maxValueBytes: 16 })
    const cases = [["json", "{\"a\":1}", { a: 1 }], ["text", "{ not json", "{ not json"], ["big", "x".repeat(17), null]] as const
    for (const [key, stored, read] of cases) {
      const revision = yield* Effect.promise(() => kv.put(key, stored))
      assert.deepStrictEqual(yield* records.get(key), { value: read, revision }, key)
      const next = yield* records.put(key, { n: 1 }, revision)
      assert.deepStrictEqual(yield* records.get(key), { value: { n: 1 }, revision: next }, key)
    }
  }))

it.scoped("a removal by delete or by purge reads as missing and is not listed; a stale one fails Conflict", () =>
  Effect.gen(function*() {
    for (const removal of ["delete", "purge"] as const) {
      const { records } = yield* bucket({ removal })
      const first = yield* records.put("session.a", 1, 0)
      const second = yield* records.put("session.a", 2, first)
      assert.strictEqual((yield* Effect.flip(records.remove("session.a", first))).reason, "Conflict", removal)
      yield* records.remove("session.a", second)
      assert.isUndefined(yield* records.get("session.a"), removal)
      assert.deepStrictEqual(yield* records.keys("session.", 10), [], removal)
    }
  }))
