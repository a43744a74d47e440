/**
 * Writing the `ok` / `error` replies of the worker protocol, shared by `Worker` and
 * `RemoteCodeRunner` (a reply is read by `Protocol.valueOf`).
 */
import * as Either from "effect/Either"
import * as Envelope from "../Envelope.js"
import * as WireError from "../WireError.js"

/** Answers `value` bounded by JT-LIM-02, or the error that refuses it. */
export const okValue = (value: unknown, what: string, subject: string): string => {
  const json = Envelope.encodeValue(value, what, subject)
  return Either.isLeft(json) ? Envelope.error(json.left) : Envelope.ok(json.right)
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
