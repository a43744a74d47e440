/**
 * `subscribe` over a driver: a driver subscription in the caller's scope whose messages go to a
 * sliding `DeliveryBuffer`, read as a `Stream`. The stream ends when the scope closes and fails
 * with the error that ended the subscription otherwise (`Closed`); a subscription the server
 * refuses fails the Effect with its error (`PermissionDenied`).
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { Driver, Message, SubscribeOptions } from "../Transport.js"
import type { TransportError } from "../TransportError.js"
import { DeliveryBuffer } from "./deliveryBuffer.js"
import { attempt, flushBounded } from "./driverCalls.js"
import { bufferSize } from "./transportChecks.js"

export const subscribe = (
  driver: Driver,
  pattern: string,
  options: SubscribeOptions | undefined
): Effect.Effect<Stream.Stream<Message, TransportError>, TransportError, Scope.Scope> =>
  Effect.gen(function*() {
    const buffer = new DeliveryBuffer(yield* bufferSize(pattern, options))
    let refused: TransportError | undefined
    yield* Effect.acquireRelease(
      attempt(() =>
        driver.subscribe(pattern, undefined, {
          deliver: (message) => buffer.offer({ subject: message.subject, data: message.data, headers: message.headers, dropped: 0 }),
          end: (error) => {
            refused ??= error
            buffer.end(error)
          }
        })
      ),
      (subscription) =>
        Effect.promise(() => {
          buffer.end(undefined)
          return subscription.close()
        })
    )
    yield* flushBounded(driver)
    if (refused !== undefined) return yield* refused
    return buffer.stream
  })
