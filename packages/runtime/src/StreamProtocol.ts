/**
 * The batches `StreamPublisher` sends: what one session emitted in one turn of the event loop
 * leaves as one message on `events.<sid>` (its events, in order) and one on `profile.<sid>` (its
 * profile records, in order), in the runtime's envelope:
 *
 *     {"v":2,"kind":"events","events":[{"type":"CUSTOM","name":"jit_tool_started","payload":{…}},…]}
 *     {"v":2,"kind":"records","records":[{"call_id":"…","tool_name":"add",…,"session_id":"s1","parent_call_id":null,"depth":0},…]}
 *
 * A batch is at most `maxBatchBytes` of UTF-8: more of one turn is split into several batches, in
 * order. One item never exceeds it (events and records are small; the publisher counts an item
 * that would as lost). A reader decodes each item on its own and skips one it does not know (an
 * event a newer publisher added), keeping the rest of the batch.
 *
 * @since 0.1.0
 */
import { JitHarnessProfile, JitToolEvent } from "@jitbox/core"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Envelope from "./Envelope.js"

const V = Schema.Literal(Envelope.version)

/** The most UTF-8 bytes one batch message holds. @since 0.1.0 @category constants */
export const maxBatchBytes = 65_536

/** A finished attempt with the ids that place it (`ProfileSink.SessionProfileRecord`). @since 0.1.0 @category schemas */
export const SessionProfileRecord = Schema.Struct({
  ...JitHarnessProfile.ProfileRecord.fields,
  session_id: Schema.String,
  parent_call_id: Schema.NullOr(Schema.String),
  depth: Schema.NonNegativeInt
})

/** One session's events of one turn, in order. @since 0.1.0 @category schemas */
export const EventBatch = Schema.Struct({ v: V, kind: Schema.Literal("events"), events: Schema.Array(JitToolEvent.JitToolEvent) })

/** @since 0.1.0 @category models */
export type EventBatch = typeof EventBatch.Type

/** One session's profile records of one turn, in order. @since 0.1.0 @category schemas */
export const RecordBatch = Schema.Struct({ v: V, kind: Schema.Literal("records"), records: Schema.Array(SessionProfileRecord) })

/** @since 0.1.0 @category models */
export type RecordBatch = typeof RecordBatch.Type

/** The kinds of batch, by their field of items. @since 0.1.0 @category models */
export type Kind = "events" | "records"

/** What a reader checks before it reads the items one by one: the envelope, and that its items are an array. */
const Envelopes: Record<Kind, Schema.Schema<any, any>> = {
  events: Schema.Struct({ v: V, kind: Schema.Literal("events"), events: Schema.Array(Schema.Unknown) }),
  records: Schema.Struct({ v: V, kind: Schema.Literal("records"), records: Schema.Array(Schema.Unknown) })
} as const

const head = (kind: Kind): string => `{"v":${Envelope.version},"kind":"${kind}","${kind}":[`
const tail = "]}"

/** The bytes a batch of `kind` takes besides its items and their commas. @since 0.1.0 @category constants */
export const overheadBytes = (kind: Kind): number => head(kind).length + tail.length

/**
 * The batch message of `kind` around `items`, each already JSON text (the caller keeps the batch
 * within `maxBatchBytes`).
 *
 * @since 0.1.0
 * @category encoding
 */
export const encode = (kind: Kind, items: ReadonlyArray<string>): string => `${head(kind)}${items.join(",")}${tail}`

/** One event as the JSON text of a batch item. @since 0.1.0 @category encoding */
export const eventItem = (event: JitToolEvent.JitToolEvent): string => JSON.stringify(event)

/**
 * The items of a batch of `kind` that decode with `item`, in order; none when the message is not
 * such a batch (larger than `maxBatchBytes`, not the envelope, another version).
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeItems = <A, I>(kind: Kind, item: Schema.Schema<A, I>, data: Uint8Array, subject = ""): Array<A> => {
  if (data.length > maxBatchBytes) return []
  const batch = Envelope.decode(Envelopes[kind], data, subject)
  if (Either.isLeft(batch)) return []
  const items = (batch.right as Record<Kind, ReadonlyArray<unknown>>)[kind]
  const decode = Envelope.decoderOf(item)
  const decoded: Array<A> = []
  for (const one of items) {
    const result = decode(one)
    if (Either.isRight(result)) decoded.push(result.right)
  }
  return decoded
}

/** The events of an events batch that decode. @since 0.1.0 @category decoding */
export const decodeEvents = (data: Uint8Array, subject?: string): Array<JitToolEvent.JitToolEvent> =>
  decodeItems("events", JitToolEvent.JitToolEvent, data, subject)

/** The records of a records batch that decode. @since 0.1.0 @category decoding */
export const decodeRecords = (data: Uint8Array, subject?: string): Array<typeof SessionProfileRecord.Type> =>
  decodeItems("records", SessionProfileRecord, data, subject)

const roomFor = (kind: Kind): number => maxBatchBytes - overheadBytes(kind)

/** Whether an item (its JSON text) fits in a batch of `kind` at all. @since 0.1.0 @category encoding */
export const fits = (kind: Kind, json: string): boolean => json.length * 3 <= roomFor(kind) || Buffer.byteLength(json) <= roomFor(kind)

/**
 * `items` in batches of at most `maxBatchBytes` each, in order; `text` gives an item's JSON text.
 * Each item must `fit`. Counted in characters first: only a turn that could be over the bound is
 * measured in bytes.
 *
 * @since 0.1.0
 * @category encoding
 */
export const split = <T>(kind: Kind, items: ReadonlyArray<T>, text: (item: T) => string): Array<ReadonlyArray<T>> => {
  const room = roomFor(kind)
  let chars = 0
  for (const item of items) chars += text(item).length + 1
  if (chars * 3 <= room) return [items]
  const batches: Array<Array<T>> = []
  let current: Array<T> = []
  let bytes = 0
  for (const item of items) {
    const size = Buffer.byteLength(text(item))
    if (current.length > 0 && bytes + 1 + size > room) {
      batches.push(current)
      current = []
    }
    bytes = current.length === 0 ? size : bytes + 1 + size
    current.push(item)
  }
  if (current.length > 0) batches.push(current)
  return batches
}
