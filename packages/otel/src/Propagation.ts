/**
 * W3C trace context (`traceparent`, `tracestate`) in transport headers, with OpenTelemetry's own
 * propagator. What arrives is untrusted: a header longer than the W3C limits is ignored before the
 * propagator parses it, and one that does not parse gives no parent.
 *
 * @since 0.1.0
 */
import * as Api from "@opentelemetry/api"
import { W3CTraceContextPropagator } from "@opentelemetry/core"
import type { Transport } from "@jitbox/runtime"

const propagator = new W3CTraceContextPropagator()

/** The longest `traceparent` and `tracestate` read (W3C: 55 characters for version 00; 32 list members of at most 256+1 characters, 512 kept). @since 0.1.0 @category constants */
export const limits = { traceparent: 128, tracestate: 512 } as const

const getter: Api.TextMapGetter<Transport.Headers> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const value = carrier[key]
    if (typeof value !== "string") return undefined
    if (key === "traceparent" && value.length > limits.traceparent) return undefined
    if (key === "tracestate" && value.length > limits.tracestate) return undefined
    return value
  }
}

const setter: Api.TextMapSetter<Record<string, string>> = {
  set: (carrier, key, value) => {
    carrier[key] = value
  }
}

/** The headers that carry `span`'s context. @since 0.1.0 @category codecs */
export const inject = (span: Api.Span): Record<string, string> => {
  const carrier: Record<string, string> = {}
  propagator.inject(Api.trace.setSpan(Api.ROOT_CONTEXT, span), carrier, setter)
  return carrier
}

/**
 * The headers that carry the active OpenTelemetry context (or `context`), `undefined` when it has
 * no span: give it to `RemoteSession`'s `traceHeaders` so a session's calls join the caller's trace.
 *
 * @since 0.1.0
 * @category codecs
 */
export const current = (context: Api.Context = Api.context.active()): Record<string, string> | undefined => {
  if (Api.trace.getSpanContext(context) === undefined) return undefined
  const carrier: Record<string, string> = {}
  propagator.inject(context, carrier, setter)
  return carrier
}

/** The remote parent `headers` carry, or `undefined` when they carry none that parses. @since 0.1.0 @category codecs */
export const extract = (headers: Transport.Headers): Api.Context | undefined => {
  if (headers.traceparent === undefined) return undefined
  const context = propagator.extract(Api.ROOT_CONTEXT, headers, getter)
  return Api.trace.getSpanContext(context) === undefined ? undefined : context
}
