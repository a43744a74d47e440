/**
 * What the transport itself puts on the wire besides the caller's bytes: the size NATS counts for
 * a message (data plus encoded headers), header checks, and the status headers a responder
 * answers with when it cannot run the handler (`Busy`, `Closed`, `ResponderFailed`,
 * `PayloadTooLarge`). A requester turns such a reply into a `TransportError` with that reason.
 */
import type { Headers, Message } from "../Transport.js"
import { isReason, TransportError, type TransportErrorReason } from "../TransportError.js"

export const errorHeader = "Jitbox-Transport-Error"
export const detailHeader = "Jitbox-Transport-Detail"

const encoder = new TextEncoder()
const maxDetail = 512

/** Bytes NATS counts against `max_payload`: data plus the `NATS/1.0` header block, when there are headers. */
export const payloadSize = (data: Uint8Array, headers: Headers | undefined): number => {
  if (headers === undefined) return data.length
  let size = 0
  let any = false
  for (const key in headers) {
    any = true
    size += encoder.encode(key).length + 2 + encoder.encode(headers[key]!).length + 2
  }
  return any ? data.length + 10 + size + 2 : data.length
}

const headerName = /^[!-9;-~]+$/

/** Bounds of the headers of one message: how many, and their encoded bytes (names and values). */
export const headerLimits = { count: 32, bytes: 8_192 } as const

/** What is wrong with `headers`, or undefined. */
export const checkHeaders = (headers: Headers): string | undefined => {
  let count = 0
  let bytes = 0
  for (const key in headers) {
    if (++count > headerLimits.count) return `more than ${headerLimits.count} headers`
    if (!headerName.test(key)) return `a header name ${JSON.stringify(key)} that is not printable ASCII without ":" or spaces`
    const value = headers[key]
    if (typeof value !== "string") return `a header ${key} whose value is not a string`
    if (/[\r\n]/.test(value)) return `a header ${key} whose value holds a line break`
    bytes += key.length + encoder.encode(value).length
    if (bytes > headerLimits.bytes) return `headers of more than ${headerLimits.bytes} bytes`
  }
  return undefined
}

export const headers = (reason: TransportErrorReason, detail: string): Headers => ({
  [errorHeader]: reason,
  [detailHeader]: detail.replace(/[\r\n]+/g, " ").slice(0, maxDetail)
})

/** The error a status reply stands for, or undefined for an ordinary reply. */
export const errorOf = (message: Message, subject: string): TransportError | undefined => {
  const reason = message.headers[errorHeader]
  if (reason === undefined) return undefined
  return new TransportError({
    reason: isReason(reason) ? reason : "ResponderFailed",
    subject,
    detail: message.headers[detailHeader] ?? "the responder answered with an error"
  })
}
