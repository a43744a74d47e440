/**
 * What the two OpenAI providers share: building the SDK client and mapping its errors.
 *
 * @internal
 */
import * as Either from "effect/Either"
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai"
import { ProviderError } from "../ProviderError.js"
import { describe, isRecord, sdkErrorMapper, withoutStatus } from "./errors.js"

export interface ClientOptions {
  readonly apiKey?: string | undefined
  readonly baseURL?: string | undefined
  readonly timeoutMs?: number | undefined
  readonly maxRetries?: number | undefined
}

/** The SDK client, or the error its constructor reports: `Authentication` when there is no key at all. */
export const makeClient = (provider: string, options: ClientOptions): Either.Either<OpenAI, ProviderError> =>
  Either.try({
    try: () =>
      new OpenAI({
        apiKey: options.apiKey,
        baseURL: options.baseURL,
        maxRetries: options.maxRetries ?? 2,
        ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs })
      }),
    catch: (error) => {
      const providerMessage = describe(error)
      const reason = /credentials|api.?key/i.test(providerMessage) ? "Authentication" : "BadRequest"
      return new ProviderError({ reason, provider, status: null, providerMessage })
    }
  })

/** The provider's own words: `error.message` of the `{"error": {...}}` body, or the body text. */
const bodyMessage = (error: APIError): string => {
  const body: unknown = error.error
  if (isRecord(body) && typeof body["message"] === "string") return body["message"]
  if (typeof body === "string") return body
  return error.status === undefined ? error.message : withoutStatus(error.message, error.status)
}

/** The SDK refused to send the request (an invalid option, a missing credential): `BadRequest`. */
export const toProviderError = sdkErrorMapper(
  { timeout: APIConnectionTimeoutError, connection: APIConnectionError, abort: APIUserAbortError, api: APIError },
  bodyMessage,
  () => "BadRequest"
)
