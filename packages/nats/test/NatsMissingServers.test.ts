/**
 * A namespace missing one of its processes, on a real nats-server (one for this file): "no
 * responders" on a worker's subject or the coordinator's says what to start, in process and
 * across the wire to a remote caller.
 */
import { CoordinatorClient, Ids, RemoteCodeRunner, RemoteSession, Sessions, SnapshotStore, Subject, Transport, TransportError } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { afterAll, beforeAll } from "vitest"
import * as NatsConnection from "../src/NatsConnection.js"
import * as NatsTransport from "../src/NatsTransport.js"

let server: NatsServer.Handle | undefined
beforeAll(async () => {
  server = await NatsServer.start()
})
afterAll(() => server?.close())

const transport = () => NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer({ servers: server!.url, reconnectTimeWaitMs: 100 })))

const twiceTs = `export const twice = tool({ description: "Twice.", guidelines: "Use in tests." }, async ({ value }: { value: number }) => value * 2)`

const failureOf = (promise: Promise<unknown>) =>
  Effect.promise(() => promise.then((value) => assert.fail(`expected a failure, got ${JSON.stringify(value)}`), (error: unknown) => error))

describe("no responders says what to start", () => {
  it.scopedLive("no worker for TypeScript in the pool: the change fails NoResponders naming `jitbox worker --languages typescript`, here and across the wire", () =>
    Effect.gen(function*() {
      const namespace = Ids.namespace("no_worker")
      const prefix = Subject.prefix(namespace)
      const context = yield* Layer.build(Layer.merge(transport(), SnapshotStore.layerMemory()))
      const runner = yield* Layer.build(RemoteCodeRunner.layer({ prefix })).pipe(Effect.provide(context))
      const host = yield* Sessions.make({ prefix, harness: { codeExecution: "sandboxed" }, idleTimeout: "10 minutes" }).pipe(
        Effect.provide(Context.merge(context, runner))
      )
      const hint = `no worker serves TypeScript in pool default: start \`jitbox worker --namespace no_worker --languages typescript\``
      const local = yield* failureOf(host.get("s1").createTool({ entrypoint: "twice", source: twiceTs }))
      assert.instanceOf(local, TransportError.TransportError)
      assert.strictEqual((local as TransportError.TransportError).reason, "NoResponders")
      assert.strictEqual((local as TransportError.TransportError).subject, "jitbox.no_worker.worker.default.typescript.invoke")
      assert.include((local as Error).message, hint)
      const remote = new RemoteSession.RemoteSession(Context.get(context, Transport.Transport), "s2", { prefix })
      const wire = yield* failureOf(remote.createTool({ entrypoint: "twice", source: twiceTs }))
      assert.strictEqual((wire as TransportError.TransportError).reason, "NoResponders")
      assert.include((wire as Error).message, hint)
    }), 30_000)

  it.scopedLive("no coordinator in the namespace: an admission fails NoResponders naming `jitbox coordinator`", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(transport())
      const client = yield* CoordinatorClient.make({ namespace: Ids.namespace("no_coordinator") }).pipe(Effect.provide(context))
      const error = yield* Effect.flip(client.admit({ sessionId: Ids.sessionId("s1"), profile: "standard", deploymentConsent: true }))
      assert.strictEqual(error._tag, "TransportError")
      assert.strictEqual((error as TransportError.TransportError).reason, "NoResponders")
      assert.include(error.message, "no coordinator answers in namespace no_coordinator: start `jitbox coordinator --namespace no_coordinator --profiles <file.json>`")
    }), 30_000)
})
