import * as MemoryTransport from "../src/MemoryTransport.js"
import { remoteExecutionConformance } from "./RemoteExecutionConformance.js"

remoteExecutionConformance("MemoryTransport", () => MemoryTransport.layer())
