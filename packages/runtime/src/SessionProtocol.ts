/**
 * The messages of a session, each an effect Schema inside the versioned envelope (`Envelope`):
 *
 * | subject | request `kind` | reply value (`kind: "ok"`) |
 * |---|---|---|
 * | `session.<sid>.call` | `call` {name, args?, call_id?} | the tool's result (absent for `undefined`) |
 * | `session.<sid>.call` | `cancel` {call_id} (published, or requested) | none |
 * | `session.<sid>.manage` | `create_tool` {request} / `update_tool` {request} | `{name, status}` |
 * | `session.<sid>.manage` | `unload_tool` {name} / `load_tool` {name} | `{name, status}` |
 * | `session.<sid>.manage` | `list_tools` | the catalog: `[{name, origin, state, description}]` |
 * | `session.<sid>.manage` | `profile` {name?, offset?, limit?} | a `JitHarnessProfile` |
 * | `session.<sid>.manage` | `tool_errors` {name?, offset?, limit?} | a `ToolErrorReport` |
 * | `session.<sid>.manage` | `snapshot` | a `JitHarnessSnapshot` |
 * | `session.<sid>.manage` | `definitions` {protocol} | what to offer a model: `{instructions, tools}` |
 * | `session.<sid>.manage` | `forget` | none; the session is released after the reply |
 * | `sessions.activate` | `activate` {session_id} | none; the session serves its subjects |
 *
 * Every reply is `{"v":1,"kind":"ok","value":…}` or `{"v":1,"kind":"error","error":{…}}` with one
 * of the `WireError`s. Field names are snake_case on the wire, as the model-facing tools spell
 * theirs; a `create_tool` / `update_tool` `request` is exactly the management tool's arguments.
 *
 * @since 0.1.0
 */
import { Exposure, JitHarnessProfile, JitHarnessSnapshot, ToolErrorReport } from "@jitbox/core"
import * as Schema from "effect/Schema"
import * as Ids from "./Ids.js"
import * as WireError from "./WireError.js"

const V = Schema.Literal(1)
const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const Page = {
  name: Schema.optional(Schema.String),
  offset: Schema.optional(Schema.Number),
  limit: Schema.optional(Schema.Number)
}

/** Calls a tool by name. `call_id` becomes the record's call id and lets a `cancel` name the call. @since 0.1.0 @category schemas */
export const CallRequest = Schema.Struct({
  v: V,
  kind: Schema.Literal("call"),
  name: Schema.String,
  args: Schema.optional(Schema.Unknown),
  call_id: Schema.optional(Schema.String)
})

/** Cancels the running call `call_id` (its record says `cancelled`); unknown ids are ignored. @since 0.1.0 @category schemas */
export const CancelRequest = Schema.Struct({ v: V, kind: Schema.Literal("cancel"), call_id: Schema.String })

/** The messages of `session.<sid>.call`, by kind. @since 0.1.0 @category schemas */
export const callMessages = { call: CallRequest, cancel: CancelRequest } as const

/** What `session.<sid>.call` takes. @since 0.1.0 @category schemas */
export const CallMessage = Schema.Union(CallRequest, CancelRequest)

/** @since 0.1.0 @category models */
export type CallMessage = typeof CallMessage.Type

/** The messages of `session.<sid>.manage` (the application API), by kind. @since 0.1.0 @category schemas */
export const manageRequests = {
  create_tool: Schema.Struct({ v: V, kind: Schema.Literal("create_tool"), request: JsonObject }),
  update_tool: Schema.Struct({ v: V, kind: Schema.Literal("update_tool"), request: JsonObject }),
  unload_tool: Schema.Struct({ v: V, kind: Schema.Literal("unload_tool"), name: Schema.String }),
  load_tool: Schema.Struct({ v: V, kind: Schema.Literal("load_tool"), name: Schema.String }),
  list_tools: Schema.Struct({ v: V, kind: Schema.Literal("list_tools") }),
  profile: Schema.Struct({ v: V, kind: Schema.Literal("profile"), ...Page }),
  tool_errors: Schema.Struct({ v: V, kind: Schema.Literal("tool_errors"), ...Page }),
  snapshot: Schema.Struct({ v: V, kind: Schema.Literal("snapshot") }),
  definitions: Schema.Struct({ v: V, kind: Schema.Literal("definitions"), protocol: Schema.Literal(...Object.values(Exposure.ModelProtocol)) }),
  forget: Schema.Struct({ v: V, kind: Schema.Literal("forget") })
} as const

