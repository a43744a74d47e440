/**
 * The wire face of a session actor. `session.<sid>.manage` is derived from the protocol table
 * (`Protocol.serve` over the actor's handlers); `session.<sid>.call` is written by hand because it
 * is the hot path: a call runs (concurrently with other calls) in the trace context its request
 * carried, its arguments and result are bounded by JT-LIM-02, and `cancel` aborts a running call
 * named by its `call_id`; `running` answers which of the ids it names run here. A `call_id` is used once: the same id sent again within the window of
 * the last `callIdWindow` ids (a captured call replayed) is refused `ToolRejected` `DuplicateCall`
 * and runs nothing. Plain Promise code: it runs once per remote call.
 */
import { HarnessError } from "@jitbox/core"
import * as Either from "effect/Either"
import * as Envelope from "../Envelope.js"
import * as Protocol from "../Protocol.js"
import type { SessionApi } from "../SessionApi.js"
import * as SessionProtocol from "../SessionProtocol.js"
import type * as TraceContext from "../TraceContext.js"
import type * as Transport from "../Transport.js"
import { TransportError } from "../TransportError.js"
import * as WireError from "../WireError.js"
import { attempt } from "./replies.js"
import { SeenCallIds } from "./seenCallIds.js"

/** How many of a session's latest call ids are remembered. */
export const callIdWindow = 4_096

/** `session.<sid>.call`. */
export const callHandler = (api: SessionApi, trace: TraceContext.TraceContextShape): Transport.Handler => {
  const cancellable = new Map<string, AbortController>()
  const seen = new SeenCallIds(callIdWindow)
  const op = SessionProtocol.call.call
  return (request) => {
    const subject = request.subject
    const decoded = Envelope.decodeKind(SessionProtocol.callMessages, request.data, subject)
    if (Either.isLeft(decoded)) return Envelope.error(decoded.left)
    const message = decoded.right
    if (message.kind === "cancel") {
      cancellable.get(message.call_id)?.abort()
      return Envelope.ok()
    }
    if (message.kind === "running") {
      return Protocol.reply(SessionProtocol.call.running, { running: message.call_ids.filter((id) => cancellable.has(id)) }, "the calls running", subject)
    }
    const name = message.name
    if (Envelope.valueTooLarge(message.args, request.data.length)) {
      return Envelope.error(
        new TransportError({
          reason: "PayloadTooLarge",
          subject,
          detail: `the arguments of '${name}': over the ${Envelope.limits.valueBytes} bytes of JSON allowed (JT-LIM-02)`
        })
      )
    }
    const answer = (value: unknown) => Protocol.reply(op, value, `the result of '${name}'`, subject)
    const failure = (thrown: unknown) => Envelope.error(WireError.fromThrown(name, thrown))
    const callId = message.call_id
    if (callId === undefined) {
      return attempt(() => trace.incoming(api.sessionId, request.headers, () => api.callTool(name, message.args))).then(answer, failure)
    }
    if (!seen.admit(callId)) {
      return Envelope.error(
        new HarnessError.ToolRejected({
          name,
          reason: "DuplicateCall",
          detail: `call id '${callId.slice(0, 128)}' was already sent to this session: a call id is used once, so a call sent again runs once`
        })
      )
    }
    const controller = new AbortController()
    cancellable.set(callId, controller)
    const done = () => {
      if (cancellable.get(callId) === controller) cancellable.delete(callId)
    }
    const pending = attempt(() => trace.incoming(api.sessionId, request.headers, () => api.callTool(name, message.args, { callId, signal: controller.signal })))
    pending.then(done, done)
    return pending.then(answer, failure)
  }
}

/** `session.<sid>.manage`: the application API, from the table. */
export const manageHandler = (handlers: Protocol.Handlers<SessionProtocol.Manage>): Transport.Handler =>
  Protocol.serve(SessionProtocol.manage, handlers)
