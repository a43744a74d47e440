/**
 * `Authorization.principals` on its own: every principal reads replies on its own inbox prefix
 * only, a worker pool takes its invocations only in its queue groups, applications neither serve
 * nor publish what only hosts and workers may, and names that are not subject tokens are refused.
 * (packages/cli/test/Security.test.ts runs the printed configuration on a real nats-server.)
 */
import { describe, expect, it } from "vitest"
import * as Authorization from "../src/Authorization.js"

const all = Authorization.principals({ namespace: "ns1", pools: ["default", "gpu"], nodes: ["node-a"], applications: ["web", "batch"] })
const byUser = new Map(all.map((principal) => [principal.user, principal]))

describe("Authorization.principals", () => {
  it("one user per principal, each with an inbox prefix of its own and no other inbox", () => {
    expect([...byUser.keys()].sort()).toEqual(["batch", "coordinator", "node-node-a", "observer", "operator", "sessions", "web", "worker-default", "worker-gpu"])
    for (const principal of all) {
      const inboxes = principal.subscribe.filter((subject) => subject.startsWith("_INBOX"))
      expect(inboxes, principal.user).toEqual([`${principal.inboxPrefix}.>`])
      expect(principal.publish.some((subject) => subject.startsWith("_INBOX")), principal.user).toBe(false)
    }
  })

  it("a worker pool subscribes its invocations only in its own queue groups", () => {
    const invokes = byUser.get("worker-gpu")!.subscribe.filter((subject) => subject.includes(".invoke"))
    expect(invokes).toEqual(Authorization.languages.map((language) => `jitbox.ns1.worker.gpu.${language}.invoke workers-gpu-${language}`))
  })

  it("an application calls and manages sessions, and may not serve them, cancel, publish events or talk to the coordinator", () => {
    const web = byUser.get("web")!
    expect(web.publish).toEqual(["jitbox.ns1.session.*.call", "jitbox.ns1.session.*.manage", "jitbox.ns1.sessions.activate"])
    expect(web.subscribe).toEqual(["jitbox.ns1.events.*", "_INBOX_web.>"])
    expect(web.allowResponses).toBe(false)
  })

  it("each principal may ask the coordinator only on its own subjects; the coordinator serves every principal's", () => {
    const coordinatorSubjects = (user: string) => byUser.get(user)!.publish.filter((subject) => subject.includes(".coordinator."))
    expect(coordinatorSubjects("sessions")).toEqual(["admit", "renew", "release", "policy"].map((op) => `jitbox.ns1.coordinator.sessions.${op}`))
    expect(coordinatorSubjects("worker-gpu")).toEqual(["verify", "ran"].map((op) => `jitbox.ns1.coordinator.worker-gpu.${op}`))
    expect(coordinatorSubjects("node-node-a")).toEqual(["verify", "ran"].map((op) => `jitbox.ns1.coordinator.node-node-a.${op}`))
    expect(coordinatorSubjects("operator")).toEqual(["leases", "workers", "policy"].map((op) => `jitbox.ns1.coordinator.operator.${op}`))
    for (const user of ["web", "batch", "observer", "coordinator"]) expect(coordinatorSubjects(user), user).toEqual([])
    expect(byUser.get("coordinator")!.subscribe).toContain("jitbox.ns1.coordinator.*.* coordinator")
    // no wildcard in a principal's token: nobody may ask as another
    for (const principal of all) {
      for (const subject of principal.publish.filter((subject) => subject.includes(".coordinator."))) {
        expect(subject.split(".")[3], subject).toBe(principal.user)
      }
    }
    const two = Authorization.principals({ namespace: "ns1", sessionHosts: ["sessions", "sessions2"] })
    expect(two.find((principal) => principal.user === "sessions2")!.publish).toContain("jitbox.ns1.coordinator.sessions2.admit")
    expect(two.find((principal) => principal.user === "sessions2")!.publish).not.toContain("jitbox.ns1.coordinator.sessions.admit")
  })

  it("the catalog: session hosts publish entries and packages but write no review, the operator writes reviews only, nobody else reaches the bucket", () => {
    const bucket = "jitbox-catalog-ns1"
    const catalogSubjects = (principal: Authorization.Principal) => principal.publish.filter((subject) => subject.includes(bucket))
    const writes = (principal: Authorization.Principal) => catalogSubjects(principal).filter((subject) => subject.startsWith("$KV.") || subject.includes(".STREAM.CREATE.") || subject.includes(".PURGE."))
    expect(writes(byUser.get("sessions")!)).toEqual([`$JS.API.STREAM.CREATE.KV_${bucket}`, `$KV.${bucket}.entry.>`, `$KV.${bucket}.pkg.>`])
    expect(writes(byUser.get("operator")!)).toEqual([`$KV.${bucket}.review.>`])
    expect(catalogSubjects(byUser.get("operator")!)).toContain(`$JS.API.DIRECT.GET.KV_${bucket}.>`)
    for (const user of ["web", "batch", "observer", "coordinator", "worker-default", "worker-gpu", "node-node-a"]) expect(catalogSubjects(byUser.get(user)!), user).toEqual([])
    const approving = Authorization.principals({ namespace: "ns1", catalogHostsApprove: true }).find((principal) => principal.user === "sessions")!
    expect(writes(approving)).toContain(`$KV.${bucket}.review.>`)
  })

  it("the printed block names each password by an environment variable, never a value", () => {
    const text = Authorization.config({ namespace: "ns1" })
    expect(text).toContain("password: $JITBOX_PASSWORD_WORKER_DEFAULT")
    expect(text).not.toMatch(/password: "/)
  })

  it("refuses a name that is not a subject token", () => {
    expect(() => Authorization.principals({ namespace: "a.b" })).toThrow(/namespace "a.b"/)
    expect(() => Authorization.principals({ namespace: "ns1", pools: ["*"] })).toThrow(/pool/)
  })
})