/** What `session.<sid>.manage` takes. @since 0.1.0 @category schemas */
export const ManageRequest = Schema.Union(...Object.values(manageRequests))

/** @since 0.1.0 @category models */
export type ManageRequest = typeof ManageRequest.Type

/** @since 0.1.0 @category models */
export type ManageKind = ManageRequest["kind"]

/** Asks the session hosts to activate a session nobody serves. @since 0.1.0 @category schemas */
export const ActivateRequest = Schema.Struct({ v: V, kind: Schema.Literal("activate"), session_id: Ids.SessionId })

/** @since 0.1.0 @category models */
export type ActivateRequest = typeof ActivateRequest.Type

/** A success; `value` is absent when there is none (or the tool returned `undefined`). @since 0.1.0 @category schemas */
export const OkReply = Schema.Struct({ v: V, kind: Schema.Literal("ok"), value: Schema.optional(Schema.Unknown) })

/** A failure, as one of the wire errors. @since 0.1.0 @category schemas */
export const ErrorReply: Schema.Struct<{
  v: typeof V
  kind: Schema.Literal<["error"]>
  error: typeof WireError.WireError
}> = Schema.Struct({ v: V, kind: Schema.Literal("error"), error: WireError.WireError })

/** Every reply. @since 0.1.0 @category schemas */
export const Reply: Schema.Union<[typeof OkReply, typeof ErrorReply]> = Schema.Union(OkReply, ErrorReply)

/** What the state-changing operations answer (MGMT-17). @since 0.1.0 @category schemas */
export const ToolAck = Schema.Struct({ name: Schema.String, status: Schema.Literal("loaded", "unloaded") })

/** One entry of `list_tools`. @since 0.1.0 @category schemas */
export const CatalogEntry = Schema.Struct({
  name: Schema.String,
  origin: Schema.Literal("base", "code", "text"),
  state: Schema.Literal("loaded", "unloaded", "unbound"),
  description: Schema.NullOr(Schema.String)
})

/** A tool to offer the model (core's `SessionTool`), snake_case on the wire. @since 0.1.0 @category schemas */
export const SessionTool = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  parameters: JsonObject,
  deferLoading: Schema.propertySignature(Schema.Boolean).pipe(Schema.fromKey("defer_loading")),
  executionMode: Schema.propertySignature(Schema.Literal("parallel", "serial")).pipe(Schema.fromKey("execution_mode")),
  management: Schema.Boolean,
  guidelines: Schema.NullOr(Schema.String)
})

/** What `definitions` answers: core's `SessionDefinitions` for the protocol asked. @since 0.1.0 @category schemas */
export const SessionDefinitions = Schema.Struct({ instructions: Schema.String, tools: Schema.Array(SessionTool) })

/** The value each manage kind answers with. @since 0.1.0 @category schemas */
export const manageResult = {
  create_tool: ToolAck,
  update_tool: ToolAck,
  unload_tool: ToolAck,
  load_tool: ToolAck,
  list_tools: Schema.Array(CatalogEntry),
  profile: JitHarnessProfile.JitHarnessProfile,
  tool_errors: ToolErrorReport.ToolErrorReport,
  snapshot: JitHarnessSnapshot.JitHarnessSnapshot,
  definitions: SessionDefinitions,
  forget: Schema.Void
} as const
