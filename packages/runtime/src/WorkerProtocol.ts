/**
 * The messages between a session's `RemoteCodeRunner` and the workers, each an effect Schema
 * inside the versioned envelope (`Envelope`):
 *
 * | subject | request `kind` | reply value (`kind: "ok"`) |
 * |---|---|---|
 * | `worker.<pool>.<language>.invoke` | `activate` {session_id, version_id, tool_name, language, entrypoint, entry_file} | the tool's metadata |
 * | `worker.<pool>.<language>.invoke` | `invoke` {… as `activate`, args, call_id, parent_call_id, depth, within_change, timeout_ms} | the tool's result |
 * | `session.<sid>.package` | `package` {version_id, chunk} | `{chunks, data}`: chunk `chunk` of `chunks` (base64) |
 * | `session.<sid>.nested` | `nested` {parent_call_id, name, args} | the nested call's result |
 * | `workers.cancel` (published) | `cancel` {session_id, call_id} | none |
 * | `session.<sid>.heartbeat` (published) | `heartbeat` {worker_id, call_ids} | none |
 *
 * A package is never sent per call: a worker fetches it once per (session, version) and caches
 * the activation. Its bytes are the UTF-8 JSON of `{"files":{path: text}}`, split into chunks that
 * each fit the transport's `max_payload`. Deadlines cross as `timeout_ms`, the milliseconds left
 * when the invocation was sent, so clocks of different machines need not agree.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

const V = Schema.Literal(1)
const Language = Schema.Literal("javascript", "typescript", "python", "bash")

const packageFields = {
  session_id: Schema.String,
  version_id: Schema.String,
  tool_name: Schema.String,
  language: Language,
  entrypoint: Schema.String,
  entry_file: Schema.String,
  /** The coordinator lease of the session; a worker that requires admission checks it with the coordinator. */
  lease_id: Schema.optional(Schema.String)
}

/** Activates a package version on a worker (loading it, so load errors surface), answering its metadata. @since 0.1.0 @category schemas */
export const ActivateRequest = Schema.Struct({ v: V, kind: Schema.Literal("activate"), ...packageFields })

/** @since 0.1.0 @category models */
export type ActivateRequest = typeof ActivateRequest.Type

/** Runs one invocation of a package version. @since 0.1.0 @category schemas */
export const InvokeRequest = Schema.Struct({
  v: V,
  kind: Schema.Literal("invoke"),
  ...packageFields,
  args: Schema.optional(Schema.Unknown),
  call_id: Schema.String,
  parent_call_id: Schema.NullOr(Schema.String),
  depth: Schema.Number,
  within_change: Schema.Boolean,
  /** Milliseconds left until the call's deadline when it was sent; `null` for none. */
  timeout_ms: Schema.NullOr(Schema.Number)
})

/** @since 0.1.0 @category models */
export type InvokeRequest = typeof InvokeRequest.Type

/** What `worker.<pool>.<language>.invoke` takes, by kind. @since 0.1.0 @category schemas */
export const workerMessages = { activate: ActivateRequest, invoke: InvokeRequest } as const

/** Asks the session for one chunk of a package version. @since 0.1.0 @category schemas */
export const PackageRequest = Schema.Struct({ v: V, kind: Schema.Literal("package"), version_id: Schema.String, chunk: Schema.Number })

/** The value of a package reply. @since 0.1.0 @category schemas */
export const PackageChunk = Schema.Struct({ chunks: Schema.Number, data: Schema.String })

/** The files of a package, once its chunks are joined. @since 0.1.0 @category schemas */
export const PackageFiles = Schema.Struct({ files: Schema.Record({ key: Schema.String, value: Schema.String }) })

/** A nested `harness.callTool` from code running on a worker. @since 0.1.0 @category schemas */
export const NestedRequest = Schema.Struct({
  v: V,
  kind: Schema.Literal("nested"),
  parent_call_id: Schema.String,
  name: Schema.String,
  args: Schema.optional(Schema.Unknown)
})

/** Cancels a running invocation by the call id it runs for. @since 0.1.0 @category schemas */
export const CancelMessage = Schema.Struct({ v: V, kind: Schema.Literal("cancel"), session_id: Schema.String, call_id: Schema.String })

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
  worker_id: Schema.String,
  call_ids: Schema.Array(Schema.String)
})

/** @since 0.1.0 @category constants */
export const heartbeatDefaults = { intervalMs: 1_000, misses: 3 } as const

/** The metadata a worker answers to `activate`. @since 0.1.0 @category schemas */
export const Metadata = Schema.Struct({
  description: Schema.optional(Schema.String),
  guidelines: Schema.optional(Schema.String),
  parameters: Schema.optional(Schema.Unknown),
  executionMode: Schema.optional(Schema.Literal("parallel", "serial"))
})

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
