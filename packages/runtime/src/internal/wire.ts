/**
 * The wire form of one operation's fields, from its table (the camelCase to snake_case renames are
 * declared once, in the table, with `Schema.fromKey`), with a value that is already JSON spliced
 * in as it is (a tool's arguments, bounded by JT-LIM-02 when they were encoded). Used where a
 * message carries a tool value: `invoke` (the hot path) and `nested`.
 *
 * On that path the fields are renamed, not encoded by the schema: the renames are read once from
 * the table's schema, and the sender's own values are already typed (running the schema's encoder
 * cost about 14 µs per invocation, eight times the rest of writing the message). What arrives is
 * decoded by the schema, once, at the receiver.
 */
import * as SchemaAST from "effect/SchemaAST"
import * as Schema from "effect/Schema"
import * as Envelope from "../Envelope.js"
import type * as Protocol from "../Protocol.js"

type Renames = ReadonlyMap<PropertyKey, PropertyKey>

const renames = new WeakMap<Protocol.Table, Map<string, Renames>>()

/** The wire key of each field of `kind` that is renamed, read from its schema. */
export const renamesOf = (table: Protocol.Table, kind: string): Renames => {
  let byKind = renames.get(table)
  if (byKind === undefined) renames.set(table, byKind = new Map())
  let found = byKind.get(kind)
  if (found === undefined) {
    const ast = Schema.Struct(table[kind]!.payload).ast
    found = new Map(
      SchemaAST.isTransformation(ast) && SchemaAST.isTypeLiteralTransformation(ast.transformation)
        ? ast.transformation.propertySignatureTransformations.map((t) => [t.to, t.from] as const)
        : []
    )
    byKind.set(kind, found)
  }
  return found
}

/**
 * The message text of `kind` of `table`: its `payload` (without `field`) with the table's wire
 * keys, then `field` holding `json` (absent when `undefined`).
 */
export const message = <T extends Protocol.Table, K extends keyof T & string>(
  table: T,
  kind: K,
  payload: Omit<Protocol.Payload<T[K]>, "args">,
  field: string,
  json: string | undefined
): string => {
  const keys = renamesOf(table, kind)
  const fields: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(payload)) {
    if (key !== field) fields[(keys.get(key) ?? key) as string] = value
  }
  return Envelope.withValue(kind, fields, field, json)
}
