/**
 * The messages between a session's `RemoteCodeRunner` and the workers, each an effect Schema
 * inside the versioned envelope (`Envelope`):
 *
 * | subject | request `kind` | reply value (`kind: "ok"`) |
 * |---|---|---|
 * | `worker.<pool>.<language>.invoke` | `activate` {session_id, version_id, tool_name, language, entrypoint, entry_file, capability} | the tool's metadata |
 * | `worker.<pool>.<language>.invoke` | `invoke` {… as `activate`, args, call_id, parent_call_id, depth, within_change, timeout_ms} | the tool's result |
 * | `session.<sid>.package` | `package` {version_id, chunk, capability} | `{chunks, data}`: chunk `chunk` of `chunks` (base64) |
 * | `session.<sid>.nested` | `nested` {parent_call_id, capability, name, args} | the nested call's result |
 * | `workers.cancel` (published) | `cancel` {session_id, call_id, capability} | none |
 * | `session.<sid>.heartbeat` (published) | `heartbeat` {worker_id, call_ids} | none |
 *
 * The operations are two tables (`Protocol.table`): `worker`, what a worker serves on
 * `worker.<pool>.<language>.invoke`, and `session`, what a session serves its workers on
 * `session.<sid>.<kind>`. Fields are camelCase in code and snake_case on the wire: each rename is
 * declared once, here, with `Schema.fromKey`; ids decode to their brands (`Ids`) once, at the hop.
 *
 * What crosses back from a worker is accepted only with a capability: each `activate` and `invoke`
 * carries a secret the session made for it, which reaches only the worker that takes the message;
 * the session serves a `package` chunk only to the capability of an activation or invocation of
 * that version, a `nested` call only to the capability of the running call it names (so it runs
 * with that call's depth and budget), and a worker stops a call on `cancel` only with its capability.
 *
 * A package is never sent per call: a worker fetches it once per (session, version) and caches
 * the activation. Its bytes are the UTF-8 JSON of `{"files":{path: text}}`, split into chunks that
 * each fit the transport's `max_payload`. Deadlines cross as `timeout_ms`, the milliseconds left
 * when the invocation was sent, so clocks of different machines need not agree.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Envelope from "./Envelope.js"
import * as Ids from "./Ids.js"
import * as Protocol from "./Protocol.js"

const V = Schema.Literal(Envelope.version)

/** The languages a worker runs. @since 0.1.0 @category schemas */
export const Language = Schema.Literal("javascript", "typescript", "python", "bash", "csharp")

/** A field named `key` on the wire. */
const wire = <S extends Schema.Schema.All>(schema: S, key: string) => Schema.propertySignature(schema).pipe(Schema.fromKey(key))

/** What a capability looks like: 22 characters of base64url. @since 0.1.0 @category constants */
export const capabilityPattern = /^[A-Za-z0-9_-]{22}$/

/**
 * A capability: 128 random bits, base64url (22 characters). @since 0.1.0 @category schemas
 */
export const Capability = Schema.String.pipe(Schema.pattern(capabilityPattern), Schema.brand("@jitbox/runtime/Capability"))

/** @since 0.1.0 @category models */
export type Capability = typeof Capability.Type

/** What names a package version and the tool to load from it. @since 0.1.0 @category schemas */
export const PackageFields = {
  sessionId: wire(Ids.SessionId, "session_id"),
  versionId: wire(Schema.String, "version_id"),
  toolName: wire(Schema.String, "tool_name"),
  language: Language,
  entrypoint: Schema.String,
  entryFile: wire(Schema.String, "entry_file"),
  /** The coordinator lease of the session; a worker that requires admission checks it with the coordinator. */
  leaseId: Schema.optional(Ids.LeaseId).pipe(Schema.fromKey("lease_id")),
  /**
   * A secret the session made for this one message, delivered only to the worker that takes it
   * (a queue group): the session serves a package fetch, a nested call or a cancel only with the
   * capability of the activation or invocation it is for.
   */
  capability: Capability
}

/** An activation's fields. @since 0.1.0 @category models */
export type Activation = Schema.Struct.Type<typeof PackageFields>

/** An invocation's fields: the package's, and the call's. @since 0.1.0 @category schemas */
export const InvokeFields = {
  ...PackageFields,
  args: Schema.optional(Schema.Unknown),
  callId: wire(Schema.String, "call_id"),
  parentCallId: wire(Schema.NullOr(Schema.String), "parent_call_id"),
  depth: Schema.Number,
  withinChange: wire(Schema.Boolean, "within_change"),
  /** Milliseconds left until the call's deadline when it was sent; `null` for none. */
  timeoutMs: wire(Schema.NullOr(Schema.Number), "timeout_ms")
}

/** An invocation's fields. @since 0.1.0 @category models */
export type Invocation = Schema.Struct.Type<typeof InvokeFields>

