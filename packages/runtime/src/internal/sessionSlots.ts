/**
 * The registry of a host's sessions: one slot per session, `activating` (its actor is being
 * built), `active` (its actor and the scope it lives in) or `closing` (its scope is closing), and
 * no slot once it is gone. `acquire` answers the active actor, or joins the activation or the
 * closing under way, or starts an activation; `release` stores a session (unless it is stored
 * already) and closes it. At most `maxActive` sessions hold a slot (activating, active or closing):
 * an activation that finds them all taken first passivates the least recently used idle session
 * (stored, then closed, as an idle session is: nothing is lost), and is refused with `full()` (the
 * host's `TransportError` `Busy`) when every session is busy or pinned. `forget` waits out an
 * activation or a closing, then releases. After `close` (the host is closing) nothing activates
 * and no session is active.
 *
 * The slots hold Promises, not Effect `Deferred`s, on purpose: every caller that waits on a slot
 * is Promise code (`LocalSession`, the `sessions.activate` responder, `forget`), each check and
 * the write that follows it happen in one synchronous step (so two callers never both start an
 * activation), and `activeActor`, which `LocalSession.callTool` reads on every call, stays a map
 * read. A `Deferred` would add an Effect run for every waiter and remove no state.
 */
import { HarnessError } from "@jitbox/core"
import type { JitHarnessSnapshot } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Ids from "../Ids.js"
import type * as SessionActor from "../SessionActor.js"

/** An actor and the scope it lives in (closing the scope closes the session). */
export interface Started {
  readonly actor: SessionActor.SessionActor
  readonly scope: Scope.CloseableScope
}

type Slot =
  | { readonly state: "activating"; readonly pending: Promise<SessionActor.SessionActor> }
  | { readonly state: "active"; readonly actor: SessionActor.SessionActor; readonly scope: Scope.CloseableScope }
  | { readonly state: "closing"; readonly closed: Promise<void> }

export interface SlotsOptions {
  /** Activates a session (run on its own fiber: a caller that stops waiting does not stop it). */
  readonly start: (sessionId: Ids.SessionId) => Promise<Started>
  /** Runs an Effect from Promise code, rejecting with its typed failure. */
  readonly run: <A, E>(effect: Effect.Effect<A, E>) => Promise<A>
  /** The scope background releases are forked in. */
  readonly hostScope: Scope.Scope
  /** Told of each session that became active. */
  readonly onActive: (sessionId: Ids.SessionId, actor: SessionActor.SessionActor) => void
  /** Sessions holding a slot at most (activating, active or closing). */
  readonly maxActive: number
  /** Why an activation is refused when every slot is taken by a busy session. */
  readonly full: () => Error
  /** The time now, by the host's clock (epoch milliseconds). */
  readonly now: () => number
}

export interface SessionSlots {
  /** The session's actor if it is active now (a map read). */
  readonly activeActor: (sessionId: Ids.SessionId) => SessionActor.SessionActor | undefined
  /** The session's actor, activated if it is not; rejects with why it cannot be. */
  readonly acquire: (sessionId: Ids.SessionId) => Promise<SessionActor.SessionActor>
  /** Stores (unless `stored`), then closes, an active session; `stillIdle` is asked again after the save. */
  readonly release: (
    sessionId: Ids.SessionId,
    stillIdle: (actor: SessionActor.SessionActor) => boolean,
    stored?: boolean
  ) => Effect.Effect<boolean, JitHarnessSnapshot.SnapshotError>
  /** Closes an active session, already stored, in the background (in the host's scope). */
  readonly releaseStored: (sessionId: Ids.SessionId) => Effect.Effect<unknown>
  /** Stores and releases the session once no activation or closing is under way; a bad id rejects `ConfigError`. */
  readonly forget: (sessionId: string) => Promise<void>
  /** The active sessions and their actors. */
  readonly entries: () => ReadonlyArray<readonly [Ids.SessionId, SessionActor.SessionActor]>
  /** The sessions active now. */
  readonly active: () => ReadonlyArray<Ids.SessionId>
  /** The host is closing: nothing activates any more, and no session counts as active. */
  readonly close: () => void
}

