/**
 * The one typed error every model provider fails with. `reason` says what kind of failure it was,
 * `status` carries the HTTP status when there was a response, and `providerMessage` is the
 * provider's own explanation, taken from the error body when the server sent one.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * What went wrong, independent of the provider's wording.
 *
 * - `RateLimited`: HTTP 429, after the SDK's own retries.
 * - `ServerError`: HTTP 5xx after the retries, or a response the provider marked as failed.
 * - `BadRequest`: any other 4xx, or a request the SDK refused to send.
 * - `Authentication`: HTTP 401 or 403, or no credentials at all.
 * - `Timeout`: no answer within the configured timeout (every attempt), or HTTP 408.
 * - `Connection`: the server could not be reached.
 * - `InvalidResponse`: a 2xx answer that does not have the protocol's shape.
 *
 * @since 0.1.0
 * @category models
 */
export const ProviderErrorReason = Schema.Literal(
  "RateLimited",
  "ServerError",
  "BadRequest",
  "Authentication",
  "Timeout",
  "Connection",
  "InvalidResponse"
)

/**
 * @since 0.1.0
 * @category models
 */
export type ProviderErrorReason = typeof ProviderErrorReason.Type

/**
 * A failed model call.
 *
 * @since 0.1.0
 * @category errors
 */
export class ProviderError extends Schema.TaggedError<ProviderError>()("ProviderError", {
  reason: ProviderErrorReason,
  /** The `name` of the provider that failed. */
  provider: Schema.String,
  /** The HTTP status of the final attempt, or `null` when no response arrived. */
  status: Schema.NullOr(Schema.Number),
  /** The provider's own message, from the error body when there is one. */
  providerMessage: Schema.String
}) {
  override get message(): string {
    const status = this.status === null ? "" : ` (HTTP ${this.status})`
    return `${this.provider}: ${this.reason}${status}: ${this.providerMessage}`
  }
}

/**
 * The reason that an HTTP error status stands for.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reasonForStatus = (status: number): ProviderErrorReason => {
  if (status === 429) return "RateLimited"
  if (status === 401 || status === 403) return "Authentication"
  if (status === 408) return "Timeout"
  if (status >= 500) return "ServerError"
  if (status >= 200 && status < 300) return "InvalidResponse"
  return "BadRequest"
}
