/**
 * The errors that cross a subject, as one schema union: every error the harness raises
 * (`HarnessError`: `ToolNotFound`, `ValidationError`, `ToolRejected`, …), `ToolFailure` (a tool's
 * own thrown value, by type name and message), the core's `SnapshotError`, the sandbox's
 * `SandboxError`, and the runtime's `TransportError` (the message layer), `ProtocolError` (a
 * message that does not decode), `RemoteExecutionError` (a worker went silent mid-invocation) and
 * `OwnershipError` (a session another host holds). Each is a `Schema.TaggedError` told apart by
 * its `_tag`, so a caller in another process decodes the same class, with the same fields, that an
 * in-process caller of the Effect API gets.
 *
 * On the wire an error is a JSON object: its `_tag`, its fields, and `message` (the text the class
 * would print, for clients that do not know every tag; decoding ignores it). A `ToolFailure`
 * carries no `cause`: the thrown value itself stays where it was thrown.
 *
 * @since 0.1.0
 */
import { HarnessError, JitHarnessSnapshot, SharedCatalog, ThrownValue } from "@jitbox/core"
import { SandboxError } from "@jitbox/sandbox"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { ProtocolError } from "./ProtocolError.js"
import { RemoteExecutionError } from "./RemoteExecutionError.js"
import { OwnershipError } from "./SessionOwnership.js"
import { TransportError } from "./TransportError.js"

/**
 * Every error a session can answer with.
 *
 * @since 0.1.0
 * @category schemas
 */
export const WireError = Schema.Union(
  HarnessError.ToolNotFound,
  HarnessError.ToolRejected,
  HarnessError.ValidationError,
  HarnessError.ToolDefinitionError,
  HarnessError.PackageError,
  HarnessError.NameConflict,
  HarnessError.InvalidToolRequest,
  HarnessError.ConfigError,
  HarnessError.ToolCancelled,
  HarnessError.PolicyViolation,
  HarnessError.ToolTimeout,
  HarnessError.HarnessReleased,
  HarnessError.ToolFailure,
  JitHarnessSnapshot.SnapshotError,
  SharedCatalog.CatalogError,
  SandboxError.SandboxError,
  TransportError,
  ProtocolError,
  RemoteExecutionError,
  OwnershipError
)

/** @since 0.1.0 @category models */
export type WireError = typeof WireError.Type

const tags: ReadonlySet<string> = new Set(WireError.members.map((member) => member._tag))

/**
 * Whether `u` carries the tag of a wire error (it may still lack its fields).
 *
 * @since 0.1.0
 * @category refinements
 */
export const isWireError = (u: unknown): u is WireError =>
  typeof u === "object" && u !== null && typeof (u as { _tag?: unknown })._tag === "string" &&
  tags.has((u as { _tag: string })._tag)

const decodeEither = Schema.decodeUnknownEither(WireError)
const encodeEither = Schema.encodeUnknownEither(WireError)

const toolFailure = (toolName: string, thrown: unknown): HarnessError.ToolFailure =>
  new HarnessError.ToolFailure({ toolName, errorType: ThrownValue.errorType(thrown), detail: ThrownValue.message(thrown), cause: undefined })

/**
 * What a failure becomes on the wire: a wire error stays itself (when its fields decode), and
 * anything else, a tool's own thrown value, becomes `ToolFailure` with its type name and message,
 * as the Effect API reports it in process.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromThrown = (toolName: string, thrown: unknown): WireError => {
  if (isWireError(thrown)) {
    if (thrown._tag === "ToolFailure") {
      return new HarnessError.ToolFailure({ toolName: thrown.toolName, errorType: thrown.errorType, detail: thrown.detail, cause: undefined })
    }
    // A value that only claims a tag (a tool may throw `{ _tag: "ToolNotFound" }`) must still decode.
    const checked = decodeEither({ ...thrown, _tag: thrown._tag })
    if (Either.isRight(checked)) return checked.right
  }
  return toolFailure(toolName, thrown)
}

/**
 * The JSON object an error is sent as: `_tag`, fields, and `message`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encode = (error: WireError): Record<string, unknown> => {
  const fields = error._tag === "ToolFailure"
    ? { _tag: error._tag, toolName: error.toolName, errorType: error.errorType, detail: error.detail }
    : error
  const encoded = encodeEither(fields)
  const plain: Record<string, unknown> = Either.isRight(encoded)
    ? { ...(encoded.right as object) }
    : { _tag: "ProtocolError", reason: "Decode", subject: "", detail: `an error that does not encode: ${error._tag}` }
  let message: string
  try {
    message = error.message
  } catch {
    message = error._tag
  }
  plain.message = message
  return plain
}

/**
 * Decodes an error read from the wire; one this version does not know (or whose fields do not
 * decode) is a `ProtocolError` with reason `Decode` that quotes its tag and message.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = (u: unknown, subject: string): WireError => {
  const decoded = decodeEither(u)
  if (Either.isRight(decoded)) {
    const error = decoded.right
    return error._tag === "ToolFailure" && error.cause !== undefined
      ? new HarnessError.ToolFailure({ toolName: error.toolName, errorType: error.errorType, detail: error.detail, cause: undefined })
      : error
  }
  const tag = typeof u === "object" && u !== null ? (u as { _tag?: unknown })._tag : undefined
  const message = typeof u === "object" && u !== null ? (u as { message?: unknown }).message : undefined
  return new ProtocolError({
    reason: "Decode",
    subject,
    detail: `the reply holds an error this client cannot decode (${String(tag).slice(0, 100)}: ${
      typeof message === "string" ? message.slice(0, 500) : ParseResult.TreeFormatter.formatErrorSync(decoded.left).slice(0, 500)
    })`
  })
}
