/**
 * The wire face of a session actor: the handlers of `session.<sid>.call` and
 * `session.<sid>.manage`. Each decodes its message (a message that does not decode is answered
 * with a `Decode` error and touches nothing), runs it on the session's own application API
 * (`SessionApi`: direct harness calls, changes stored before they resolve) and answers in the
 * envelope. Plain Promise code: it runs once per remote call.
 */
import type { CreateToolRequest, UpdateToolRequest } from "@jitbox/core"
import * as Schema from "effect/Schema"
import * as Envelope from "../Envelope.js"
import type { SessionApi } from "../SessionApi.js"
import * as SessionProtocol from "../SessionProtocol.js"
import type * as TraceContext from "../TraceContext.js"
import type * as Transport from "../Transport.js"
import { TransportError } from "../TransportError.js"
import * as WireError from "../WireError.js"

const failure = (what: string) => (thrown: unknown): string => Envelope.error(WireError.fromThrown(what, thrown))

/** Answers `value` as JSON bounded by JT-LIM-02 (a tool's result), or the error that refuses it. */
const result = (name: string, subject: string) => (value: unknown): string => {
  const json = Envelope.encodeValue(value, `the result of '${name}'`, subject)
  return json instanceof TransportError ? Envelope.error(json) : Envelope.ok(json)
}

/** Answers a manage result: harness-made data, bounded by the transport's `max_payload`. */
const managed = (value: unknown): string => Envelope.ok(value === undefined ? undefined : JSON.stringify(value))

const encodeDefinitions = Schema.encodeSync(SessionProtocol.SessionDefinitions)

/** Runs `f`, turning a synchronous throw into a rejection. */
const attempt = <A>(f: () => A | Promise<A>): Promise<A> => {
  try {
    return Promise.resolve(f())
  } catch (error) {
    return Promise.reject(error)
  }
}

/**
 * `session.<sid>.call`: `call` runs a tool (concurrently with other calls) in the trace context
 * its request carried, `cancel` aborts a running call named by its `call_id`.
 */
export const callHandler = (api: SessionApi, trace: TraceContext.TraceContextShape): Transport.Handler => {
  const cancellable = new Map<string, AbortController>()
  return (request) => {
    const subject = request.subject
    const message = Envelope.decodeKind(SessionProtocol.callMessages, request.data, subject)
    if (message instanceof TransportError) return Envelope.error(message)
    if (message.kind === "cancel") {
      cancellable.get(message.call_id)?.abort()
      return Envelope.ok()
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
    const callId = message.call_id
    if (callId === undefined) {
      return attempt(() => trace.incoming(api.sessionId, request.headers, () => api.callTool(name, message.args))).then(result(name, subject), failure(name))
    }
    const controller = new AbortController()
    cancellable.set(callId, controller)
    const done = () => {
      if (cancellable.get(callId) === controller) cancellable.delete(callId)
    }
    const pending = attempt(() => trace.incoming(api.sessionId, request.headers, () => api.callTool(name, message.args, { callId, signal: controller.signal })))
    pending.then(done, done)
    return pending.then(result(name, subject), failure(name))
  }
}

const run = (api: SessionApi, message: SessionProtocol.ManageRequest): Promise<string> => {
  switch (message.kind) {
    case "create_tool": {
      const name = typeof message.request.name === "string" ? message.request.name : "create_tool"
      return attempt(() => api.createTool(message.request as unknown as CreateToolRequest)).then(managed, failure(name))
    }
    case "update_tool": {
      const name = typeof message.request.name === "string" ? message.request.name : "update_tool"
      return attempt(() => api.updateTool(message.request as unknown as UpdateToolRequest)).then(managed, failure(name))
    }
    case "unload_tool":
      return attempt(() => api.unloadTool(message.name)).then(managed, failure(message.name))
    case "load_tool":
      return attempt(() => api.loadTool(message.name)).then(managed, failure(message.name))
    case "list_tools":
      return attempt(() => api.listTools()).then(managed, failure("list_tools"))
    case "profile":
      return attempt(() => api.profile(message.name, { offset: message.offset, limit: message.limit })).then(managed, failure("profile"))
    case "tool_errors":
      return attempt(() => api.toolErrors(message.name, { offset: message.offset, limit: message.limit })).then(managed, failure("tool_errors"))
    case "snapshot":
      return attempt(() => api.snapshot()).then(managed, failure("snapshot"))
    case "definitions":
      return attempt(() => api.definitions(message.protocol)).then((value) => managed(encodeDefinitions(value)), failure("definitions"))
    case "forget":
      return attempt(() => api.forget()).then(managed, failure("forget"))
  }
}

/** `session.<sid>.manage`: the application API. */
export const manageHandler = (api: SessionApi): Transport.Handler => (request) => {
  const message = Envelope.decodeKind(SessionProtocol.manageRequests, request.data, request.subject)
  if (message instanceof TransportError) return Envelope.error(message)
  return run(api, message)
}
