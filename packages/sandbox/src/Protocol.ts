/**
 * The JSON-lines protocol between the host and a Node or Python child. Every line is one message
 * of `HostMessage` (host → child, on the child's stdin) or `ChildMessage` (child → host, on its
 * stdout). The host decodes every child line with `decodeChildMessage`; anything that does not
 * decode is a `ProtocolViolation`. Bash children speak the reduced `BashMessage` set, because a
 * bash script cannot parse JSON: the arguments go in a file and the script's stdout is read back
 * from a file (see `BashRunner`).
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/** JT-LIM-02: the input object JSON and the output JSON are each at most 262,144 UTF-8 bytes. @since 0.1.0 @category constants */
export const MaxPayloadBytes = 262_144

/** Room for the envelope around a payload on one line. @since 0.1.0 @category constants */
export const MaxEnvelopeBytes = 4_096

/** The longest line the host accepts from a child before it stops reading and kills it. @since 0.1.0 @category constants */
export const MaxLineBytes = MaxPayloadBytes + MaxEnvelopeBytes

/**
 * The deepest nesting of arrays and objects a value crossing the protocol may have, in either
 * direction (arguments, results, nested calls and their answers). Deeper values are refused with a
 * typed error before they are encoded or passed on: encoders and validators recurse, and a value a
 * few thousand levels deep (a few kilobytes of JSON) overflows their stacks.
 *
 * @since 0.1.0 @category constants
 */
export const MaxNestingDepth = 128

/**
 * Host messages a child may leave unread on its stdin before it is killed: a child that sends
 * nested calls and never reads the answers must not make the host buffer them without bound.
 *
 * @since 0.1.0 @category constants
 */
export const MaxUnreadBytes = 64 * MaxLineBytes

/** @since 0.1.0 @category schemas */
export const ErrorInfo = Schema.Struct({
  type: Schema.String,
  message: Schema.String,
  /** Set when the tool let a nested call's failure propagate unchanged: the host rethrows its own error. */
  nestedRequestId: Schema.optional(Schema.String)
})

/** @since 0.1.0 @category schemas */
export type ErrorInfo = typeof ErrorInfo.Type

/** @since 0.1.0 @category schemas */
export const ToolMetadata = Schema.Struct({
  description: Schema.optional(Schema.String),
  guidelines: Schema.optional(Schema.String),
  parameters: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  executionMode: Schema.optional(Schema.Literal("parallel", "serial"))
})

// host → child

/** Import the package and report its entry point's metadata. @since 0.1.0 @category host messages */
export const Load = Schema.TaggedStruct("Load", { entrypoint: Schema.String })

/** Run one invocation. `callId` and `depth` are the host's, for the child to expose to the tool. @since 0.1.0 @category host messages */
export const Invoke = Schema.TaggedStruct("Invoke", {
  invocationId: Schema.String,
  callId: Schema.String,
  depth: Schema.Number,
  args: Schema.Unknown,
  /** The tool's name, as the handler's context reports it. */
  toolName: Schema.optional(Schema.String),
  /** Whether the host call can be cancelled, so the handler's context carries a signal. */
  cancellable: Schema.optional(Schema.Boolean)
})

/** The answer to a `CallTool`: `value` when `ok`, else `error`. @since 0.1.0 @category host messages */
export const CallResult = Schema.TaggedStruct("CallResult", {
  requestId: Schema.String,
  ok: Schema.Boolean,
  value: Schema.optional(Schema.Unknown),
  error: Schema.optional(ErrorInfo)
})

/** @since 0.1.0 @category host messages */
export const HostMessage = Schema.Union(Load, Invoke, CallResult)

/** @since 0.1.0 @category host messages */
export type HostMessage = typeof HostMessage.Type

// child → host

/** Why a package did not load; mirrors the activation reasons of core's `PackageError`. @since 0.1.0 @category schemas */
export const LoadFailureReason = Schema.Literal(
  "CompileError",
  "ImportError",
  "ActivationError",
  "MissingEntrypoint",
  "EntrypointNotATool"
)

