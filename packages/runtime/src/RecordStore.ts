/**
 * JSON records by key, each with a revision, written by compare-and-set: the store under the
 * coordinator's `Ledger` and the hosts' `SessionOwnership`, which name its failures their own way.
 * `makeMemory` keeps the records in this process; `@jitbox/nats` keeps them in a JetStream KV bucket.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** What a failure says, under the store's tag (`RecordError`) or a service's (`LedgerError`). @since 0.1.0 @category schemas */
export const failureFields = {
  reason: Schema.Literal("Conflict", "Unavailable"),
  key: Schema.String,
  detail: Schema.String
}

/** A write lost a race (the revision moved) or the store failed. @since 0.1.0 @category errors */
export class RecordError extends Schema.TaggedError<RecordError>()("RecordError", failureFields) {
  override get message(): string {
    return `${this.key}: ${this.detail}`
  }
}

/** A record; its revision increases with every write, and a write names the one it replaces. @since 0.1.0 @category models */
export interface Entry {
  readonly value: unknown
  readonly revision: number
}

/** The store; `E`, how a service over it names the failures (`Ledger`'s `LedgerError`). @since 0.1.0 @category models */
export interface RecordStore<E = RecordError> {
  readonly get: (key: string) => Effect.Effect<Entry | undefined, E>
  /**
   * Writes `value` if the record is still at `expected` (`0`: it must not exist yet) and gives the
   * new revision; otherwise fails `Conflict`.
   */
  readonly put: (key: string, value: unknown, expected: number) => Effect.Effect<number, E>
  /**
   * Deletes the record if it is still at `expected`; otherwise fails `Conflict`. A deleted key is
   * not listed by `keys`, reads as missing, and may be created again (revision `0`).
   */
  readonly remove: (key: string, expected: number) => Effect.Effect<void, E>
  /**
   * The keys of the live records under `prefix`, at most `limit` of them, the least recently
   * written first (so a bounded sweep sees the oldest records first).
   */
  readonly keys: (prefix: string, limit: number) => Effect.Effect<ReadonlyArray<string>, E>
}

const conflict = (key: string, expected: number, current: number) =>
  Effect.fail(new RecordError({ reason: "Conflict", key, detail: `expected revision ${expected}, found ${current}` }))

/** Records in this process, copied through JSON as a store would. @since 0.1.0 @category constructors */
export const makeMemory = (): RecordStore => {
  const records = new Map<string, { readonly json: string; readonly revision: number }>()
  let sequence = 0
  const revisionOf = (key: string) => records.get(key)?.revision ?? 0
  return {
    get: (key) =>
      Effect.sync(() => {
        const record = records.get(key)
        return record === undefined ? undefined : { value: JSON.parse(record.json), revision: record.revision }
      }),
    put: (key, value, expected) =>
      Effect.suspend(() => {
        const current = revisionOf(key)
        if (current !== expected) return conflict(key, expected, current)
        const revision = ++sequence
        // deleted first, so the map's order is the order of the last writes
        records.delete(key)
        records.set(key, { json: JSON.stringify(value), revision })
        return Effect.succeed(revision)
      }),
    remove: (key, expected) =>
      Effect.suspend(() => {
        const current = revisionOf(key)
        if (current === 0 || current !== expected) return conflict(key, expected, current)
        records.delete(key)
        return Effect.void
      }),
    keys: (prefix, limit) => Effect.sync(() => [...records.keys()].filter((key) => key.startsWith(prefix)).slice(0, Math.max(0, limit)))
  }
}
