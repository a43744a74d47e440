/**
 * The envelope every runtime message travels in: one UTF-8 JSON object whose `v` is the protocol
 * version and whose `kind` says what it is. `SessionProtocol` gives the schema of each kind.
 *
 *     {"v":2,"kind":"call","name":"add","call_id":"toolu_01","args":{"left":1,"right":2}}
 *     {"v":2,"kind":"ok","value":3}
 *     {"v":2,"kind":"error","error":{"name":"ad","_tag":"ToolNotFound","message":"no tool named 'ad' exists in this harness"}}
 *
 * Version rule: a field a reader may ignore can be added within a version; anything that changes
 * what an existing field, kind or error means takes the next version. A reader answers a version it
 * does not speak with a `ProtocolError` `Version` naming both. Version 2 told protocol failures
 * (`ProtocolError`) and lost invocations (`RemoteExecutionError`) apart from `TransportError`.
 *
 * Everything read from the wire is bounded before it is trusted: its size by the transport's
 * `max_payload`, its nesting depth here (before `JSON.parse`, whose recursion a deep value would
 * exhaust), and tool arguments and results by JT-LIM-02 (at most 256 KiB of JSON each). A value
 * over those bounds, or one that is not JSON, is refused with a `TransportError` before anything
 * is sent: `PayloadTooLarge` for the bounds, `InvalidArgument` for a value JSON cannot carry. A
 * message that does not decode is a `ProtocolError`. Each of these answers
 * an `Either` (a plain object, checked with `Either.isLeft`): the error on the left, the value on
 * the right.
 *
 * @since 0.1.0
 */
import { ParseIssues } from "@jitbox/core"
import { Protocol } from "@jitbox/sandbox"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { ProtocolError } from "./ProtocolError.js"
import { TransportError } from "./TransportError.js"
import * as WireError from "./WireError.js"

/** The protocol version this runtime speaks. @since 0.1.0 @category constants */
export const version = 2

/** @since 0.1.0 @category constants */
export const limits = {
  /** JT-LIM-02: a tool's arguments and its result are each at most this many bytes of JSON. */
  valueBytes: Protocol.MaxPayloadBytes,
  /** How deep arrays and objects may nest inside a value (the sandbox's bound too). */
  valueDepth: Protocol.MaxNestingDepth,
  /** Levels of the envelope around a value (`{ "request": { "parameters": … } }`). */
  envelopeDepth: 4
} as const

const decoder = new TextDecoder("utf-8", { fatal: true })

const decodeError = (subject: string, detail: string) => new ProtocolError({ reason: "Decode", subject, detail })

/**
 * A tool's arguments or result as JSON, bounded by JT-LIM-02 and the depth bound, on the right; on
 * the left the `TransportError` that refuses it, where `what` names it (`"the arguments of
 * 'add'"`). `undefined` is answered as `Either.right(undefined)` (no value).
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodeValue = (value: unknown, what: string, subject: string): Either.Either<string | undefined, TransportError> => {
  const bounded = Protocol.boundedJson(value)
  if (Either.isRight(bounded)) return Either.right(bounded.right)
  const problem = bounded.left
  switch (problem._tag) {
    case "NotJson":
      return Either.left(new TransportError({ reason: "InvalidArgument", subject, detail: `${what}: not JSON (${problem.detail})` }))
    case "TooDeep":
      return Either.left(new TransportError({ reason: "PayloadTooLarge", subject, detail: `${what}: nested deeper than ${limits.valueDepth} levels` }))
    case "TooLarge":
      return Either.left(
        new TransportError({
          reason: "PayloadTooLarge",
          subject,
          detail: `${what}: ${problem.bytes} bytes of JSON, over the ${limits.valueBytes} allowed (JT-LIM-02)`
        })
      )
  }
}

/**
 * Whether a value already decoded from a message of `messageBytes` bytes is over JT-LIM-02. Only
 * a message larger than the bound can hold such a value, so smaller ones are never measured.
 *
 * @since 0.1.0
 * @category decoding
 */
export const valueTooLarge = (value: unknown, messageBytes: number): boolean =>
  messageBytes > limits.valueBytes && value !== undefined && Protocol.overPayloadBytes(JSON.stringify(value) ?? "")

/**
 * A message as JSON text, from the fields of its envelope (`v` is added). Use `withValue` when a
 * field is JSON already encoded by `encodeValue`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encode = (kind: string, fields: Record<string, unknown> = {}): string => JSON.stringify({ v: version, kind, ...fields })

/**
 * A message whose `field` is JSON text already bounded by `encodeValue` (spliced in, so a large
 * value is serialised once); without one the field is left out.
 *
 * @since 0.1.0
 * @category encoding
 */
export const withValue = (kind: string, fields: Record<string, unknown>, field: string, json: string | undefined): string => {
  const head = encode(kind, fields)
  return json === undefined ? head : `${head.slice(0, -1)},${JSON.stringify(field)}:${json}}`
}

/** `{"v":2,"kind":"ok","value":…}`. @since 0.1.0 @category encoding */
export const ok = (json?: string): string => withValue("ok", {}, "value", json)