/** @since 0.1.0 @category child messages */
export const Loaded = Schema.TaggedStruct("Loaded", { metadata: ToolMetadata })

/** @since 0.1.0 @category child messages */
export const LoadFailed = Schema.TaggedStruct("LoadFailed", {
  reason: LoadFailureReason,
  path: Schema.optional(Schema.String),
  detail: Schema.String
})

/** `cpuMs` is the child's CPU time so far, so the host can retire a warm child before its CPU rlimit. @since 0.1.0 @category child messages */
export const Result = Schema.TaggedStruct("Result", {
  invocationId: Schema.String,
  value: Schema.Unknown,
  cpuMs: Schema.optional(Schema.Number)
})

/** The tool raised: `error.type` is the child-side type name (`ValueError`, `TypeError`, …). @since 0.1.0 @category child messages */
export const Failed = Schema.TaggedStruct("Failed", {
  invocationId: Schema.String,
  error: ErrorInfo,
  cpuMs: Schema.optional(Schema.Number)
})

/** A nested call from inside invocation `invocationId`. @since 0.1.0 @category child messages */
export const CallTool = Schema.TaggedStruct("CallTool", {
  requestId: Schema.String,
  invocationId: Schema.String,
  name: Schema.String,
  args: Schema.Unknown
})

/** A line the tool printed (stdout or stderr are redirected here so they cannot corrupt the protocol). @since 0.1.0 @category child messages */
export const Log = Schema.TaggedStruct("Log", {
  line: Schema.String,
  invocationId: Schema.optional(Schema.String)
})

/** @since 0.1.0 @category child messages */
export const ChildMessage = Schema.Union(Loaded, LoadFailed, Result, Failed, CallTool, Log)

/** @since 0.1.0 @category child messages */
export type ChildMessage = typeof ChildMessage.Type

/**
 * A bash invocation ended: the driver reaped its subshell (`exitCode` is the subshell's status) and
 * every process the invocation started is gone; its stdout and stderr are in files the host reads back.
 *
 * @since 0.1.0 @category child messages
 */
export const Reaped = Schema.TaggedStruct("Reaped", { exitCode: Schema.Number })

/** @since 0.1.0 @category child messages */
export const BashMessage = Schema.Union(Loaded, LoadFailed, Reaped)

/** @since 0.1.0 @category child messages */
export type BashMessage = typeof BashMessage.Type

const decodeChildEither = Schema.decodeUnknownEither(ChildMessage)
const decodeBashEither = Schema.decodeUnknownEither(BashMessage)

/**
 * Parses and decodes one line from a Node or Python child. Returns the message, or a string that
 * says why the line is a protocol violation.
 *
 * @since 0.1.0 @category decoding
 */
export const decodeChildLine = (line: string): ChildMessage | string => decodeWith(decodeChildEither, line, warmMessage)

/** @since 0.1.0 @category decoding */
export const decodeBashLine = (line: string): BashMessage | string => decodeWith(decodeBashEither, line, warmBashMessage)

/**
 * The messages of a warm call (`Result`, `Log`; Bash: `Reaped`) checked by hand, a fast
 * path around the schema decoder: only objects with exactly the schema's keys and types pass, so
 * what passes is what the schema would return; anything else (excess keys included) goes through
 * the schema.
 */
const countKeys = (o: object): number => {
  let keys = 0
  for (const _ in o) keys++
  return keys
}

const warmBashMessage = (json: unknown): BashMessage | undefined => {
  if (typeof json !== "object" || json === null) return undefined
  const o = json as Record<string, unknown>
  switch (o._tag) {
    case "Reaped":
      return typeof o.exitCode === "number" && countKeys(o) === 2 ? o as typeof Reaped.Type : undefined
    default:
      return undefined
  }
}