/** The idle active sessions, least recently used first. */
const evictable = (slots: ReadonlyMap<Ids.SessionId, Slot>, now: number): Array<Ids.SessionId> =>
  [...slots].flatMap(([sessionId, slot]) =>
    slot.state === "active" && !slot.actor.pinned() && slot.actor.inflight() === 0 ? [[sessionId, slot.actor.idleFor(now)] as const] : []
  ).sort(([, a], [, b]) => b - a).map(([sessionId]) => sessionId)

/**
 * Passivates the least recently used idle session, or waits for a session closing already;
 * rejects with `full()` when neither is there (every session is busy, pinned or activating).
 */
const makeRoom = async (slots: ReadonlyMap<Ids.SessionId, Slot>, options: SlotsOptions, release: SessionSlots["release"]): Promise<void> => {
  for (const sessionId of evictable(slots, options.now())) {
    const released = await options.run(release(sessionId, (actor) => !actor.pinned() && actor.inflight() === 0)).catch(() => false)
    if (released) return
  }
  for (const slot of slots.values()) {
    if (slot.state === "closing") return slot.closed
  }
  throw options.full()
}

export const make = (options: SlotsOptions): SessionSlots => {
  const slots = new Map<Ids.SessionId, Slot>()
  let closed = false

  const activeActor = (sessionId: Ids.SessionId): SessionActor.SessionActor | undefined => {
    if (closed) return undefined
    const slot = slots.get(sessionId)
    return slot?.state === "active" ? slot.actor : undefined
  }

  const acquire = (sessionId: Ids.SessionId): Promise<SessionActor.SessionActor> => {
    if (closed) return Promise.reject(new HarnessError.HarnessReleased({ sessionId, operation: "activating the session" }))
    const slot = slots.get(sessionId)
    if (slot?.state === "active") return Promise.resolve(slot.actor)
    if (slot?.state === "activating") return slot.pending
    if (slot?.state === "closing") return slot.closed.then(() => acquire(sessionId))
    if (slots.size >= options.maxActive) return makeRoom(slots, options, release).then(() => acquire(sessionId))
    const started = options.start(sessionId)
    const pending = started.then(({ actor }) => actor)
    const activating: Slot = { state: "activating", pending }
    slots.set(sessionId, activating)
    started.then(({ actor, scope }) => {
      if (slots.get(sessionId) === activating) slots.set(sessionId, { state: "active", actor, scope })
      options.onActive(sessionId, actor)
    }, () => {
      if (slots.get(sessionId) === activating) slots.delete(sessionId)
    })
    return pending
  }

  const release: SessionSlots["release"] = (sessionId, stillIdle, stored = false) =>
    Effect.gen(function*() {
      const slot = slots.get(sessionId)
      if (slot?.state !== "active" || !stillIdle(slot.actor)) return false
      if (!stored) yield* slot.actor.persist
      if (slots.get(sessionId) !== slot || !stillIdle(slot.actor)) return false
      let done!: () => void
      const closing: Slot = { state: "closing", closed: new Promise<void>((resolve) => done = resolve) }
      slots.set(sessionId, closing)
      yield* Scope.close(slot.scope, Exit.void)
      if (slots.get(sessionId) === closing) slots.delete(sessionId)
      done()
      return true
    }).pipe(Effect.uninterruptible)

  const releaseStored = (sessionId: Ids.SessionId) => Effect.forkIn(release(sessionId, () => true, true), options.hostScope)

  const forget = async (sessionId: string): Promise<void> => {
    const id = Ids.sessionId(sessionId)
    for (;;) {
      const slot = slots.get(id)
      if (slot === undefined) return
      if (slot.state === "activating") await slot.pending.catch(() => undefined)
      else if (slot.state === "closing") await slot.closed
      else {
        await options.run(release(id, () => true))
        return
      }
    }
  }

  const entries = () => [...slots].flatMap(([sessionId, slot]) => slot.state === "active" ? [[sessionId, slot.actor] as const] : [])

  return {
    activeActor,
    acquire,
    release,
    releaseStored,
    forget,
    entries,
    active: () => closed ? [] : entries().map(([sessionId]) => sessionId),
    close: () => {
      closed = true
    }
  }
}