/** The metadata a worker answers to `activate`. @since 0.1.0 @category schemas */
export const Metadata = Schema.Struct({
  description: Schema.optional(Schema.String),
  guidelines: Schema.optional(Schema.String),
  parameters: Schema.optional(Schema.Unknown),
  executionMode: Schema.optional(Schema.Literal("parallel", "serial"))
})

/** The value of a package reply: chunk `chunk` of `chunks`, base64. @since 0.1.0 @category schemas */
export const PackageChunk = Schema.Struct({ chunks: Schema.Number, data: Schema.String })

/** The files of a package, once its chunks are joined. @since 0.1.0 @category schemas */
export const PackageFiles = Schema.Struct({ files: Schema.Record({ key: Schema.String, value: Schema.String }) })

/**
 * What a worker serves on `worker.<pool>.<language>.invoke` (and a pinned one on
 * `node.<id>.<language>.invoke`): `activate` loads a package version (so load errors surface) and
 * answers its metadata; `invoke` runs one invocation and answers the tool's value.
 *
 * @since 0.1.0
 * @category protocol
 */
export const worker = Protocol.table({
  activate: { payload: PackageFields, success: Metadata, method: "activate", args: (activation: Activation) => activation },
  invoke: { payload: InvokeFields, success: Schema.Unknown, value: true, method: "invoke", args: (invocation: Invocation) => invocation }
})

/** @since 0.1.0 @category models */
export type Worker = typeof worker

/**
 * What a session serves the workers running its code: `package` (on `session.<sid>.package`) one
 * chunk of a package version; `nested` (on `session.<sid>.nested`) a `harness.callTool` of the
 * running call `parentCallId`, answering the nested call's value.
 *
 * @since 0.1.0
 * @category protocol
 */
export const session = Protocol.table({
  package: {
    payload: { versionId: wire(Schema.String, "version_id"), chunk: Schema.Number, capability: Capability },
    success: PackageChunk,
    method: "chunk",
    args: (versionId: string, chunk: number, capability: Capability) => ({ versionId, chunk, capability })
  },
  nested: {
    payload: {
      parentCallId: wire(Schema.String, "parent_call_id"),
      capability: Capability,
      name: Schema.String,
      args: Schema.optional(Schema.Unknown)
    },
    success: Schema.Unknown,
    value: true,
    method: "nested",
    args: (parentCallId: string, capability: Capability, name: string, args: unknown) => ({ parentCallId, capability, name, args })
  }
})

/** @since 0.1.0 @category models */
export type Session = typeof session

/** What `worker.<pool>.<language>.invoke` takes, by kind. @since 0.1.0 @category schemas */
export const workerMessages = Protocol.requests(worker)

/** Activates a package version on a worker (loading it, so load errors surface), answering its metadata. @since 0.1.0 @category schemas */
export const ActivateRequest = workerMessages.activate

/** @since 0.1.0 @category models */
export type ActivateRequest = typeof ActivateRequest.Type

/** Runs one invocation of a package version. @since 0.1.0 @category schemas */
export const InvokeRequest = workerMessages.invoke

/** @since 0.1.0 @category models */
export type InvokeRequest = typeof InvokeRequest.Type

/** Asks the session for one chunk of a package version. @since 0.1.0 @category schemas */
export const PackageRequest = Protocol.requests(session).package

/** A nested `harness.callTool` from code running on a worker. @since 0.1.0 @category schemas */
export const NestedRequest = Protocol.requests(session).nested

/** Cancels a running invocation by the call id it runs for. @since 0.1.0 @category schemas */
export const CancelMessage = Schema.Struct({
  v: V,
  kind: Schema.Literal("cancel"),
  sessionId: wire(Ids.SessionId, "session_id"),
  callId: wire(Schema.String, "call_id"),
  /** The invocation's capability: a worker cancels only the invocation it was given with. */
  capability: Capability
})

/**
 * Sent by a worker every `heartbeatMs` while it runs invocations of the session: the call ids it
 * runs. A session that hears nothing of a call for a few heartbeats fails it `WorkerLost`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Heartbeat = Schema.Struct({
  v: V,
  kind: Schema.Literal("heartbeat"),
  workerId: wire(Ids.WorkerId, "worker_id"),
  callIds: wire(Schema.Array(Schema.String), "call_ids")
})

/** @since 0.1.0 @category constants */
export const heartbeatDefaults = { intervalMs: 1_000, misses: 3 } as const

/** Room left in a message for the envelope around a chunk's data. */
const envelopeRoom = 256

/**
 * How many bytes of a package go in one chunk so that the reply (base64 data in its envelope)
 * fits `maxPayload`.
 *
 * @since 0.1.0
 * @category constants
 */
export const chunkBytes = (maxPayload: number): number => Math.max(3, Math.floor((maxPayload - envelopeRoom) / 4) * 3)
