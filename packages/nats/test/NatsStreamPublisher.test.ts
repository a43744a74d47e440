/**
 * Event and profile streams on a real nats-server (one for this file, on a free port): the suite
 * the in-memory transport runs too.
 */
import { NatsServer } from "@jitbox/testing"
import { afterAll, beforeAll } from "vitest"
import * as Layer from "effect/Layer"
import { streamConformance } from "../../runtime/test/StreamConformance.js"
import * as NatsConnection from "../src/NatsConnection.js"
import * as NatsTransport from "../src/NatsTransport.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

streamConformance("NatsTransport", () => NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer({ servers: server!.url, reconnectTimeWaitMs: 100 }))))
