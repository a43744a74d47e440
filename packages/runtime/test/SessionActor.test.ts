/**
 * Session actors on the in-memory transport: the shared suite (packages/nats runs it on a real
 * nats-server).
 */
import * as MemoryTransport from "../src/MemoryTransport.js"
import { sessionConformance } from "./SessionConformance.js"

sessionConformance("MemoryTransport", () => MemoryTransport.layer())