/** `{"v":2,"kind":"error","error":{…}}`. @since 0.1.0 @category encoding */
export const error = (wireError: WireError.WireError): string => encode("error", { error: WireError.encode(wireError) })

/**
 * Parses a message's bytes into a JSON object with `v` equal to this version, on the right. On the
 * left, a `ProtocolError`: `Decode` for invalid UTF-8, JSON nested deeper than any message may be, JSON that
 * does not parse and anything but an object, `Version` for another version.
 *
 * @since 0.1.0
 * @category decoding
 */
export const parse = (data: Uint8Array, subject: string): Either.Either<Record<string, unknown>, ProtocolError> => {
  let text: string
  try {
    text = decoder.decode(data)
  } catch {
    return Either.left(decodeError(subject, "the message is not UTF-8"))
  }
  if (Protocol.nestsDeeperThan(text, limits.valueDepth + limits.envelopeDepth)) {
    return Either.left(decodeError(subject, `the message nests deeper than ${limits.valueDepth + limits.envelopeDepth} levels`))
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (cause) {
    return Either.left(decodeError(subject, `the message is not JSON: ${cause instanceof Error ? cause.message : String(cause)}`))
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return Either.left(decodeError(subject, "the message is not a JSON object"))
  }
  const v = (parsed as { v?: unknown }).v
  if (v !== version) {
    return Either.left(
      new ProtocolError({
        reason: "Version",
        subject,
        detail: `the message is of protocol version ${(JSON.stringify(v) ?? "(none)").slice(0, 20)}; this runtime speaks version ${version}`
      })
    )
  }
  return Either.right(parsed as Record<string, unknown>)
}

/**
 * Parses and decodes a message with `schema`: the message on the right, or on the left a
 * `ProtocolError` (from `parse`, or `Decode` naming the first field at fault).
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = <A, I>(schema: Schema.Schema<A, I>, data: Uint8Array, subject: string): Either.Either<A, ProtocolError> => {
  const parsed = parse(data, subject)
  return Either.isLeft(parsed) ? Either.left(parsed.left) : decodeParsed(schema, parsed.right, subject)
}

/**
 * Parses a message and decodes it with the schema of its `kind` among `members`: the message on
 * the right, or on the left a `ProtocolError` (an unknown kind's lists the known ones).
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeKind = <const M extends Record<string, Schema.Schema<any, any>>>(
  members: M,
  data: Uint8Array,
  subject: string
): Either.Either<Schema.Schema.Type<M[keyof M]>, ProtocolError> => {
  const parsed = parse(data, subject)
  return Either.isLeft(parsed) ? Either.left(parsed.left) : decodeKindParsed(members, parsed.right, subject)
}

/**
 * Decodes a parsed message (`parse`) with the schema of its `kind` among `members`, as `decodeKind`.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeKindParsed = <const M extends Record<string, Schema.Schema<any, any>>>(
  members: M,
  parsed: Record<string, unknown>,
  subject: string
): Either.Either<Schema.Schema.Type<M[keyof M]>, ProtocolError> => {
  const kind = parsed.kind
  if (typeof kind !== "string" || !Object.hasOwn(members, kind)) {
    return Either.left(decodeError(
      subject,
      `kind: expected one of ${Object.keys(members).map((known) => JSON.stringify(known)).join(", ")}, got ${
        (JSON.stringify(kind) ?? "nothing").slice(0, 100)
      }`
    ))
  }
  return decodeParsed(members[kind]!, parsed, subject)
}

type Codec = (u: unknown) => Either.Either<unknown, ParseResult.ParseError>

const decoders = new WeakMap<Schema.Schema.Any, Codec>()
const encoders = new WeakMap<Schema.Schema.Any, Codec>()

const memo = (cache: WeakMap<Schema.Schema.Any, Codec>, schema: Schema.Schema.Any, make: () => Codec): Codec => {
  let found = cache.get(schema)
  if (found === undefined) {
    found = make()
    cache.set(schema, found)
  }
  return found
}

/**
 * `schema`'s decoder of unknown values, made once per schema.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decoderOf = <A, I>(schema: Schema.Schema<A, I>): (u: unknown) => Either.Either<A, ParseResult.ParseError> =>
  memo(decoders, schema, () => Schema.decodeUnknownEither(schema)) as (u: unknown) => Either.Either<A, ParseResult.ParseError>

/**
 * `schema`'s encoder of unknown values, made once per schema.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encoderOf = <A, I>(schema: Schema.Schema<A, I>): (u: unknown) => Either.Either<I, ParseResult.ParseError> =>
  memo(encoders, schema, () => Schema.encodeUnknownEither(schema)) as (u: unknown) => Either.Either<I, ParseResult.ParseError>

/**
 * Decodes a parsed message with `schema`: the message on the right, or on the left a
 * `ProtocolError` `Decode` naming the first field at fault.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeParsed = <A, I>(schema: Schema.Schema<A, I>, parsed: unknown, subject: string): Either.Either<A, ProtocolError> => {
  const decoded = decoderOf(schema)(parsed)
  return Either.isRight(decoded)
    ? decoded as Either.Either<A, never>
    : Either.left(decodeError(subject, ParseIssues.describe(decoded.left, { root: "the message" })))
}
