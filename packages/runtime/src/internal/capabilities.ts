/**
 * The capabilities a session hands its workers: one secret per `activate` and per `invoke` it
 * sends, delivered only to the worker that takes the message, and revoked when the answer comes.
 * What a worker sends back is served only with a live capability: a package chunk of the
 * capability's own version, a nested call of the capability's own call. A worker credential that
 * reads no invocation (the queue group keeps plain copies from it) holds no capability, so it
 * can neither fetch a tool's source nor act as a running call.
 */
import { randomFillSync } from "node:crypto"
import type * as WorkerProtocol from "../WorkerProtocol.js"

interface Grant {
  readonly versionId: string
  /** The call an invocation's capability acts as; `undefined` for an activation's. */
  readonly callId: string | undefined
}

const capabilityBytes = 16

/**
 * Random bytes for 256 capabilities at a time: one call into the system's generator per 256
 * calls instead of one per call. Each capability's bytes are used once.
 */
const pool = Buffer.alloc(capabilityBytes * 256)
let used = pool.length

/** 128 random bits, base64url: what `WorkerProtocol.Capability` accepts. */
export const fresh = (): WorkerProtocol.Capability => {
  if (used === pool.length) {
    randomFillSync(pool)
    used = 0
  }
  const capability = pool.toString("base64url", used, used + capabilityBytes)
  used += capabilityBytes
  return capability as WorkerProtocol.Capability
}

export class Capabilities {
  private readonly grants = new Map<string, Grant>()

  /** A capability for one message about `versionId` (and the call `callId`, for an invocation). */
  issue(versionId: string, callId?: string): WorkerProtocol.Capability {
    const capability = fresh()
    this.grants.set(capability, { versionId, callId })
    return capability
  }

  revoke(capability: WorkerProtocol.Capability): void {
    this.grants.delete(capability)
  }

  /** Whether `capability` may fetch the package of `versionId`. */
  allowsPackage(capability: string, versionId: string): boolean {
    return this.grants.get(capability)?.versionId === versionId
  }

  /** Whether `capability` acts as the running call `callId`. */
  allowsCall(capability: string, callId: string): boolean {
    const grant = this.grants.get(capability)
    return grant !== undefined && grant.callId === callId
  }

  /** Capabilities live now (activations and invocations in flight). */
  get size(): number {
    return this.grants.size
  }
}
