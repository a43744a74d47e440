/**
 * The coordinator and leased admission on the in-memory transport and ledger (packages/nats runs
 * the same suite on a real nats-server and JetStream KV).
 */
import type { HarnessError } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Coordinator from "../src/Coordinator.js"
import * as ExecutionProfile from "../src/ExecutionProfile.js"
import * as Ids from "../src/Ids.js"
import * as Ledger from "../src/Ledger.js"
import * as MemoryTransport from "../src/MemoryTransport.js"
import { coordinatorConformance } from "./CoordinatorConformance.js"

// One ledger per namespace outlives the coordinators of a test, as a store would.
const ledgers = new Map<Ids.Namespace, Ledger.LedgerShape>()
const ledgerOf = (namespace: Ids.Namespace) => {
  let ledger = ledgers.get(namespace)
  if (ledger === undefined) ledgers.set(namespace, ledger = Ledger.makeMemory())
  return Layer.succeed(Ledger.Ledger, ledger)
}

coordinatorConformance("MemoryTransport", () => MemoryTransport.layer(), ledgerOf)

describe("Coordinator options", () => {
  it.effect("bad options are a ConfigError in the error channel, not a defect", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Coordinator.make({ namespace: Ids.namespace("opts"), profiles: ExecutionProfile.all([{ name: "standard" }]), invocationsPerGrant: 0 }).pipe(
          Effect.scoped,
          Effect.provide(Layer.merge(MemoryTransport.layer(), Ledger.layerMemory))
        )
      )
      assert.strictEqual(error._tag, "ConfigError")
      assert.strictEqual((error as HarnessError.ConfigError).option, "invocationsPerGrant")
    }))
})
