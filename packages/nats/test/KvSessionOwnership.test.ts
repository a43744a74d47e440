/**
 * Session ownership in a JetStream KV bucket on a real nats-server (one for this file): the
 * ownership suite (under the TestClock: expiry is the record's timestamp against the Effect
 * clock), plus two connections (two hosts) racing for the same sessions, a record that does not
 * decode (taken over, by one host only; a host of sessions activates the session), and the
 * bucket's default name.
 */
import { NatsServer } from "@jitbox/testing"
import { HarnessError } from "@jitbox/core"
import { Ids, MemoryTransport, Sessions, type SessionOwnership, SnapshotStore, Subject } from "@jitbox/runtime"
import { Kvm } from "@nats-io/kv"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { afterAll, assert, beforeAll, it } from "@effect/vitest"
import { sessionOwnershipConformance } from "../../runtime/test/SessionOwnershipConformance.js"
import * as KvSessionOwnership from "../src/KvSessionOwnership.js"
import * as NatsConnection from "../src/NatsConnection.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

const connection = () => ({ servers: server!.url, reconnectTimeWaitMs: 100 })
let buckets = 0
const nextBucket = () => `owners-test-${++buckets}`

/** A host of its own: the ownership on a connection of its own. */
const host = (options: KvSessionOwnership.KvSessionOwnershipOptions) =>
  Effect.flatMap(NatsConnection.make(connection()), ({ nc }) => KvSessionOwnership.fromConnection(nc, options))

/** Two hosts claim each session at once: exactly one wins it, and the other is refused `Held` naming the winner. */
const oneWinsEach = (
  hostA: SessionOwnership.SessionOwnershipShape,
  hostB: SessionOwnership.SessionOwnershipShape,
  sessions: ReadonlyArray<Ids.SessionId>
) =>
  Effect.gen(function*() {
    const results = yield* Effect.forEach(sessions, (sid) =>
      Effect.all([Effect.either(hostA.claim(sid, "host-a")), Effect.either(hostB.claim(sid, "host-b"))], { concurrency: 2 }), { concurrency: "unbounded" })
    return results.map(([a, b]) => {
      assert.strictEqual([a, b].filter(Either.isRight).length, 1)
      const winner = Either.isRight(a) ? a.right.ownerId : Either.isRight(b) ? b.right.ownerId : undefined
      const loser = Either.isLeft(a) ? a.left : Either.isLeft(b) ? b.left : undefined
      assert.strictEqual(loser?.reason, "Held")
      assert.strictEqual(loser?.owner, winner)
      return winner
    })
  })

/** A client that is not a host, to write and read the bucket's records directly. */
const client = () => Effect.map(NatsConnection.make(connection()), ({ nc }) => nc)

sessionOwnershipConformance(
  "JetStream KV",
  (ttlMs) => KvSessionOwnership.layer({ bucket: nextBucket(), ttlMs }).pipe(Layer.provide(NatsConnection.layer(connection())))
)

it.scoped("two hosts on their own connections race for twenty sessions: each session has exactly one owner, the loser is refused Held naming it", () =>
  Effect.gen(function*() {
    const bucket = nextBucket()
    const hostA = yield* host({ bucket })
    const hostB = yield* host({ bucket })
    const sessions = Array.from({ length: 20 }, (_, index) => Ids.sessionId(`race-${index}`))
    const winners = yield* oneWinsEach(hostA, hostB, sessions)
    // Each sees the other's claims.
    for (const [index, sid] of sessions.entries()) {
      assert.deepStrictEqual(Option.map(yield* hostB.holder(sid), (holder) => holder.ownerId), Option.some(winners[index]))
    }
  }))

it.scoped("a claim taken over through another connection makes the first host's renew fail Lost", () =>
  Effect.gen(function*() {
    const bucket = nextBucket()
    const hostA = yield* host({ bucket, ttlMs: 1_000 })
    const hostB = yield* host({ bucket, ttlMs: 1_000 })
    const sid = Ids.sessionId("moved")
    const claim = yield* hostA.claim(sid, "host-a")
    yield* TestClock.adjust(1_000)
    yield* hostB.claim(sid, "host-b")
    const lost = yield* Effect.flip(claim.renew)
    assert.strictEqual(lost.reason, "Lost")
    assert.strictEqual(lost.owner, "host-b")
  }))

