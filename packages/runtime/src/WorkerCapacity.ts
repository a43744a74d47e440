/**
 * What each worker can take, as the coordinators know it. A worker publishes a capacity report on
 * `workers.capacity` when it starts, every `intervalMs`, and when its load changes (at most once
 * per `minIntervalMs`, however often it changes):
 *
 *     {"v":2,"kind":"capacity","worker_id":"worker_…","pool":"gpu","languages":["javascript","python"],
 *      "concurrency":{"javascript":4,"python":4},"running":3,"draining":false,"interval_ms":5000}
 *
 * When its scope closes it reports `draining: true` at once, and keeps reporting while its
 * invocations finish. Every coordinator reads the reports into a `Table`, decoded with a schema
 * (a message that does not decode, or is larger than any report can be, is dropped): an entry
 * lives until `misses` report intervals (its own `interval_ms`) pass without a report, but never
 * longer than `maxTtlMs` (default 15 s, three of the default 5 s intervals) whatever interval a
 * report claims, measured with the context's `Clock`. Each worker id has one entry, which its next
 * report replaces, and an entry's size is bounded by the report's schema (at most 4 KiB). The table
 * holds at most `maxWorkers` entries (default 256): a report of a new worker id finding it full
 * (after the expired ones are dropped) is refused (counted in `refused`), so a flood of made-up ids
 * can neither grow it nor push out the workers it knows, and made-up ids are gone `maxTtlMs` after
 * the flood stops. A worker that reports less often than every `maxTtlMs / misses` drops out of
 * the table between its reports. The coordinator answers the live entries on `coordinator.<principal>.workers`.
 *
 * @since 0.1.0
 */
import { type CodeLanguage, HarnessError } from "@jitbox/core"
import * as Deferred from "effect/Deferred"
import * as Either from "effect/Either"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Envelope from "./Envelope.js"
import * as Ids from "./Ids.js"
import * as Subject from "./Subject.js"
import * as Transport from "./Transport.js"
import { TransportError } from "./TransportError.js"

/** @since 0.1.0 @category constants */
export const defaults = {
  /** How often a worker reports when nothing changes. */
  intervalMs: 5_000,
  /** The least time between two reports of one worker. */
  minIntervalMs: 250,
  /** Report intervals without a report after which a coordinator forgets a worker. */
  misses: 3,
  /** The most workers a coordinator's table holds. */
  maxWorkers: 256,
  /** The longest an entry lives without a report, whatever interval the report claims (3 × 5 s). */
  maxTtlMs: 15_000
} as const

/** @since 0.1.0 @category constants */
export const limits = {
  minIntervalMs: 10,
  maxIntervalMs: 600_000,
  /** No report is larger: a bigger message is dropped unread. */
  reportBytes: 4_096,
  slots: 1_000_000
} as const

const V = Schema.Literal(Envelope.version)
const Language = Schema.Literal("javascript", "typescript", "python", "bash", "csharp")
const Slots = Schema.Int.pipe(Schema.between(0, limits.slots))

/** Invocations a worker runs at once, per language it serves. @since 0.1.0 @category schemas */
export const Concurrency = Schema.Struct({
  javascript: Schema.optional(Slots),
  typescript: Schema.optional(Slots),
  python: Schema.optional(Slots),
  bash: Schema.optional(Slots)
})

/** @since 0.1.0 @category models */
export type Concurrency = typeof Concurrency.Type

/** A worker's report on `workers.capacity`. @since 0.1.0 @category schemas */
export const CapacityReport = Schema.Struct({
  v: V,
  kind: Schema.Literal("capacity"),
  worker_id: Ids.WorkerId,
  pool: Ids.PoolName,
  languages: Schema.Array(Language).pipe(Schema.maxItems(4)),
  concurrency: Concurrency,
  /** Invocations running now. */
  running: Slots,
  /** It takes no new work: its scope is closing. */
  draining: Schema.Boolean,
  /** How often it reports; its entry expires after `misses` of these. */
  interval_ms: Schema.Int.pipe(Schema.between(limits.minIntervalMs, limits.maxIntervalMs))
})

/** @since 0.1.0 @category models */
export type CapacityReport = typeof CapacityReport.Type

