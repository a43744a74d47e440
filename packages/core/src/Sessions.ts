/**
 * The sessions of an application, by id: a session is made (and, from a snapshot, activated) on
 * first use, and kept until it is forgotten. `local` keeps one `JitHarness` per session in this
 * process; the runtime provides sessions that live as actors elsewhere.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import { JitHarness, type JitHarnessOptions } from "./JitHarness.js"
import type * as JitHarnessSnapshot from "./JitHarnessSnapshot.js"
import type { Session } from "./Session.js"

/** @since 0.1.0 @category models */
export interface SessionsShape {
  /** The session `sessionId`, made on first use. */
  readonly get: (sessionId: string) => Session
  /** Releases a session's toolbox (LIFE-06); the next `get` starts it afresh. */
  readonly forget: (sessionId: string) => Promise<void>
}

/** @since 0.1.0 @category tags */
export class Sessions extends Context.Tag("@jitbox/core/Sessions")<Sessions, SessionsShape>() {}

/** @since 0.1.0 @category models */
export interface LocalOptions {
  /** Every new session starts as a copy of this snapshot (SNAP-03). */
  readonly snapshot?: JitHarnessSnapshot.JitHarnessSnapshot | undefined
  readonly options?: Omit<JitHarnessOptions, "sessionId"> | undefined
}

/**
 * One `JitHarness` per session in this process. Options are checked now: a bad one throws here
 * with a `ConfigError`, not on a first request.
 *
 * @since 0.1.0
 * @category constructors
 */
export const local = (config: LocalOptions = {}): SessionsShape & { readonly harness: (sessionId: string) => JitHarness } => {
  const options = config.options ?? {}
  void new JitHarness({ ...options, sessionId: "options-check" }).release()
  const harnesses = new Map<string, JitHarness>()
  const harness = (sessionId: string): JitHarness => {
    let found = harnesses.get(sessionId)
    if (found === undefined) {
      found = config.snapshot === undefined
        ? new JitHarness({ ...options, sessionId })
        : new JitHarness(config.snapshot, { ...options, sessionId })
      harnesses.set(sessionId, found)
    }
    return found
  }
  return {
    get: harness,
    harness,
    forget: async (sessionId) => {
      const found = harnesses.get(sessionId)
      if (found === undefined) return
      harnesses.delete(sessionId)
      await found.release()
    }
  }
}

/** @since 0.1.0 @category layers */
export const layerLocal = (config: LocalOptions = {}): Layer.Layer<Sessions> => Layer.sync(Sessions, () => local(config))
