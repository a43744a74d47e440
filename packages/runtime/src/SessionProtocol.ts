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
 * | `session.<sid>.manage` | `publish_tool` {name, as?} | the catalog entry published (`PublishedTool`) |
 * | `session.<sid>.manage` | `load_from_catalog` {name, version?, as?} | `{name, status, version_id}` |
 * | `session.<sid>.manage` | `forget` | none; the session is released after the reply |
 * | `sessions.activate` | `activate` {session_id} | none; the session serves its subjects |
 *
 * Every reply is `{"v":2,"kind":"ok","value":…}` or `{"v":2,"kind":"error","error":{…}}` with one
 * of the `WireError`s. Field names are snake_case on the wire, as the model-facing tools spell
 * theirs; a `create_tool` / `update_tool` `request` is exactly the management tool's arguments.
 *
 * @since 0.1.0
 */
import { Exposure, JitHarnessProfile, JitHarnessSnapshot, SessionDefinitions, SharedCatalog, ToolAck, ToolCatalog, ToolErrorReport } from "@jitbox/core"
import type { CreateToolRequest, UpdateToolRequest } from "@jitbox/core"
import * as Schema from "effect/Schema"
import * as Envelope from "./Envelope.js"
import * as Ids from "./Ids.js"
import * as Protocol from "./Protocol.js"
import * as WireError from "./WireError.js"

const V = Schema.Literal(Envelope.version)
const Page = {
  name: Schema.optional(Schema.String),
  offset: Schema.optional(Schema.Number),
  limit: Schema.optional(Schema.Number)
}

/** @since 0.1.0 @category models */
export interface PageOptions {
  readonly offset?: number | undefined
  /** 1–1,000 (D-16). */
  readonly limit?: number | undefined
}

/** How many call ids one `running` question names, at most. @since 0.1.0 @category constants */
export const runningLimit = 256

/**
 * `session.<sid>.call`: a tool call by name (`call_id` becomes the record's call id and lets a
 * `cancel` name the call), the cancel of a running call (unknown ids are ignored), and which calls
 * run (`running`, for a client's failover). Both ends
 * of `call` are hand-written over this entry: it is the hot path, its arguments are spliced in
 * as JSON already bounded by JT-LIM-02.
 *
 * @since 0.1.0
 * @category protocol
 */
export const call = Protocol.table({
  call: {
    payload: { name: Schema.String, args: Schema.optional(Schema.Unknown), call_id: Schema.optional(Schema.String) },
    success: Schema.Unknown,
    value: true,
    method: "callTool",
    args: (name: string, args?: unknown, callId?: string) => ({ name, args, call_id: callId })
  },
  cancel: {
    payload: { call_id: Schema.String },
    success: Schema.Void,
    method: "cancel",
    args: (callId: string) => ({ call_id: callId })
  },
  /**
   * Which of `call_ids` run here now. A client asks it of calls it has waited on for a while: a
   * host answering without one of them (it took the session over from a host that died) means
   * that call is lost. It waits in the same queue as the calls, so every call sent before it has
   * started (or answered) by the time it is answered.
   */
  running: {
    payload: { call_ids: Schema.Array(Schema.String).pipe(Schema.maxItems(runningLimit)) },
    success: Schema.Struct({ running: Schema.Array(Schema.String) }),
    method: "running",
    args: (callIds: ReadonlyArray<string>) => ({ call_ids: callIds })
  }
})

/**
 * `session.<sid>.manage`: the application API, one entry per operation. `LocalSession`,
 * `RemoteSession` and the session actor's server are derived from it.
 *
 * @since 0.1.0
 * @category protocol
 */