/** One live worker, as `coordinator.<principal>.workers` answers it. @since 0.1.0 @category schemas */
export const WorkerCapacity = Schema.Struct({
  workerId: Schema.String,
  pool: Schema.String,
  languages: Schema.Array(Language),
  concurrency: Concurrency,
  running: Schema.Number,
  draining: Schema.Boolean,
  /** When its last report arrived (epoch milliseconds, the coordinator's clock). */
  lastSeen: Schema.Number,
  /** When it is forgotten without another report. */
  expiresAt: Schema.Number
})

/** @since 0.1.0 @category models */
export type WorkerCapacity = typeof WorkerCapacity.Type

/** @since 0.1.0 @category models */
export interface ReporterOptions {
  readonly prefix: Subject.Prefix
  readonly workerId: Ids.WorkerId
  readonly pool: Ids.PoolName
  readonly languages: ReadonlyArray<CodeLanguage>
  /** Invocations of each language it runs at once. */
  readonly concurrency: number
  /** Invocations running now. */
  readonly running: () => number
  readonly intervalMs?: number | undefined
  readonly minIntervalMs?: number | undefined
}

/** @since 0.1.0 @category models */
export interface Reporter {
  /** The load may have changed: a report goes out within `minIntervalMs`. Cheap; call it freely. */
  readonly changed: () => void
  /** `handler`, telling the reporter when each request starts and ends. */
  readonly track: (handler: Transport.Handler) => Transport.Handler
  /**
   * Sends the first report now and reports from then on; when the scope it runs in closes, reports
   * `draining` at once. Run it once the worker serves, in the scope of what it serves.
   */
  readonly start: Effect.Effect<void, never, Scope.Scope>
  /** Reports sent so far. */
  readonly sent: () => number
}

const isPromiseLike = (u: unknown): u is PromiseLike<Transport.Reply> =>
  typeof u === "object" && u !== null && typeof (u as PromiseLike<unknown>).then === "function"

const intervalOf = (value: number | undefined, fallback: number, option: string): number => {
  const ms = value ?? fallback
  if (!Number.isInteger(ms) || ms < limits.minIntervalMs || ms > limits.maxIntervalMs) {
    throw new HarnessError.ConfigError({ option, detail: `expected an integer from ${limits.minIntervalMs} to ${limits.maxIntervalMs} ms, got ${ms}` })
  }
  return ms
}

/**
 * A worker's reporter. Its reports run in a fiber of the scope it is made in, so make it before
 * the worker serves (its reports go on while what it serves drains) and `start` it after.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reporter = (options: ReporterOptions): Effect.Effect<Reporter, never, Scope.Scope | Transport.Transport> =>
  Effect.gen(function*() {
    const transport = yield* Transport.Transport
    const intervalMs = intervalOf(options.intervalMs, defaults.intervalMs, "intervalMs")
    const minIntervalMs = Math.min(intervalMs, intervalOf(options.minIntervalMs, defaults.minIntervalMs, "minIntervalMs"))
    const subject = Subject.workersCapacity(options.prefix)
    const languages = [...options.languages]
    const concurrency = Object.fromEntries(languages.map((language) => [language, options.concurrency]))
    const signal = yield* Queue.sliding<void>(1)
    const started = yield* Deferred.make<void>()
    let draining = false
    let sent = 0

    const publish = () => {
      try {
        transport.publish(
          subject,
          Envelope.encode("capacity", {
            worker_id: options.workerId,
            pool: options.pool,
            languages,
            concurrency,
            running: options.running(),
            draining,
            interval_ms: intervalMs
          })
        )
        sent++
      } catch {
        // the transport is closing: the coordinators will notice the silence
      }
    }

    yield* Effect.forkScoped(
      Effect.zipRight(
        Deferred.await(started),
        Effect.forever(Effect.gen(function*() {
          yield* Queue.takeAll(signal)
          yield* Effect.sync(publish)
          yield* Effect.sleep(minIntervalMs)
          yield* Effect.raceFirst(Effect.sleep(intervalMs - minIntervalMs), Queue.take(signal))
        }))
      )
    )

    const changed = () => {
      signal.unsafeOffer(undefined)
    }

    const track = (handler: Transport.Handler): Transport.Handler => (request) => {
      let reply: Transport.Reply | PromiseLike<Transport.Reply>
      try {
        reply = handler(request)
      } finally {
        changed()
      }
      return isPromiseLike(reply) ? Promise.resolve(reply).finally(changed) : reply
    }

    const start = Effect.zipRight(
      Deferred.succeed(started, undefined),
      Effect.addFinalizer(() =>
        Effect.sync(() => {
          draining = true
          publish()
        })
      )
    )

    return { changed, track, start, sent: () => sent }
  })

/** @since 0.1.0 @category models */
export interface TableOptions {
  /** Entries kept at most (default 256). */
  readonly maxWorkers?: number | undefined
  /** Report intervals without a report before an entry expires (default 3). */
  readonly misses?: number | undefined
  /** The longest an entry lives without a report, whatever its `interval_ms` (default 15 000 ms). */
  readonly maxTtlMs?: number | undefined
}

