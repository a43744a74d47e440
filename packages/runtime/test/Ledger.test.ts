/** The in-memory ledger (packages/nats runs the same suite on JetStream KV). */
import * as Ledger from "../src/Ledger.js"
import { ledgerConformance } from "./LedgerConformance.js"

ledgerConformance("memory", () => Ledger.layerMemory)
