/**
 * `serve` over a driver: a `Responder` (bounded concurrency and backlog, status replies) fed by a
 * driver subscription in the caller's scope. When the Effect succeeds the server already knows
 * about the subscription (or did not confirm it within the flush bound); a subscription the
 * server refuses fails with its error (`PermissionDenied`). Closing the scope stops the
 * subscription, then drains the responder for `graceMs`.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Driver, Handler, ServeOptions } from "../Transport.js"
import type { TransportError } from "../TransportError.js"
import { attempt, flushBounded } from "./driverCalls.js"
import { Responder } from "./responder.js"
import { serveSettings } from "./transportChecks.js"

export const serve = (
  driver: Driver,
  pattern: string,
  options: ServeOptions,
  handler: Handler
): Effect.Effect<void, TransportError, Scope.Scope> =>
  Effect.gen(function*() {
    const { backlog, concurrency, graceMs, queue } = yield* serveSettings(pattern, options)
    const responder = new Responder({ subject: pattern, concurrency, backlog, maxPayload: driver.maxPayload, handler })
    let refused: TransportError | undefined
    yield* Effect.acquireRelease(
      attempt(() => driver.subscribe(pattern, queue, { deliver: responder.deliver, end: (error) => refused ??= error })),
      (subscription) =>
        Effect.promise(async () => {
          await subscription.close()
          await responder.close(graceMs)
        })
    )
    yield* flushBounded(driver)
    if (refused !== undefined) return yield* refused
  })