export const manage = Protocol.table({
  create_tool: {
    payload: { request: Protocol.objectOf<CreateToolRequest>("CreateToolRequest") },
    success: ToolAck,
    method: "createTool",
    args: (request: CreateToolRequest) => ({ request })
  },
  update_tool: {
    payload: { request: Protocol.objectOf<UpdateToolRequest>("UpdateToolRequest") },
    success: ToolAck,
    method: "updateTool",
    args: (request: UpdateToolRequest) => ({ request })
  },
  unload_tool: { payload: { name: Schema.String }, success: ToolAck, method: "unloadTool", args: (name: string) => ({ name }) },
  load_tool: { payload: { name: Schema.String }, success: ToolAck, method: "loadTool", args: (name: string) => ({ name }) },
  /** The complete catalog: base, code and text tools (management tools are never listed). */
  list_tools: { payload: {}, success: Schema.Array(ToolCatalog.CatalogEntry), method: "listTools", args: () => ({}) },
  profile: {
    payload: Page,
    success: JitHarnessProfile.JitHarnessProfile,
    method: "profile",
    args: (name?: string, page?: PageOptions) => ({ name, offset: page?.offset, limit: page?.limit })
  },
  tool_errors: {
    payload: Page,
    success: ToolErrorReport.ToolErrorReport,
    method: "toolErrors",
    args: (name?: string, page?: PageOptions) => ({ name, offset: page?.offset, limit: page?.limit })
  },
  snapshot: { payload: {}, success: JitHarnessSnapshot.JitHarnessSnapshot, method: "snapshot", args: () => ({}) },
  /** What to offer a model speaking `protocol`: the instruction block and the tools it can call now. */
  definitions: {
    payload: { protocol: Schema.Literal(...Object.values(Exposure.ModelProtocol)) },
    success: SessionDefinitions,
    method: "definitions",
    args: (protocol: Exposure.ModelProtocol) => ({ protocol })
  },
  /** Publishes the installed version of code tool `name` to the namespace's shared catalog (under `as`). */
  publish_tool: {
    payload: { name: Schema.String, as: Schema.optional(Schema.String) },
    success: SharedCatalog.PublishedTool,
    method: "publishTool",
    args: (name: string, options?: { readonly as?: string | undefined }) => ({ name, as: options?.as })
  },
  /** Installs an approved catalog version, pinned by its id (the newest approved one without `version`). */
  load_from_catalog: {
    payload: { name: Schema.String, version: Schema.optional(Schema.String), as: Schema.optional(Schema.String) },
    success: Schema.Struct({ ...ToolAck.fields, version_id: Schema.String }),
    method: "loadFromCatalog",
    args: (name: string, options?: { readonly version?: string | undefined; readonly as?: string | undefined }) => ({ name, version: options?.version, as: options?.as })
  },
  /** Releases the session's in-memory toolbox (LIFE-06); its stored snapshot stays, and its next use activates it again. */
  forget: { payload: {}, success: Schema.Void, method: "forget", args: () => ({}) }
})

/** The operations of `session.<sid>.manage`. @since 0.1.0 @category models */
export type Manage = typeof manage

/** The application API's methods, as Promises (derived from `manage`). @since 0.1.0 @category models */
export type ManageFacade = Protocol.Facade<Manage>

/** The messages of `session.<sid>.call`, by kind. @since 0.1.0 @category schemas */
export const callMessages = Protocol.requests(call)

/** What `session.<sid>.call` takes. @since 0.1.0 @category schemas */
export const CallMessage = Schema.Union(callMessages.call, callMessages.cancel, callMessages.running)

/** @since 0.1.0 @category models */
export type CallMessage = typeof CallMessage.Type

/** The messages of `session.<sid>.manage` (the application API), by kind. @since 0.1.0 @category schemas */
export const manageRequests = Protocol.requests(manage)

/** What `session.<sid>.manage` takes. @since 0.1.0 @category schemas */
export const ManageRequest = Schema.Union(...Object.values(manageRequests))

/** @since 0.1.0 @category models */
export type ManageRequest = typeof ManageRequest.Type

/** @since 0.1.0 @category models */
export type ManageKind = keyof Manage

/** The value each manage kind answers with. @since 0.1.0 @category schemas */
export const manageResult: { readonly [K in ManageKind]: Manage[K]["success"] } = Object.fromEntries(
  Object.entries(manage).map(([kind, op]) => [kind, op.success])
) as { readonly [K in ManageKind]: Manage[K]["success"] }

/**
 * Asks the session hosts to activate a session nobody serves. With `create: false` the host
 * activates only a session that has a stored snapshot, and answers `SnapshotError` `NotFound`
 * otherwise (absent: a session without one starts empty, or from the host's template).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ActivateRequest = Schema.Struct({ v: V, kind: Schema.Literal("activate"), session_id: Ids.SessionId, create: Schema.optional(Schema.Boolean) })

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
