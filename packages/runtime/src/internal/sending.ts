/**
 * The sending side of the transport over a driver: `publish`, and `request` with its semantics
 * written once for every layer. A message is checked before the wire (`transportChecks`); a reply
 * carrying a responder's status (`Busy`, `ResponderFailed`, `Closed`, `PayloadTooLarge`) rejects
 * with that reason; an aborted signal rejects `Cancelled` at once.
 *
 * Plain functions and Promises: they run once per tool call.
 */
import * as Either from "effect/Either"
import type { Driver, Headers, Message, Payload, RequestOptions } from "../Transport.js"
import { TransportError } from "../TransportError.js"
import * as Status from "./status.js"
import { invalid, outgoing } from "./transportChecks.js"

const cancelled = (subject: string) => new TransportError({ reason: "Cancelled", subject, detail: "the caller's signal aborted the request" })

export const publish = (driver: Driver, subject: string, payload: Payload, headers: Headers | undefined): void => {
  const data = outgoing(driver, subject, payload, headers)
  if (Either.isLeft(data)) throw data.left
  driver.publish(subject, data.right, headers)
}

/** Rejects with the signal's `Cancelled` when it aborts before `reply` settles. */
const abortable = (subject: string, reply: Promise<Message>, signal: AbortSignal): Promise<Message> =>
  new Promise<Message>((resolve, reject) => {
    const onAbort = () => reject(cancelled(subject))
    signal.addEventListener("abort", onAbort, { once: true })
    reply.then((message) => {
      signal.removeEventListener("abort", onAbort)
      resolve(message)
    }, (error: unknown) => {
      signal.removeEventListener("abort", onAbort)
      reject(error)
    })
  })

export const request = (driver: Driver, subject: string, payload: Payload, options: RequestOptions): Promise<Message> => {
  const { headers, signal, timeoutMs } = options
  if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    return Promise.reject(invalid(subject, `timeoutMs must be a positive number of milliseconds, got ${String(timeoutMs)}`))
  }
  const data = outgoing(driver, subject, payload, headers)
  if (Either.isLeft(data)) return Promise.reject(data.left)
  if (signal?.aborted === true) return Promise.reject(cancelled(subject))
  let pending: Promise<Message>
  try {
    pending = driver.request(subject, data.right, headers, timeoutMs)
  } catch (error) {
    return Promise.reject(error)
  }
  const checked = pending.then((reply) => {
    const error = Status.errorOf(reply, subject)
    if (error !== undefined) throw error
    return reply
  })
  return signal === undefined ? checked : abortable(subject, checked, signal)
}
