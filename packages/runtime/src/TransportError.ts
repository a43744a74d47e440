/**
 * The error the `Transport` raises, on both of its layers, with a `reason`:
 *
 * - `NoResponders`: nobody serves the subject (NATS status 503), known at once;
 * - `Timeout`: no reply within the request's `timeoutMs`;
 * - `Cancelled`: the caller's signal aborted the request;
 * - `PayloadTooLarge`: the message is larger than the server's `max_payload`; refused before the wire;
 * - `Busy`: the responder's backlog is full; it answered at once without running the handler;
 * - `ResponderFailed`: the responder's handler threw instead of answering;
 * - `Closed`: the transport, its connection or the responder is closed or closing;
 * - `Connect`: the connection could not be made (bad server, credentials);
 * - `PermissionDenied`: the server refused a publish or a subscription;
 * - `InvalidArgument`: a malformed subject, queue group, header or option;
 * - `Unknown`: anything else the client reported, with its message.
 *
 * A message that does not decode is a `ProtocolError`, and an invocation whose worker went
 * silent a `RemoteExecutionError`: those are not failures of the message layer.
 *
 * It is a `Schema.TaggedError`, so it can cross a subject and be decoded on the other side.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** @since 0.1.0 @category models */
export const TransportErrorReason = Schema.Literal(
  "NoResponders",
  "Timeout",
  "Cancelled",
  "PayloadTooLarge",
  "Busy",
  "ResponderFailed",
  "Closed",
  "Connect",
  "PermissionDenied",
  "InvalidArgument",
  "Unknown"
)

/** @since 0.1.0 @category models */
export type TransportErrorReason = typeof TransportErrorReason.Type

/** @since 0.1.0 @category errors */
export class TransportError extends Schema.TaggedError<TransportError>()("TransportError", {
  reason: TransportErrorReason,
  /** The subject or pattern concerned; empty when none is (a connection failure). */
  subject: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return this.subject === "" ? `${this.reason}: ${this.detail}` : `${this.reason} on ${this.subject}: ${this.detail}`
  }
}

/** @since 0.1.0 @category refinements */
export const isTransportError = (u: unknown): u is TransportError =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "TransportError"

/** @since 0.1.0 @category refinements */
export const isReason = (u: unknown): u is TransportErrorReason => Schema.is(TransportErrorReason)(u)
