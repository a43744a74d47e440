/**
 * A message that does not follow the protocol: it is not JSON, is of another protocol version,
 * its `kind` is not one the subject takes, a field is missing or of the wrong type, or a reply
 * holds an error this version does not know. It is told apart from a `TransportError` (the
 * message layer failed: nothing answered, time ran out, the connection closed) because what a
 * caller knows differs: a request answered `ProtocolError` ran nothing, and a retry of the same
 * bytes fails the same way.
 *
 * - `Decode`: the message (or a reply) does not decode with the operation's schema;
 * - `Version`: the message's `v` is not the version this runtime speaks.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/** @since 0.1.0 @category models */
export const ProtocolErrorReason = Schema.Literal("Decode", "Version")

/** @since 0.1.0 @category models */
export type ProtocolErrorReason = typeof ProtocolErrorReason.Type

/** @since 0.1.0 @category errors */
export class ProtocolError extends Schema.TaggedError<ProtocolError>()("ProtocolError", {
  reason: ProtocolErrorReason,
  /** The subject the message came on or went to; empty when none is. */
  subject: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return this.subject === "" ? `${this.reason}: ${this.detail}` : `${this.reason} on ${this.subject}: ${this.detail}`
  }
}

/** @since 0.1.0 @category refinements */
export const isProtocolError = (u: unknown): u is ProtocolError =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "ProtocolError"
