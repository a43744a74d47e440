/**
 * The coordinator and leased admission on a real nats-server (one for this file, on a free port,
 * with JetStream): the suite the in-memory layers run too, with the ledger in a JetStream KV
 * bucket per namespace, so a restarted coordinator reads it back from the server.
 */
import { NatsServer } from "@jitbox/testing"
import { afterAll, beforeAll } from "vitest"
import * as Layer from "effect/Layer"
import { coordinatorConformance } from "../../runtime/test/CoordinatorConformance.js"
import * as KvLedger from "../src/KvLedger.js"
import * as NatsConnection from "../src/NatsConnection.js"
import * as NatsTransport from "../src/NatsTransport.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

const connection = () => ({ servers: server!.url, reconnectTimeWaitMs: 100 })

coordinatorConformance(
  "NatsTransport and KvLedger",
  () => NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer(connection()))),
  (namespace) => KvLedger.layer({ bucket: KvLedger.bucketOf(namespace) }).pipe(Layer.provide(NatsConnection.layer(connection())))
)
