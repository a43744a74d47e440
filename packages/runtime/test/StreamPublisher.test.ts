/** Event and profile streams on the in-memory transport (packages/nats runs the same suite on a real nats-server). */
import * as MemoryTransport from "../src/MemoryTransport.js"
import { streamConformance } from "./StreamConformance.js"

streamConformance("MemoryTransport", () => MemoryTransport.layer())
