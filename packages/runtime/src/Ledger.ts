/**
 * The coordinator's ledger: JSON records by key, each with a revision, written by compare-and-set
 * (a `RecordStore`, whose failures it names `LedgerError`).
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
import * as RecordStore from "./RecordStore.js"

/** A write lost a race (the revision moved) or the store failed: the store's `RecordError`, named for the ledger. @since 0.1.0 @category errors */
export class LedgerError extends Schema.TaggedError<LedgerError>()("LedgerError", RecordStore.failureFields) {
  override get message(): string {
    return `${this.key}: ${this.detail}`
  }
}

/** @since 0.1.0 @category models */
export type Entry = RecordStore.Entry

/** The records, by compare-and-set on their revision (`RecordStore`). @since 0.1.0 @category models */
export interface LedgerShape extends RecordStore.RecordStore<LedgerError> {}

/** @since 0.1.0 @category tags */
export class Ledger extends Context.Tag("@jitbox/runtime/Ledger")<Ledger, LedgerShape>() {}

const ledgerError = (error: RecordStore.RecordError) => new LedgerError({ reason: error.reason, key: error.key, detail: error.detail })

/** The ledger over a record store, its failures `LedgerError`s of the same reason. @since 0.1.0 @category constructors */
export const fromRecords = (records: RecordStore.RecordStore): LedgerShape => ({
  get: (key) => Effect.mapError(records.get(key), ledgerError),
  put: (key, value, expected) => Effect.mapError(records.put(key, value, expected), ledgerError),
  remove: (key, expected) => Effect.mapError(records.remove(key, expected), ledgerError),
  keys: (prefix, limit) => Effect.mapError(records.keys(prefix, limit), ledgerError)
})

/** Records in this process (`RecordStore.makeMemory`). @since 0.1.0 @category constructors */
export const makeMemory = (): LedgerShape => fromRecords(RecordStore.makeMemory())

/** @since 0.1.0 @category layers */
export const layerMemory: Layer.Layer<Ledger> = Layer.sync(Ledger, makeMemory)