const warmMessage = (json: unknown): ChildMessage | undefined => {
  if (typeof json !== "object" || json === null) return undefined
  const o = json as Record<string, unknown>
  const keys = countKeys(o)
  switch (o._tag) {
    case "Result":
      return typeof o.invocationId === "string" && "value" in o &&
          (keys === 3 || (keys === 4 && typeof o.cpuMs === "number"))
        ? o as typeof Result.Type
        : undefined
    case "Log":
      return typeof o.line === "string" && (keys === 2 || (keys === 3 && typeof o.invocationId === "string"))
        ? o as typeof Log.Type
        : undefined
    default:
      return undefined
  }
}

const decodeWith = <A>(
  decode: (u: unknown) => Either.Either<A, ParseResult.ParseError>,
  line: string,
  fast?: (json: unknown) => A | undefined
): A | string => {
  let json: unknown
  try {
    json = JSON.parse(line)
  } catch {
    return `not JSON: ${preview(line)}`
  }
  const checked = fast?.(json)
  if (checked !== undefined) return checked
  const decoded = decode(json)
  return Either.isRight(decoded)
    ? decoded.right
    : `not a protocol message: ${preview(line)} (${ParseResult.TreeFormatter.formatErrorSync(decoded.left)})`
}

/**
 * Whether the JSON text nests arrays and objects deeper than `max`, without parsing it. A text
 * shorter than `2 * max` cannot (each level takes two characters at least), so short lines cost
 * nothing.
 *
 * @since 0.1.0 @category decoding
 */
export const nestsDeeperThan = (json: string, max: number): boolean => {
  const length = json.length
  if (length <= 2 * max) return false
  let depth = 0
  for (let i = 0; i < length; i++) {
    const c = json.charCodeAt(i)
    if (c === 34) {
      // skip a string: brackets inside it do not nest
      for (i++; i < length; i++) {
        const d = json.charCodeAt(i)
        if (d === 92) i++
        else if (d === 34) break
      }
    } else if (c === 91 || c === 123) {
      if (++depth > max) return true
    } else if (c === 93 || c === 125) {
      depth--
    }
  }
  return false
}

/** @since 0.1.0 @category encoding */
export const encodeLine = (message: HostMessage): string => JSON.stringify(message) + "\n"

/** @since 0.1.0 @category utils */
export const preview = (text: string, max = 200): string => text.length > max ? `${text.slice(0, max)}…` : text

/**
 * The UTF-8 length of a string, without allocating.
 *
 * @since 0.1.0
 * @category encoding
 */
export const utf8Length = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

/** Whether JSON text is over JT-LIM-02's bytes (cheap when it clearly is not). @since 0.1.0 @category encoding */
export const overPayloadBytes = (json: string): boolean => json.length > MaxPayloadBytes / 3 && utf8Length(json) > MaxPayloadBytes

/**
 * Why a value cannot cross as a tool's arguments or result: it is not JSON (`detail` says why),
 * it nests deeper than `MaxNestingDepth`, or its JSON is over `MaxPayloadBytes` (`bytes`).
 *
 * @since 0.1.0
 * @category models
 */
export type JsonProblem =
  | { readonly _tag: "NotJson"; readonly detail: string }
  | { readonly _tag: "TooDeep" }
  | { readonly _tag: "TooLarge"; readonly bytes: number }

/**
 * A value as compact JSON bounded by JT-LIM-02 and the nesting bound, or the problem that refuses
 * it; `undefined` (no JSON) is answered as `undefined`. Both the sandbox and the runtime bound
 * values with it, each naming the problem in its own error.
 *
 * @since 0.1.0
 * @category encoding
 */
export const boundedJson = (value: unknown): Either.Either<string | undefined, JsonProblem> => {
  let json: string | undefined
  try {
    json = JSON.stringify(value)
  } catch (error) {
    return Either.left(
      error instanceof RangeError ? { _tag: "TooDeep" } : { _tag: "NotJson", detail: error instanceof Error ? error.message : String(error) }
    )
  }
  if (json === undefined) return Either.right(undefined)
  if (nestsDeeperThan(json, MaxNestingDepth)) return Either.left({ _tag: "TooDeep" })
  if (overPayloadBytes(json)) return Either.left({ _tag: "TooLarge", bytes: utf8Length(json) })
  return Either.right(json)
}
