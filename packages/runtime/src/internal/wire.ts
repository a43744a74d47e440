/**
 * The wire form of one operation's fields, encoded with its table's schema (the camelCase to
 * snake_case renames are declared once, in the table), with a value that is already JSON spliced
 * in as it is (a tool's arguments, bounded by JT-LIM-02 when they were encoded). Used where a
 * message carries a tool value: `invoke` (the hot path: one encoder per kind, made once) and
 * `nested`.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Envelope from "../Envelope.js"
import type * as Protocol from "../Protocol.js"
import { TransportError } from "../TransportError.js"

type Encoder = (payload: unknown) => Either.Either<unknown, ParseResult.ParseError>

const encoders = new WeakMap<Protocol.Table, Map<string, Encoder>>()

const encoderOf = (table: Protocol.Table, kind: string): Encoder => {
  let byKind = encoders.get(table)
  if (byKind === undefined) encoders.set(table, byKind = new Map())
  let found = byKind.get(kind)
  if (found === undefined) byKind.set(kind, found = Schema.encodeUnknownEither(Schema.Struct(table[kind]!.payload) as unknown as Schema.Schema<unknown, unknown, never>))
  return found
}

/**
 * The message text of `kind` of `table`: its `payload` (without `field`) encoded by the table's
 * schema, then `field` holding `json` (absent when `undefined`).
 */
export const message = <T extends Protocol.Table, K extends keyof T & string>(
  table: T,
  kind: K,
  payload: Omit<Protocol.Payload<T[K]>, "args">,
  field: string,
  json: string | undefined,
  subject: string
): Either.Either<string, TransportError> => {
  const encoded = encoderOf(table, kind)(payload)
  if (Either.isLeft(encoded)) {
    const issue = ParseResult.ArrayFormatter.formatErrorSync(encoded.left)[0]
    return Either.left(new TransportError({ reason: "InvalidArgument", subject, detail: `${kind}: ${issue?.path.join(".") ?? ""} ${issue?.message ?? ""}`.slice(0, 500) }))
  }
  return Either.right(Envelope.withValue(kind, encoded.right as Record<string, unknown>, field, json))
}