/** @since 0.1.0 @category models */
export interface Table {
  /** Takes a report that arrived at `now`; false when the table is full and the worker is new. */
  readonly offer: (report: CapacityReport, now: number) => boolean
  /** The entries not expired at `now`, of one pool or all, by worker id (expired ones are dropped). */
  readonly live: (now: number, pool?: string | undefined) => Array<WorkerCapacity>
  readonly size: () => number
  /** Reports refused because the table was full. */
  readonly refused: () => number
}

/**
 * An empty table.
 *
 * @since 0.1.0
 * @category constructors
 */
export const table = (options: TableOptions = {}): Table => {
  const maxWorkers = options.maxWorkers ?? defaults.maxWorkers
  const misses = options.misses ?? defaults.misses
  const maxTtlMs = options.maxTtlMs ?? defaults.maxTtlMs
  const entries = new Map<string, WorkerCapacity>()
  let refused = 0

  const purge = (now: number) => {
    for (const [id, entry] of entries) if (entry.expiresAt <= now) entries.delete(id)
  }

  return {
    offer: (report, now) => {
      if (!entries.has(report.worker_id) && entries.size >= maxWorkers) {
        purge(now)
        if (entries.size >= maxWorkers) {
          refused++
          return false
        }
      }
      entries.set(report.worker_id, {
        workerId: report.worker_id,
        pool: report.pool,
        languages: report.languages,
        concurrency: report.concurrency,
        running: report.running,
        draining: report.draining,
        lastSeen: now,
        expiresAt: now + Math.min(report.interval_ms * misses, maxTtlMs)
      })
      return true
    },
    live: (now, pool) => {
      purge(now)
      return [...entries.values()]
        .filter((entry) => pool === undefined || entry.pool === pool)
        .sort((a, b) => a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : 0)
    },
    size: () => entries.size,
    refused: () => refused
  }
}

/** @since 0.1.0 @category models */
export interface Tracker {
  /** The live workers now (the context's `Clock`), of one pool or all. */
  readonly live: (pool?: string | undefined) => Array<WorkerCapacity>
  /** Reports dropped because they did not decode or were too large. */
  readonly malformed: () => number
  readonly table: Table
}

/**
 * Reads the workers' reports into a table until the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const track = (
  options: TableOptions & { readonly prefix: Subject.Prefix }
): Effect.Effect<Tracker, TransportError, Scope.Scope | Transport.Transport> =>
  Effect.gen(function*() {
    const clock = yield* Effect.clock
    const entries = table(options)
    let malformed = 0
    const reports = yield* Transport.subscribe(Subject.workersCapacity(options.prefix), { bufferSize: 1_024 })
    yield* reports.pipe(
      Stream.runForEach((message) =>
        Effect.sync(() => {
          const report = message.data.length > limits.reportBytes
            ? undefined
            : Envelope.decode(CapacityReport, message.data, message.subject)
          if (report === undefined || Either.isLeft(report)) malformed++
          else entries.offer(report.right, clock.unsafeCurrentTimeMillis())
        })
      ),
      Effect.ignore,
      Effect.forkScoped
    )
    return { live: (pool) => entries.live(clock.unsafeCurrentTimeMillis(), pool), malformed: () => malformed, table: entries }
  })
