/**
 * What a `SessionOwnership` layer does, as one suite (SessionOwnership.test.ts in memory,
 * packages/nats on JetStream KV). Time is the `TestClock`'s: claims expire when the test moves it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as Ids from "../src/Ids.js"
import { OwnershipError, SessionOwnership } from "../src/SessionOwnership.js"

const ttlMs = 10_000

export const sessionOwnershipConformance = (name: string, layer: (ttlMs: number) => Layer.Layer<SessionOwnership, unknown>) =>
  describe(`SessionOwnership on ${name}`, () => {
    const sid = Ids.sessionId("owned")
    const provide = <A, E>(effect: Effect.Effect<A, E, SessionOwnership>) => effect.pipe(Effect.provide(layer(ttlMs) as Layer.Layer<SessionOwnership>))

    it.effect("a free session is claimed; another owner's claim is refused Held, naming the owner and the expiry", () =>
      provide(Effect.gen(function*() {
        const ownership = yield* SessionOwnership
        assert.strictEqual(ownership.ttlMs, ttlMs)
        assert.isTrue(Option.isNone(yield* ownership.holder(sid)))
        const claim = yield* ownership.claim(sid, "host-a")
        assert.strictEqual(claim.ownerId, "host-a")
        assert.strictEqual(claim.expiresAt(), ttlMs)
        assert.deepStrictEqual(yield* ownership.holder(sid), Option.some({ ownerId: "host-a", expiresAt: ttlMs }))
        yield* TestClock.adjust(ttlMs - 1)
        const refused = yield* Effect.flip(ownership.claim(sid, "host-b"))
        assert.instanceOf(refused, OwnershipError)
        assert.strictEqual(refused.reason, "Held")
        assert.strictEqual(refused.owner, "host-a")
        assert.strictEqual(refused.expiresAt, ttlMs)
        assert.include(refused.message, "held by host-a")
        // Another session is free.
        yield* ownership.claim(Ids.sessionId("other"), "host-b")
      })))

    it.effect("an unrenewed claim expires: another owner takes the session over, and the first's renew and release fail Lost naming it", () =>
      provide(Effect.gen(function*() {
        const ownership = yield* SessionOwnership
        const first = yield* ownership.claim(sid, "host-a")
        yield* TestClock.adjust(ttlMs)
        assert.isTrue(Option.isNone(yield* ownership.holder(sid)))
        const second = yield* ownership.claim(sid, "host-b")
        assert.strictEqual(second.expiresAt(), 2 * ttlMs)
        const renew = yield* Effect.flip(first.renew)
        assert.strictEqual(renew.reason, "Lost")
        assert.strictEqual(renew.owner, "host-b")
        assert.include(renew.message, "taken over by host-b")
        yield* first.release
        const stale = yield* ownership.claim(sid, "host-a").pipe(Effect.flip)
        assert.strictEqual(stale.owner, "host-b")
        yield* second.renew
      })))

    it.effect("a release that finds the session taken over fails Lost and leaves the new claim alone", () =>
      provide(Effect.gen(function*() {
        const ownership = yield* SessionOwnership
        const first = yield* ownership.claim(sid, "host-a")
        yield* TestClock.adjust(ttlMs + 1)
        yield* ownership.claim(sid, "host-b")
        const release = yield* Effect.flip(first.release)
        assert.strictEqual(release.reason, "Lost")
        assert.strictEqual(release.owner, "host-b")
        assert.deepStrictEqual(Option.map(yield* ownership.holder(sid), (holder) => holder.ownerId), Option.some("host-b"))
      })))

    it.effect("renewing keeps the claim past its first expiry", () =>
      provide(Effect.gen(function*() {
        const ownership = yield* SessionOwnership
        const claim = yield* ownership.claim(sid, "host-a")
        yield* TestClock.adjust(ttlMs * 0.6)
        yield* claim.renew
        assert.strictEqual(claim.expiresAt(), ttlMs * 1.6)
        yield* TestClock.adjust(ttlMs * 0.6)
        assert.strictEqual((yield* Effect.flip(ownership.claim(sid, "host-b"))).reason, "Held")
        yield* TestClock.adjust(ttlMs * 0.4)
        yield* ownership.claim(sid, "host-b")
      })))

    it.effect("release frees the session at once; a second release is nothing; renew after release is Lost", () =>
      provide(Effect.gen(function*() {
        const ownership = yield* SessionOwnership
        const claim = yield* ownership.claim(sid, "host-a")
        yield* claim.release
        yield* claim.release
        assert.isTrue(Option.isNone(yield* ownership.holder(sid)))
        assert.strictEqual((yield* Effect.flip(claim.renew)).reason, "Lost")
        const next = yield* ownership.claim(sid, "host-b")
        yield* next.release
        yield* ownership.claim(sid, "host-a")
      })))

    it.effect("the same owner claiming again (a restarted host) takes the claim over; the older handle is Lost", () =>
      provide(Effect.gen(function*() {
        const ownership = yield* SessionOwnership
        const before = yield* ownership.claim(sid, "host-a")
        yield* TestClock.adjust(1_000)
        const after = yield* ownership.claim(sid, "host-a")
        assert.strictEqual(after.expiresAt(), 1_000 + ttlMs)
        const lost = yield* Effect.flip(before.renew)
        assert.strictEqual(lost.reason, "Lost")
        yield* after.renew
      })))

    it.effect("of owners claiming a session at once, exactly one wins; the others are refused Held naming it", () =>
      provide(Effect.gen(function*() {
        const ownership = yield* SessionOwnership
        const owners = ["host-1", "host-2", "host-3", "host-4", "host-5"]
        const results = yield* Effect.forEach(owners, (owner) => Effect.either(ownership.claim(sid, owner)), { concurrency: "unbounded" })
        const winners = results.filter(Either.isRight).map((result) => result.right.ownerId)
        assert.strictEqual(winners.length, 1)
        for (const result of results) {
          if (Either.isLeft(result)) {
            assert.strictEqual(result.left.reason, "Held")
            assert.strictEqual(result.left.owner, winners[0])
          }
        }
      })))

    it.effect("an empty owner id is Invalid", () =>
      provide(Effect.gen(function*() {
        const ownership = yield* SessionOwnership
        assert.strictEqual((yield* Effect.flip(ownership.claim(sid, ""))).reason, "Invalid")
      })))
  })
