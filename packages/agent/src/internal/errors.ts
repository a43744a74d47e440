/**
 * Shared pieces of the SDK-error to `ProviderError` mapping.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { ProviderError, reasonForStatus } from "../ProviderError.js"

/** A message plus the messages of its causes: "Connection error. (fetch failed: connect ECONNREFUSED …)". */
export const describe = (error: unknown): string => {
  const messages: Array<string> = []
  let current: unknown = error
  for (let depth = 0; depth < 5 && current !== undefined && current !== null; depth++) {
    const message = current instanceof Error ? current.message : String(current)
    if (message !== "" && !messages.includes(message)) messages.push(message)
    current = current instanceof Error ? current.cause : undefined
  }
  const [first = "unknown error", ...rest] = messages
  return rest.length === 0 ? first : `${first} (${rest.join(": ")})`
}

/** `APIError.message` is "<status> <text>"; drop the status, `ProviderError` carries it separately. */
export const withoutStatus = (message: string, status: number): string =>
  message.startsWith(`${status} `) ? message.slice(String(status).length + 1) : message

export const isRecord = (value: unknown): value is { readonly [key: string]: unknown } =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export const fromStatus = (provider: string, status: number, providerMessage: string): ProviderError =>
  new ProviderError({ reason: reasonForStatus(status), provider, status, providerMessage })

/** Decodes a 2xx body with the protocol's schema; a mismatch is `InvalidResponse`. */
export const decodeBody = <A, I>(schema: Schema.Schema<A, I>, provider: string) => (body: unknown) =>
  Schema.decodeUnknown(schema)(body).pipe(
    Effect.mapError((error) =>
      new ProviderError({
        reason: "InvalidResponse",
        provider,
        status: null,
        providerMessage: `the response does not have the expected shape: ${error.message}`
      })
    )
  )

/** The error classes both official SDKs (generated from one template) export. */
export interface SdkErrorClasses<E extends Error & { readonly status?: number | undefined }> {
  readonly timeout: abstract new (...args: Array<any>) => Error
  readonly connection: abstract new (...args: Array<any>) => Error
  readonly abort: abstract new (...args: Array<any>) => Error
  readonly api: abstract new (...args: Array<any>) => E
}

/**
 * Maps what an SDK call rejected with to `ProviderError`: timeouts and connection failures by
 * class, HTTP errors by status with the provider's own message, an unparsable body as
 * `InvalidResponse`, and anything the SDK refused to send by `unsent`.
 */
export const sdkErrorMapper = <E extends Error & { readonly status?: number | undefined }>(
  sdk: SdkErrorClasses<E>,
  bodyMessage: (error: E) => string,
  unsent: (message: string) => ProviderError["reason"]
) =>
(provider: string) =>
(error: unknown): ProviderError => {
  if (error instanceof sdk.timeout) {
    return new ProviderError({ reason: "Timeout", provider, status: null, providerMessage: describe(error) })
  }
  if (error instanceof sdk.connection || error instanceof sdk.abort) {
    return new ProviderError({ reason: "Connection", provider, status: null, providerMessage: describe(error) })
  }
  if (error instanceof sdk.api && typeof error.status === "number") {
    return fromStatus(provider, error.status, bodyMessage(error))
  }
  if (error instanceof SyntaxError) {
    return new ProviderError({ reason: "InvalidResponse", provider, status: null, providerMessage: describe(error) })
  }
  const message = describe(error)
  return new ProviderError({ reason: unsent(message), provider, status: null, providerMessage: message })
}
