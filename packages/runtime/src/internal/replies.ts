/**
 * Reading and writing the `ok` / `error` replies of the worker protocol, shared by `Worker` and
 * `RemoteCodeRunner`.
 */
import * as Envelope from "../Envelope.js"
import * as SessionProtocol from "../SessionProtocol.js"
import type * as Transport from "../Transport.js"
import { TransportError } from "../TransportError.js"
import * as WireError from "../WireError.js"

/** A reply's value, or the error it carries (a reply that does not decode is a `Decode` error). */
export const valueOf = (message: Transport.Message, subject: string): { readonly value: unknown } | WireError.WireError => {
  const parsed = Envelope.parse(message.data, subject)
  if (parsed instanceof TransportError) return parsed
  if (parsed.kind === "error") return WireError.decode(parsed.error, subject)
  const ok = Envelope.decodeParsed(SessionProtocol.OkReply, parsed, subject)
  return ok instanceof TransportError ? ok : { value: ok.value }
}

/** Answers `value` bounded by JT-LIM-02, or the error that refuses it. */
export const okValue = (value: unknown, what: string, subject: string): string => {
  const json = Envelope.encodeValue(value, what, subject)
  return json instanceof TransportError ? Envelope.error(json) : Envelope.ok(json)
}

/** Answers a failure as its wire error. */
export const failed = (toolName: string) => (thrown: unknown): string => Envelope.error(WireError.fromThrown(toolName, thrown))

/** Runs `f`, turning a synchronous throw into a rejection. */
export const attempt = <A>(f: () => A | PromiseLike<A>): Promise<A> => {
  try {
    return Promise.resolve(f())
  } catch (error) {
    return Promise.reject(error)
  }
}
