/**
 * The coordinator and leased admission on the in-memory transport and ledger (packages/nats runs
 * the same suite on a real nats-server and JetStream KV).
 */
import * as Layer from "effect/Layer"
import type * as Ids from "../src/Ids.js"
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
