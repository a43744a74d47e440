/**
 * Subject.ts spells every subject: the table of DESIGN.md under `jitbox.<namespace>`, the
 * patterns subscribers use, and NATS's rules for literal subjects, patterns and matching.
 */
import { HarnessError } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import * as Ids from "../src/Ids.js"
import * as Subject from "../src/Subject.js"

const p = Subject.prefix(Ids.namespace("prod"))
const s = Ids.sessionId("s1")

describe("Subject", () => {
  it("every subject of the table, under jitbox.<namespace>", () => {
    assert.deepStrictEqual(
      [
        Subject.sessionCall(p, s),
        Subject.sessionManage(p, s),
        Subject.sessionNested(p, s),
        Subject.sessionsActivate(p),
        Subject.coordinator(p, Ids.principal("sessions"), Ids.token("admit")),
        Subject.workerInvoke(p, Ids.poolName("gpu"), "python"),
        Subject.nodeInvoke(p, Ids.workerId("node-a"), "javascript"),
        Subject.sessionPackage(p, s),
        Subject.sessionHeartbeat(p, s),
        Subject.workerCancel(p),
        Subject.workersCapacity(p),
        Subject.events(p, s),
        Subject.profile(p, s)
      ],
      [
        "jitbox.prod.session.s1.call",
        "jitbox.prod.session.s1.manage",
        "jitbox.prod.session.s1.nested",
        "jitbox.prod.sessions.activate",
        "jitbox.prod.coordinator.sessions.admit",
        "jitbox.prod.worker.gpu.python.invoke",
        "jitbox.prod.node.node-a.javascript.invoke",
        "jitbox.prod.session.s1.package",
        "jitbox.prod.session.s1.heartbeat",
        "jitbox.prod.workers.cancel",
        "jitbox.prod.workers.capacity",
        "jitbox.prod.events.s1",
        "jitbox.prod.profile.s1"
      ]
    )
  })

  it("the patterns subscribers use", () => {
    assert.deepStrictEqual(
      [
        Subject.allEvents(p),
        Subject.sessionEvents(p, s),
        Subject.allProfiles(p),
        Subject.sessionAll(p, s),
        Subject.coordinatorAll(p),
        Subject.coordinatorOf(p, Ids.principal("worker-gpu")),
        Subject.everything(p)
      ],
      [
        "jitbox.prod.events.*",
        "jitbox.prod.events.s1",
        "jitbox.prod.profile.*",
        "jitbox.prod.session.s1.*",
        "jitbox.prod.coordinator.*.*",
        "jitbox.prod.coordinator.worker-gpu.*",
        "jitbox.prod.>"
      ]
    )
  })

  it("a root of several tokens replaces jitbox; a bad root is a ConfigError", () => {
    assert.strictEqual(Subject.sessionCall(Subject.prefix(Ids.namespace("ns"), "acme.tools"), s), "acme.tools.ns.session.s1.call")
    for (const root of ["", "a..b", "a.*", "a b", ".a"]) {
      assert.throws(() => Subject.prefix(Ids.namespace("ns"), root), HarnessError.ConfigError)
    }
  })

  it("a coordinator subject carries the asker's principal before the operation; a bad principal is a ConfigError", () => {
    const subject = Subject.coordinator(Subject.prefix(Ids.namespace("ns"), "acme.tools"), Ids.principal("sessions2"), Ids.token("renew"))
    assert.strictEqual(subject, "acme.tools.ns.coordinator.sessions2.renew")
    assert.deepStrictEqual(Subject.coordinatorParts(subject), { principal: "sessions2", op: "renew" })
    assert.isTrue(Subject.matches(Subject.coordinatorAll(Subject.prefix(Ids.namespace("ns"), "acme.tools")), subject))
    assert.isFalse(Subject.matches(Subject.coordinatorOf(p, Ids.principal("sessions")), "jitbox.prod.coordinator.sessions2.renew"))
    assert.isUndefined(Subject.coordinatorParts("jitbox.prod.session.s1.call"))
    assert.isUndefined(Subject.coordinatorParts("jitbox.prod.coordinator.admit"))
    assert.strictEqual(Ids.defaultPrincipal, "default")
    for (const bad of ["", "a.b", "*", ">", "a b"]) assert.throws(() => Ids.principal(bad), HarnessError.ConfigError)
  })

  it("everything built is a literal subject or a valid pattern", () => {
    assert.isTrue(Subject.isLiteral(Subject.events(p, s)))
    assert.isFalse(Subject.isLiteral(Subject.allEvents(p)))
    assert.isTrue(Subject.isPattern(Subject.allEvents(p)))
    assert.isTrue(Subject.isPattern(Subject.profile(p, s)))
    for (const bad of ["", "a..b", "a.", ".a", "a b", "a.*b", "a.>.b", "a.b>"]) assert.isFalse(Subject.isPattern(bad), bad)
    for (const bad of ["", "a..b", "a.*", "a.>", "a\tb"]) assert.isFalse(Subject.isLiteral(bad), bad)
  })

  it("matching follows NATS: `*` is one token, `>` one or more trailing tokens", () => {
    const all = Subject.allEvents(p)
    assert.isTrue(Subject.matches(all, "jitbox.prod.events.s1"))
    assert.isFalse(Subject.matches(all, "jitbox.prod.events.s1.jit_tool_started"))
    assert.isFalse(Subject.matches(all, "jitbox.prod.events"))
    assert.isFalse(Subject.matches(all, "jitbox.other.events.s1"))
    const everything = Subject.everything(p)
    assert.isTrue(Subject.matches(everything, "jitbox.prod.events.s1"))
    assert.isTrue(Subject.matches(everything, "jitbox.prod.session.s1.call"))
    assert.isFalse(Subject.matches(everything, "jitbox.prod"))
    const profiles = Subject.allProfiles(p)
    assert.isTrue(Subject.matches(profiles, "jitbox.prod.profile.s1"))
    assert.isFalse(Subject.matches(profiles, "jitbox.prod.profile.s1.extra"))
    assert.isFalse(Subject.matches(profiles, "jitbox.prod.profile"))
    assert.isTrue(Subject.matches("a.b", "a.b"))
    assert.isFalse(Subject.matches("a.b", "a.b.c"))
  })
})
