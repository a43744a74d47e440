/**
 * Driver calls as Effects, for the transport's scoped operations and its Effect accessors: a
 * `TransportError` a call throws or rejects with is a failure, anything else a defect; and the
 * flush after a new subscription, bounded so a server that does not confirm it in time does not
 * hold the caller (best effort: a subscription made while disconnected still reaches the server
 * on reconnect).
 */
import * as Effect from "effect/Effect"
import type { Driver } from "../Transport.js"
import { isTransportError, type TransportError } from "../TransportError.js"
import { defaults } from "./transportChecks.js"

/** Keeps a `TransportError` as the failure; anything else is a defect. */
export const orDie = <A>(effect: Effect.Effect<A, unknown>): Effect.Effect<A, TransportError> =>
  Effect.catchAll(effect, (error) => isTransportError(error) ? Effect.fail(error) : Effect.die(error))

/** Runs a driver call: its `TransportError` is a failure, anything else a defect. */
export const attempt = <A>(f: () => A): Effect.Effect<A, TransportError> => orDie(Effect.try({ try: f, catch: (error) => error }))

/** Waits for the server to see the subscriptions made so far, at most `defaults.flushTimeoutMs`. */
export const flushBounded = (driver: Driver): Effect.Effect<void> =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, defaults.flushTimeoutMs)
      driver.flush().then(() => {
        clearTimeout(timer)
        resolve()
      }, () => {
        clearTimeout(timer)
        resolve()
      })
    })
  )
