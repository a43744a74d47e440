/**
 * One connection per process, on a real nats-server with its monitoring port open: the transport
 * and every KV service built on one `NatsConnection.layer` are one client connection as the
 * server counts them (`/connz`), used by all of them, and gone once the layer's scope closes.
 * Credentials: a URL's user and password (or token) are taken out of it (nats.js would drop them)
 * and never printed; an NKey seed file that holds no user seed fails before anything is sent.
 */
import { Ids, Ledger, SessionOwnership, SnapshotStore, Subject, Transport } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { afterAll, beforeAll } from "vitest"
import { conformanceSnapshot } from "../../runtime/test/SnapshotStoreConformance.js"
import * as KvLedger from "../src/KvLedger.js"
import * as KvSessionOwnership from "../src/KvSessionOwnership.js"
import * as KvSnapshotStore from "../src/KvSnapshotStore.js"
import * as NatsConnection from "../src/NatsConnection.js"
import * as NatsTransport from "../src/NatsTransport.js"


let server: NatsServer.Handle | undefined
let monitoring = 0
beforeAll(async () => {
  monitoring = await NatsServer.freePort()
  server = await NatsServer.start({ config: `http: "127.0.0.1:${monitoring}"\n` })
})
afterAll(() => server?.close())

interface Connz {
  readonly num_connections: number
  readonly connections: ReadonlyArray<{ readonly name?: string; readonly subscriptions: number }>
}

/** The client connections the server counts now. */
const connz = Effect.promise(async (): Promise<Connz> => {
  const response = await fetch(`http://127.0.0.1:${monitoring}/connz?subs=1`)
  return (await response.json()) as Connz
})

/** The server's connections named `name`, once `count` of them are open (the server sees a close a moment later). */
const namedUntil = (name: string, count: number) =>
  connz.pipe(
    Effect.map((state) => state.connections.filter((connection) => connection.name === name)),
    Effect.repeat({ until: (named) => named.length === count }),
    Effect.timeout("5 seconds")
  )

describe("NatsConnection", () => {
  it.scopedLive("the transport, the KV ledger, snapshot store and session ownership share one connection, closed with the layer's scope", () =>
    Effect.gen(function*() {
      const name = "jitbox-shared-test"
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        Layer.mergeAll(
          NatsTransport.layer,
          KvLedger.layer({ bucket: "shared-ledger" }),
          KvSnapshotStore.layer({ bucket: "shared-snapshots" }),
          KvSessionOwnership.layer({ bucket: "shared-owners" })
        ).pipe(Layer.provideMerge(NatsConnection.layer({ servers: server!.url, name }))),
        scope
      )

      // every service works on it
      const transport = Context.get(context, Transport.Transport)
      const subject = Subject.sessionCall(Subject.prefix(Ids.namespace("shared")), Ids.sessionId("s1"))
      yield* Scope.extend(transport.serve(subject, { concurrency: 1, graceMs: 0 }, async (request) => `echo:${Transport.text(request)}`), scope)
      assert.strictEqual(Transport.text(yield* Effect.promise(() => transport.request(subject, "ping", { timeoutMs: 5_000 }))), "echo:ping")
      const ledger = Context.get(context, Ledger.Ledger)
      yield* ledger.put("session.s1", { used: 1 }, 0)
      assert.deepStrictEqual((yield* ledger.get("session.s1"))?.value, { used: 1 })
      const snapshots = Context.get(context, SnapshotStore.SnapshotStore)
      yield* snapshots.save(Ids.sessionId("s1"), conformanceSnapshot)
      assert.deepStrictEqual(Option.getOrThrow(yield* snapshots.load(Ids.sessionId("s1"))), conformanceSnapshot)
      const claim = yield* Context.get(context, SessionOwnership.SessionOwnership).claim(Ids.sessionId("s1"), "host-a")
      assert.strictEqual(claim.ownerId, "host-a")

      // one connection, holding the transport's subscription
      const named = yield* namedUntil(name, 1)
      assert.strictEqual(named.length, 1)
      assert.isAtLeast(named[0]!.subscriptions, 1)
      assert.strictEqual((yield* connz).num_connections, 1)
      assert.strictEqual(Context.get(context, NatsConnection.NatsConnection).nc.isClosed(), false)

      yield* Scope.close(scope, Exit.void)
      assert.lengthOf(yield* namedUntil(name, 0), 0)
      assert.strictEqual(Context.get(context, NatsConnection.NatsConnection).nc.isClosed(), true)
    }))
})

describe("NatsConnection's credentials", () => {
  it("serverUrl takes the credentials out of a URL, percent-decoded: a user and password, or a token", () => {
    assert.deepStrictEqual(NatsConnection.serverUrl("nats://127.0.0.1:4222"), { url: "nats://127.0.0.1:4222" })
    assert.deepStrictEqual(NatsConnection.serverUrl(" nats://al%40ice:p@ss:w@10.0.0.1:4222 "), { url: "nats://10.0.0.1:4222", user: "al@ice", password: "p@ss:w" })
    assert.deepStrictEqual(NatsConnection.serverUrl("tls://s3cret@[::1]:4222"), { url: "tls://[::1]:4222", token: "s3cret" })
    assert.deepStrictEqual(NatsConnection.serverUrl("u:p@host:4222"), { url: "host:4222", user: "u", password: "p" })
  })

  it.effect("checkOptions: two ways to authenticate are a ConfigError naming the first", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(NatsConnection.checkOptions({ servers: "nats://127.0.0.1:4222", nkeySeedFile: "/user.nk", credentialsFile: "/user.creds" }))
      assert.strictEqual(error.option, "nkeySeedFile")
      assert.include(error.detail, "credentialsFile")
    }))

  it.live("a file that holds no NKey user seed fails Connect naming it, before anything is sent", () =>
    Effect.gen(function*() {
      const file = `${server!.storeDir}-not-a-seed.nk`
      yield* Effect.promise(() => import("node:fs").then((fs) => fs.promises.writeFile(file, "SAAnotaseed\n")))
      const error = yield* Effect.flip(Effect.scoped(NatsConnection.make({ servers: server!.url, nkeySeedFile: file })))
      assert.strictEqual(error.reason, "Connect")
      assert.include(error.detail, `the NKey seed file ${file} holds no user seed`)
    }))

  it.live("a refused connection names the URL without its credentials", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.scoped(NatsConnection.make({ servers: "nats://u:top-secret@127.0.0.1:1", connectTimeoutMs: 2_000 })))
      assert.strictEqual(error.reason, "Connect")
      assert.include(error.detail, "cannot connect to nats://127.0.0.1:1")
      assert.notInclude(error.detail, "top-secret")
    }))

  it.live("credentials in the URL reach the server (one without authorization lets them in)", () =>
    Effect.gen(function*() {
      const connection = yield* NatsConnection.make({ servers: server!.url.replace("nats://", "nats://u:p@") })
      assert.isFalse(connection.nc.isClosed())
    }).pipe(Effect.scoped))
})
