/**
 * A worker's activations: one per (session, version, credential environment), made on first use
 * (the package fetched from its session, the module loaded in the sandbox) and kept in a bounded
 * LRU, least recently used evicted first, never while an invocation runs in it or while it loads.
 * Two sessions with the same package never share one (nor module state).
 *
 * Hand-made rather than an Effect `RcMap`/`Cache`: the lookup runs on every invocation, and a
 * Promise and a map read cost less there than running an Effect per call (see `CodeRunner`).
 */
import type { CodeRunner } from "@jitbox/core"
import type { SandboxRunner } from "@jitbox/sandbox"
import type * as Ids from "../Ids.js"
import type * as WorkerProtocol from "../WorkerProtocol.js"
import type { Admitted } from "./leaseVerification.js"

/** One activation: its id in the sandbox, its metadata once loaded, and what runs in it. */
export interface Activation {
  readonly activationId: string
  readonly ready: Promise<CodeRunner.CodeToolMetadata>
  inflight: number
  settled: boolean
}

export interface Options {
  readonly workerId: Ids.WorkerId
  /** Activations kept, at least 1. */
  readonly cacheSize: number
  readonly sandbox: SandboxRunner.SandboxRunner
  /** Fetches a package with the capability of the request that needs it. */
  readonly fetch: (sessionId: Ids.SessionId, versionId: string, capability: WorkerProtocol.Capability) => Promise<Record<string, string>>
  /** The host nested calls of the session's code go to. */
  readonly hostFor: (sessionId: Ids.SessionId) => CodeRunner.CallHost
}

const keyOf = (request: WorkerProtocol.Activation, environment: Admitted): string =>
  environment === undefined
    ? `${request.sessionId}\u0000${request.versionId}`
    : `${request.sessionId}\u0000${request.versionId}\u0000${Object.keys(environment).join()}`

export class Activations {
  private readonly cache = new Map<string, Activation>()
  private made = 0
  private fetched = 0

  constructor(private readonly o: Options) {}

  get size(): number {
    return this.cache.size
  }

  /** Package fetches made so far. */
  get fetches(): number {
    return this.fetched
  }

  /** The activation of the request's (session, version, environment), made on first use and marked most recently used. */
  get(request: WorkerProtocol.Activation, environment: Admitted): Activation {
    const k = keyOf(request, environment)
    const found = this.cache.get(k)
    if (found !== undefined) {
      this.cache.delete(k)
      this.cache.set(k, found)
      return found
    }
    const activationId = `${this.o.workerId}-${++this.made}`
    const entry: Activation = { activationId, inflight: 0, settled: false, ready: this.load(request, environment, activationId) }
    this.cache.set(k, entry)
    entry.ready.then(
      () => {
        entry.settled = true
        this.evict()
      },
      () => {
        // a failed activation is not kept: the next request tries again
        if (this.cache.get(k) === entry) this.cache.delete(k)
      }
    )
    return entry
  }

  /** An invocation starts in `entry`: it is not evicted until `release`. */
  hold(entry: Activation): void {
    entry.inflight++
  }

  release(entry: Activation): void {
    entry.inflight--
    this.evict()
  }

  private load(request: WorkerProtocol.Activation, environment: Admitted, activationId: string): Promise<CodeRunner.CodeToolMetadata> {
    this.fetched++
    return this.o.fetch(request.sessionId, request.versionId, request.capability).then((files) =>
      this.o.sandbox.activate(
        {
          sessionId: request.sessionId,
          activationId,
          toolName: request.toolName,
          versionId: request.versionId,
          language: request.language,
          entrypoint: request.entrypoint,
          entryFile: request.entryFile,
          files,
          environment
        },
        this.o.hostFor(request.sessionId)
      )
    )
  }

  private evict(): void {
    for (const [k, entry] of this.cache) {
      if (this.cache.size <= this.o.cacheSize) return
      if (entry.inflight > 0 || !entry.settled) continue
      this.cache.delete(k)
      void this.o.sandbox.release(entry.activationId)
    }
  }
}
