/**
 * The coordinator's ledger: JSON records by key, each with a revision, written by compare-and-set.
 * The coordinator keeps in it what each session has been granted and spent, and which leases hold
 * a profile's concurrency slots, so a restarted coordinator neither loses nor doubles a budget.
 * `memory` keeps the records in this process (the embedded default, and tests that restart a
 * coordinator over the same instance); `@jitbox/nats` has the JetStream KV layer (`KvLedger`).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

/** A write lost a race (the revision moved) or the store failed. @since 0.1.0 @category errors */
export class LedgerError extends Schema.TaggedError<LedgerError>()("LedgerError", {
  reason: Schema.Literal("Conflict", "Unavailable"),
  key: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.key}: ${this.detail}`
  }
}

/** @since 0.1.0 @category models */
export interface Entry {
  readonly value: unknown
  /** Increases with every write; a write names the revision it replaces. */
  readonly revision: number
}

/** @since 0.1.0 @category models */
export interface LedgerShape {
  readonly get: (key: string) => Effect.Effect<Entry | undefined, LedgerError>
  /**
   * Writes `value` if the record is still at `expected` (`0`: it must not exist yet) and gives the
   * new revision; otherwise fails `Conflict`.
   */
  readonly put: (key: string, value: unknown, expected: number) => Effect.Effect<number, LedgerError>
  /**
   * Deletes the record if it is still at `expected`; otherwise fails `Conflict`. A deleted key is
   * not listed by `keys`, reads as missing, and may be created again (revision `0`).
   */
  readonly remove: (key: string, expected: number) => Effect.Effect<void, LedgerError>
  /**
   * The keys of the live records under `prefix` (`session.`: every session's), at most `limit` of
   * them, the least recently written first (so a bounded sweep sees the oldest records first).
   */
  readonly keys: (prefix: string, limit: number) => Effect.Effect<ReadonlyArray<string>, LedgerError>
}

/** @since 0.1.0 @category tags */
export class Ledger extends Context.Tag("@jitbox/runtime/Ledger")<Ledger, LedgerShape>() {}

/**
 * Records in this process. Values are copied through JSON, as a store would.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (): LedgerShape => {
  const records = new Map<string, { json: string; revision: number }>()
  let sequence = 0
  return {
    get: (key) =>
      Effect.sync(() => {
        const record = records.get(key)
        return record === undefined ? undefined : { value: JSON.parse(record.json), revision: record.revision }
      }),
    put: (key, value, expected) =>
      Effect.suspend(() => {
        const current = records.get(key)?.revision ?? 0
        if (current !== expected) {
          return Effect.fail(new LedgerError({ reason: "Conflict", key, detail: `expected revision ${expected}, found ${current}` }))
        }
        const revision = ++sequence
        // deleted first, so the map's order is the order of the last writes
        records.delete(key)
        records.set(key, { json: JSON.stringify(value), revision })
        return Effect.succeed(revision)
      }),
    remove: (key, expected) =>
      Effect.suspend(() => {
        const current = records.get(key)?.revision ?? 0
        if (current === 0 || current !== expected) {
          return Effect.fail(new LedgerError({ reason: "Conflict", key, detail: `expected revision ${expected}, found ${current}` }))
        }
        records.delete(key)
        return Effect.void
      }),
    keys: (prefix, limit) => Effect.sync(() => [...records.keys()].filter((key) => key.startsWith(prefix)).slice(0, Math.max(0, limit)))
  }
}

/** @since 0.1.0 @category layers */
export const layerMemory: Layer.Layer<Ledger> = Layer.sync(Ledger, makeMemory)
