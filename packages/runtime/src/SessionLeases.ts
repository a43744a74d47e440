/**
 * The coordinator leases of the sessions in this process, by session id: `Sessions` registers a
 * session's lease when it admits the session, and the `RemoteCodeRunner` reads it for every
 * activation and invocation it sends, so a worker is handed the lease id to check with the
 * coordinator, and the invocation goes to the pool (`location`) or the pinned worker
 * (`sandboxNodeId`) of the session's profile.
 *
 * `RemoteCodeRunner.layer` provides one with the runner; a `Sessions` built on that layer sees it.
 * A gauge of the budgets left (`@jitbox/otel`'s `Metrics.watchLeases`) reads `entries`.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type * as Ids from "./Ids.js"

/** What the runner needs of a session's lease. @since 0.1.0 @category models */
export interface SessionLease {
  /** The lease's id now (a session admitted again gets a new one). */
  readonly leaseId: () => string
  /** The worker pool of the session's profile. */
  readonly location: string | undefined
  /** The one worker the session's profile pins its code to. */
  readonly sandboxNodeId: string | undefined
  /** Invocations the lease has left now (granted minus spent); for gauges. */
  readonly invocationsLeft?: (() => number) | undefined
}

/** @since 0.1.0 @category models */
export interface SessionLeasesShape {
  /** Registers the session's lease until the scope closes. */
  readonly register: (sessionId: Ids.SessionId, lease: SessionLease) => Effect.Effect<void, never, Scope.Scope>
  readonly get: (sessionId: string) => SessionLease | undefined
  /** Every lease registered now, by session id. */
  readonly entries: () => ReadonlyArray<readonly [string, SessionLease]>
}

/** @since 0.1.0 @category tags */
export class SessionLeases extends Context.Tag("@jitbox/runtime/SessionLeases")<SessionLeases, SessionLeasesShape>() {}

/** @since 0.1.0 @category constructors */
export const make = (): SessionLeasesShape => {
  const leases = new Map<string, SessionLease>()
  return {
    register: (sessionId, lease) =>
      Effect.acquireRelease(Effect.sync(() => leases.set(sessionId, lease)), () =>
        Effect.sync(() => {
          if (leases.get(sessionId) === lease) leases.delete(sessionId)
        })),
    get: (sessionId) => leases.get(sessionId),
    entries: () => [...leases]
  }
}

/** @since 0.1.0 @category layers */
export const layer: Layer.Layer<SessionLeases> = Layer.sync(SessionLeases, make)
