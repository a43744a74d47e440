/**
 * The checks `Transport.fromDriver` makes before a driver sees a call, and the defaults they
 * fill in: an outgoing message (a literal subject, a string or bytes payload, headers within
 * `headerLimits`, data plus headers within the driver's `max_payload`), and the options of `serve`
 * and `subscribe`. A refused argument is a `TransportError`: `InvalidArgument`, or
 * `PayloadTooLarge` for a message the medium does not carry.
 */
import * as Either from "effect/Either"
import * as Subject from "../Subject.js"
import type { Driver, Headers, Payload, ServeOptions, SubscribeOptions } from "../Transport.js"
import { TransportError } from "../TransportError.js"
import * as Status from "./status.js"

export const defaults = {
  backlog: 1024,
  graceMs: 10_000,
  bufferSize: 1024,
  /** How long `serve` / `subscribe` wait for the server to confirm the subscription before going on without it. */
  flushTimeoutMs: 5_000
} as const

export const invalid = (subject: string, detail: string) => new TransportError({ reason: "InvalidArgument", subject, detail })

const positiveInteger = (value: number | undefined, fallback: number): number | undefined =>
  value === undefined ? fallback : Number.isSafeInteger(value) && value >= 1 ? value : undefined

const encoder = new TextEncoder()

/** The encoded data of a message to send on the right, or on the left the error that refuses it. */
export const outgoing = (
  driver: Driver,
  subject: string,
  payload: Payload,
  headers: Headers | undefined
): Either.Either<Uint8Array, TransportError> => {
  if (!Subject.isLiteral(subject)) return Either.left(invalid(subject, "not a literal subject: non-empty tokens joined by \".\", no wildcards or whitespace"))
  if (typeof payload !== "string" && !(payload instanceof Uint8Array)) return Either.left(invalid(subject, "the payload is neither a string nor a Uint8Array"))
  if (headers !== undefined) {
    const bad = Status.checkHeaders(headers)
    if (bad !== undefined) return Either.left(invalid(subject, `the message has ${bad}`))
  }
  const data = typeof payload === "string" ? encoder.encode(payload) : payload
  const size = Status.payloadSize(data, headers)
  const max = driver.maxPayload()
  if (size > max) {
    return Either.left(
      new TransportError({
        reason: "PayloadTooLarge",
        subject,
        detail: `the message is ${size} bytes (data and headers); the server's max_payload is ${max}`
      })
    )
  }
  return Either.right(data)
}

/** `ServeOptions` with the defaults filled in. */
export interface ServeSettings {
  readonly queue: string | undefined
  readonly concurrency: number
  readonly backlog: number
  readonly graceMs: number
}

/** The settings of a responder on `pattern`, or the error that refuses the pattern or an option. */
export const serveSettings = (pattern: string, options: ServeOptions): Either.Either<ServeSettings, TransportError> => {
  if (!Subject.isPattern(pattern)) return Either.left(invalid(pattern, "not a subject pattern"))
  const concurrency = positiveInteger(options.concurrency, 1)
  if (concurrency === undefined) return Either.left(invalid(pattern, `concurrency must be an integer ≥ 1, got ${String(options.concurrency)}`))
  const backlog = options.backlog === 0 ? 0 : positiveInteger(options.backlog, defaults.backlog)
  if (backlog === undefined) return Either.left(invalid(pattern, `backlog must be an integer ≥ 0, got ${String(options.backlog)}`))
  const graceMs = options.graceMs ?? defaults.graceMs
  if (!(Number.isFinite(graceMs) && graceMs >= 0)) return Either.left(invalid(pattern, `graceMs must be ≥ 0, got ${String(graceMs)}`))
  if (options.queue !== undefined && !/^[^\s]+$/.test(options.queue)) {
    return Either.left(invalid(pattern, `the queue group ${JSON.stringify(options.queue)} is empty or holds whitespace`))
  }
  return Either.right({ queue: options.queue, concurrency, backlog, graceMs })
}

/** The buffer size of a subscription to `pattern`, or the error that refuses the pattern or the option. */
export const bufferSize = (pattern: string, options: SubscribeOptions | undefined): Either.Either<number, TransportError> => {
  if (!Subject.isPattern(pattern)) return Either.left(invalid(pattern, "not a subject pattern"))
  const size = positiveInteger(options?.bufferSize, defaults.bufferSize)
  return size === undefined
    ? Either.left(invalid(pattern, `bufferSize must be an integer ≥ 1, got ${String(options?.bufferSize)}`))
    : Either.right(size)
}