it.scoped("a record someone else wrote that does not decode is no claim: a host takes it over, by compare-and-set; a newer version's live claim is honoured", () =>
  Effect.gen(function*() {
    const bucket = nextBucket()
    const ownership = yield* host({ bucket })
    const nc = yield* client()
    const kv = yield* Effect.promise(() => new Kvm(nc).open(bucket))
    const cases = [["text", "not json"], ["v0", JSON.stringify({ v: 0, owner: "past", expiresAt: 9e15 })], ["big", "x".repeat(10_000)]] as const
    for (const [name, value] of cases) {
      const sid = Ids.sessionId(name)
      yield* Effect.promise(() => kv.put(`session.${sid}`, value))
      assert.isTrue(Option.isNone(yield* ownership.holder(sid)), name)
      const claim = yield* ownership.claim(sid, "host-a")
      assert.strictEqual((yield* Effect.promise(() => kv.get(`session.${sid}`)))!.json<{ owner: string }>().owner, "host-a", name)
      yield* claim.renew
      yield* claim.release
    }
    // A later format with an owner and an expiry is read as a claim: live, it is Held; lapsed, taken over.
    const future = Ids.sessionId("v2")
    yield* Effect.promise(() => kv.put(`session.${future}`, JSON.stringify({ v: 2, owner: "future", expiresAt: 5_000, more: [1] })))
    const held = yield* Effect.flip(ownership.claim(future, "host-a"))
    assert.strictEqual(held.reason, "Held")
    assert.strictEqual(held.owner, "future")
    yield* TestClock.adjust(5_000)
    yield* ownership.claim(future, "host-a")
  }))

it.scoped("two hosts racing for a session whose record is garbage: exactly one wins, the other is refused Held naming it", () =>
  Effect.gen(function*() {
    const bucket = nextBucket()
    const hostA = yield* host({ bucket })
    const hostB = yield* host({ bucket })
    const nc = yield* client()
    const kv = yield* Effect.promise(() => new Kvm(nc).open(bucket))
    const sessions = Array.from({ length: 10 }, (_, index) => Ids.sessionId(`junk-${index}`))
    for (const sid of sessions) yield* Effect.promise(() => kv.put(`session.${sid}`, "\u0000garbage"))
    yield* oneWinsEach(hostA, hostB, sessions)
  }))

it.scoped("a host of sessions activates a session whose claim key holds garbage, and claims it", () =>
  Effect.gen(function*() {
    const bucket = nextBucket()
    const nc = yield* client()
    const kv = yield* Effect.promise(() => new Kvm(nc).create(bucket, { history: 1 }))
    yield* Effect.promise(() => kv.put("session.poisoned", "{ not a claim"))
    const context = yield* Layer.build(Layer.mergeAll(
      MemoryTransport.layer(),
      SnapshotStore.layerMemory(),
      KvSessionOwnership.layer({ bucket }).pipe(Layer.provide(NatsConnection.layer(connection())))
    ))
    const sessions = yield* Sessions.make({ prefix: Subject.prefix(Ids.namespace("owners")), ownerId: "host-a" }).pipe(Effect.provide(context))
    yield* sessions.activate(Ids.sessionId("poisoned"))
    assert.deepStrictEqual(sessions.active(), [Ids.sessionId("poisoned")])
    assert.strictEqual((yield* Effect.promise(() => kv.get("session.poisoned")))!.json<{ owner: string }>().owner, "host-a")
  }))

it.scoped("the bucket is jitbox-owners-<namespace>; without a bucket or a namespace the layer fails ConfigError", () =>
  Effect.gen(function*() {
    const ownership = yield* host({ namespace: "ownertest" })
    const claim = yield* ownership.claim(Ids.sessionId("s1"), "host-a")
    const nc = yield* client()
    const kv = yield* Effect.promise(() => new Kvm(nc).open("jitbox-owners-ownertest"))
    assert.strictEqual((yield* Effect.promise(() => kv.get("session.s1")))!.json<{ owner: string }>().owner, "host-a")
    yield* claim.release
    assert.strictEqual((yield* Effect.promise(() => kv.get("session.s1")))!.operation, "DEL")
    const error = yield* Effect.flip(host({}))
    assert.instanceOf(error, HarnessError.ConfigError)
  }))

