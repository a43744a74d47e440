/**
 * Ids are subject tokens: a bad one is a ConfigError where it is made; generated ids are unique,
 * within a process and across processes.
 */
import { HarnessError } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { vi } from "vitest"
import * as Ids from "../src/Ids.js"

const configError = (f: () => unknown): HarnessError.ConfigError => {
  try {
    f()
  } catch (error) {
    if (error instanceof HarnessError.ConfigError) return error
    throw error
  }
  throw new Error("expected a ConfigError, nothing was thrown")
}

const makers = {
  sessionId: Ids.sessionId,
  workerId: Ids.workerId,
  invocationId: Ids.invocationId,
  callId: Ids.callId,
  leaseId: Ids.leaseId,
  namespace: Ids.namespace,
  pool: Ids.poolName,
  token: Ids.token
} as const

describe("Ids", () => {
  it("letters, digits, _ and - make an id; the id is the string itself", () => {
    for (const make of Object.values(makers)) {
      assert.strictEqual(make("Session_01-a"), "Session_01-a")
      assert.strictEqual(make("x"), "x")
    }
  })

  it("., *, >, whitespace, empty, too long and non-ASCII are each a ConfigError naming the option", () => {
    const bad: ReadonlyArray<readonly [string, string]> = [
      ["a.b", "\".\""],
      ["a*", "\"*\""],
      [">", "\">\""],
      ["a b", "whitespace"],
      ["a\tb", "whitespace"],
      ["a\nb", "whitespace"],
      ["$SYS", "\"$\""],
      ["naïve", "\"ï\""],
      ["", "empty"]
    ]
    for (const [option, make] of Object.entries(makers)) {
      for (const [input, named] of bad) {
        const error = configError(() => make(input))
        assert.strictEqual(error.option, option)
        assert.include(error.detail, named, `${option} ${JSON.stringify(input)}`)
      }
    }
    assert.strictEqual(Ids.sessionId("s".repeat(128)).length, 128)
    assert.include(configError(() => Ids.sessionId("s".repeat(129))).detail, "at most 128")
    assert.strictEqual(Ids.namespace("n".repeat(64)).length, 64)
    assert.include(configError(() => Ids.namespace("n".repeat(65))).detail, "at most 64")
  })

  it("the pool name `package` is reserved for package fetches", () => {
    assert.include(configError(() => Ids.poolName("package")).detail, "reserved")
    assert.strictEqual(Ids.poolName("packages"), "packages")
  })

  it.effect("decode is the same check as an Effect failing with ConfigError", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* Ids.decode(Ids.SessionId, "sessionId")("ok"), "ok")
      const error = yield* Effect.flip(Ids.decode(Ids.SessionId, "sessionId")("not.ok"))
      assert.strictEqual(error._tag, "ConfigError")
      assert.strictEqual(error.option, "sessionId")
      const notAString = yield* Effect.flip(Ids.decode(Ids.WorkerId, "workerId")(42))
      assert.strictEqual(notAString.option, "workerId")
    }))

  it("generated call and invocation ids are valid tokens and never repeat", () => {
    const seen = new Set<string>()
    for (let i = 0; i < 20_000; i++) {
      seen.add(Ids.newCallId())
      seen.add(Ids.newInvocationId())
    }
    assert.strictEqual(seen.size, 40_000)
    for (const id of [Ids.newCallId(), Ids.newInvocationId()]) assert.strictEqual<string>(Ids.token(id), id)
    assert.match(Ids.newCallId(), /^call_[0-9a-f]{24}_[0-9a-z]+$/)
    assert.match(Ids.newInvocationId(), /^inv_[0-9a-f]{24}_[0-9a-z]+$/)
    // Two generators (as in two processes) draw different prefixes.
    const one = Ids.generator<Ids.InvocationId>("inv")
    const two = Ids.generator<Ids.InvocationId>("inv")
    assert.notStrictEqual(one().split("_")[1], two().split("_")[1])
    assert.strictEqual(configError(() => Ids.generator("bad.kind")).option, "kind")
  })

  it("a fresh load of the module (as in another process) draws a new prefix", async () => {
    vi.resetModules()
    const again = await import("../src/Ids.js")
    assert.notStrictEqual(again.newInvocationId, Ids.newInvocationId)
    const ours = Array.from({ length: 1000 }, () => Ids.newInvocationId())
    const theirs = Array.from({ length: 1000 }, () => again.newInvocationId())
    assert.strictEqual(new Set([...ours, ...theirs]).size, 2000)
    assert.notStrictEqual(ours[0]!.split("_")[1], theirs[0]!.split("_")[1])
  })
})
