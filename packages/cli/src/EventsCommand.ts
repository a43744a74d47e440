/**
 * `jitbox events tail [--session SID]`: the namespace's events as they happen, from the
 * `events.<sid>` subjects every session host publishes its batches of events on
 * (`StreamPublisher`, `StreamProtocol`). Each event is decoded with the core's event schema
 * (`JitToolEvent`); what does not decode, or a batch larger than any batch, is skipped. A call's
 * duration is the one its session measured: the `duration_ms` of its profile record
 * (`profile.<sid>`, published just before its `jit_tool_completed`), never the time between two
 * arrivals here; a completion whose record has
 * not arrived waits for it up to `recordGrace`, and is shown without a duration when none comes.
 *
 * On a terminal it draws a live table, redrawn in place at most four times a second: per tool
 * (at most `--rows`, the most recently active first) the calls running, completed and failed, and
 * the durations of the last few. Piped, or with `--json`, it prints one line per event:
 *
 *     2026-12-01T06:10:00.000Z s1 jit_tool_completed square call=call_1a2b_3 origin=code ok 12ms
 *     {"at":"2026-12-01T06:10:00.000Z","sessionId":"s1","durationMs":12,"event":{"type":"CUSTOM",…}}
 *
 * It runs until SIGINT or SIGTERM (exit 0), `--count N` events, or `--timeout`; a timeout before
 * `--count` events fails `EventsTimeout` (exit 1).
 *
 * @since 0.1.0
 */
import { Command, HelpDoc, Options } from "@effect/cli"
import { type HarnessError, JitToolEvent } from "@jitbox/core"
import { NatsConnection, NatsTransport } from "@jitbox/nats"
import { Ids, StreamProtocol, Subject, Transport, type TransportError } from "@jitbox/runtime"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Connection from "./Connection.js"
import * as OperatorOptions from "./OperatorOptions.js"
import * as Progress from "./Progress.js"
import * as Table from "./Table.js"

/** `--timeout` passed before `--count` events arrived. @since 0.1.0 @category errors */
export class EventsTimeout extends Schema.TaggedError<EventsTimeout>()("EventsTimeout", {
  received: Schema.Number,
  wanted: Schema.Number,
  timeoutMs: Schema.Number
}) {
  override get message(): string {
    return `${this.received} of ${this.wanted} events within ${Table.span(this.timeoutMs)}`
  }
}

/** One event as this command received it. @since 0.1.0 @category models */
export interface Received {
  /** When it arrived (epoch milliseconds). */
  readonly at: number
  readonly sessionId: string
  readonly event: JitToolEvent.JitToolEvent
  /** For a `jit_tool_completed` whose profile record was seen: the call's duration as its session measured it. */
  readonly durationMs: number | undefined
}

/** The part of a profile record (`StreamProtocol.RecordBatch`) that times a call. @since 0.1.0 @category schemas */
export const TimingRecord = Schema.Struct({ session_id: Schema.String, call_id: Schema.String, duration_ms: Schema.NonNegative })

/** A call's duration, as its session measured it. @since 0.1.0 @category models */
export interface Timing {
  readonly sessionId: string
  readonly callId: string
  readonly durationMs: number
}

/** How long a completion waits for its profile record before it is shown without a duration. @since 0.1.0 @category constants */
export const recordGrace = Duration.millis(250)

/**
 * The timings a batch of profile records holds (none when it is not one).
 *
 * @since 0.1.0
 * @category codecs
 */
export const decodeTimings = (data: Uint8Array): Array<Timing> =>
  StreamProtocol.decodeItems("records", TimingRecord, data).map((record) => ({
    sessionId: record.session_id,
    callId: record.call_id,
    durationMs: record.duration_ms
  }))

/**
 * The events a batch holds (none when it is not one).
 *
 * @since 0.1.0
 * @category codecs
 */
export const decodeEvents = (data: Uint8Array): Array<JitToolEvent.JitToolEvent> => StreamProtocol.decodeEvents(data)

interface ToolStats {
  running: number
  completed: number
  failed: number
  readonly recent: Array<number>
  lastAt: number
}

/** Calls whose start (or timing) is remembered; older ones are forgotten. */
const maxOpenCalls = 10_000
/** Durations kept per tool. */
const recentDurations = 5
/** Tools kept; the least recently active is forgotten past this. */
const maxTools = 1_000

const keyOf = (sessionId: string, callId: string) => `${sessionId}\u0000${callId}`

/**
 * The counts and durations per tool, fed one event (and one call's timing) at a time.
 *
 * @since 0.1.0
 * @category models
 */
export class Tally {
  readonly tools = new Map<string, ToolStats>()
  private readonly open = new Set<string>()
  private readonly timings = new Map<string, number>()
  private readonly waiting = new Map<string, () => void>()
  events = 0
  dropped = 0

  /** Remembers a call's duration (from its profile record) until its completion is counted. */
  time(timing: Timing): void {
    const key = keyOf(timing.sessionId, timing.callId)
    if (this.timings.size >= maxOpenCalls) this.timings.delete(this.timings.keys().next().value!)
    this.timings.set(key, timing.durationMs)
    this.waiting.get(key)?.()
  }

  /** Whether the call's timing has arrived. */
  timed(sessionId: string, callId: string): boolean {
    return this.timings.has(keyOf(sessionId, callId))
  }

  /** Calls `arrived` once the call's timing arrives (until `cancel` is called). */
  whenTimed(sessionId: string, callId: string, arrived: () => void): () => void {
    const key = keyOf(sessionId, callId)
    this.waiting.set(key, arrived)
    return () => {
      if (this.waiting.get(key) === arrived) this.waiting.delete(key)
    }
  }

  /** Counts `event`, arrived at `at`; answers what it was received as. */
  add(event: JitToolEvent.JitToolEvent, at: number): Received {
    this.events++
    const sessionId = event.payload.session_id
    if (event.name === "jit_events_dropped") {
      this.dropped += event.payload.dropped
      return { at, sessionId, event, durationMs: undefined }
    }
    if (event.name === "jit_catalog_revoked") return { at, sessionId, event, durationMs: undefined }
    const stats = this.statsOf(event.payload.tool_name, at)
    const key = keyOf(sessionId, event.payload.tool_call_id)
    if (event.name === "jit_tool_started") {
      stats.running++
      if (this.open.size >= maxOpenCalls) this.open.delete(this.open.values().next().value!)
      this.open.add(key)
      return { at, sessionId, event, durationMs: undefined }
    }
    if (this.open.delete(key)) stats.running = Math.max(0, stats.running - 1)
    if (event.payload.success) stats.completed++
    else stats.failed++
    const durationMs = this.timings.get(key)
    this.timings.delete(key)
    if (durationMs !== undefined) {
      stats.recent.push(durationMs)
      if (stats.recent.length > recentDurations) stats.recent.shift()
    }
    return { at, sessionId, event, durationMs }
  }

  private statsOf(tool: string, at: number): ToolStats {
    let stats = this.tools.get(tool)
    if (stats === undefined) {
      if (this.tools.size >= maxTools) {
        const oldest = [...this.tools.entries()].reduce((a, b) => a[1].lastAt <= b[1].lastAt ? a : b)
        this.tools.delete(oldest[0])
      }
      this.tools.set(tool, stats = { running: 0, completed: 0, failed: 0, recent: [], lastAt: at })
    }
    stats.lastAt = at
    return stats
  }
}

/**
 * The line printed for one event when not drawing a table.
 *
 * @since 0.1.0
 * @category formatting
 */
export const line = (received: Received): string => {
  const at = new Date(received.at).toISOString()
  const event = received.event
  if (event.name === "jit_events_dropped") return `${at} ${Table.cell(received.sessionId)} jit_events_dropped dropped=${event.payload.dropped}`
  if (event.name === "jit_catalog_revoked") {
    return `${at} ${Table.cell(received.sessionId)} jit_catalog_revoked ${Table.cell(event.payload.tool_name)} version=${Table.cell(event.payload.version_id)} by=${Table.cell(event.payload.revoked_by)}`
  }
  const head = `${at} ${Table.cell(received.sessionId)} ${event.name} ${Table.cell(event.payload.tool_name)} call=${Table.cell(event.payload.tool_call_id)} origin=${event.payload.origin}`
  if (event.name === "jit_tool_started") return head
  const outcome = event.payload.success ? "ok" : `failed ${Table.cell(event.payload.error_type ?? "error")}`
  return `${head} ${outcome}${received.durationMs === undefined ? "" : ` ${Table.span(received.durationMs)}`}`
}

/**
 * The JSON line printed for one event with `--json`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const jsonLine = (received: Received): string =>
  JSON.stringify({
    at: new Date(received.at).toISOString(),
    sessionId: received.sessionId,
    ...(received.durationMs === undefined ? {} : { durationMs: received.durationMs }),
    event: received.event
  })

/**
 * The live table's lines for `tally` at `now`: a header and at most `rows` tools.
 *
 * @since 0.1.0
 * @category formatting
 */
export const screen = (tally: Tally, title: string, rows: number, now: number): Array<string> => {
  const tools = [...tally.tools.entries()].sort((a, b) => b[1].lastAt - a[1].lastAt)
  const shown = tools.slice(0, rows)
  return [
    `${title}  events ${tally.events}  dropped ${tally.dropped}  tools ${tools.length}  (Ctrl-C to stop)`,
    ...Table.render(
      ["TOOL", "RUNNING", "COMPLETED", "FAILED", "RECENT DURATIONS", "LAST"],
      shown.map(([name, stats]) => [
        name,
        stats.running,
        stats.completed,
        stats.failed,
        stats.recent.length === 0 ? "-" : stats.recent.map(Table.span).join(" "),
        `${Table.span(now - stats.lastAt)} ago`
      ])
    ),
    ...(tools.length > shown.length ? [`… ${tools.length - shown.length} more tools`] : [])
  ]
}

/** The escape sequences of the in-place redraw. @since 0.1.0 @category constants */
export const redraw = {
  /** Moves the cursor to the start of the line `n` lines up. */
  up: (n: number) => `\x1b[${n}F`,
  /** Erases from the cursor to the end of the screen. */
  clearBelow: "\x1b[J"
} as const

/** @since 0.1.0 @category options */
export const session = Options.text("session").pipe(
  Options.withDescription("Only this session's events (default: every session of the namespace)"),
  Options.optional
)

/** @since 0.1.0 @category options */
export const count = Options.integer("count").pipe(
  Options.withDescription("Stop after this many events (exit 0)"),
  Options.mapTryCatch((value) => {
    if (!Number.isSafeInteger(value) || value < 1) throw new Error(`--count: expected an integer ≥ 1, got ${value}`)
    return value
  }, (error) => HelpDoc.p(error instanceof Error ? error.message : String(error))),
  Options.optional
)

/** @since 0.1.0 @category options */
export const timeout = OperatorOptions.duration(
  "timeout",
  "Stop after this long: exit 0, or 1 (EventsTimeout) when --count events have not arrived by then"
).pipe(Options.optional)

/** @since 0.1.0 @category options */
export const rows = Options.integer("rows").pipe(
  Options.withDescription("The most tools the live table shows (default 20)"),
  Options.withDefault(20)
)

/**
 * Waits, for a completion, until its call's timing has arrived or `recordGrace` has passed (by the
 * Effect clock); at once for any other event.
 *
 * @since 0.1.0
 * @category constructors
 */
export const timingOf = (tally: Tally, event: JitToolEvent.JitToolEvent): Effect.Effect<void> => {
  if (event.name !== "jit_tool_completed" || tally.timed(event.payload.session_id, event.payload.tool_call_id)) return Effect.void
  const { session_id, tool_call_id } = event.payload
  return Effect.flatMap(Deferred.make<void>(), (arrived) =>
    Effect.acquireUseRelease(
      Effect.sync(() => tally.whenTimed(session_id, tool_call_id, () => Deferred.unsafeDone(arrived, Exit.void))),
      () => Effect.timeoutOption(Deferred.await(arrived), recordGrace),
      (cancel) => Effect.sync(cancel)
    ))
}

/** What `jitbox events tail` can fail with. @since 0.1.0 @category errors */
export type EventsCommandError = HarnessError.ConfigError | TransportError.TransportError | EventsTimeout

const tail = Command.make(
  "tail",
  { ...Connection.options, session, json: OperatorOptions.json, count, timeout, rows },
  (config): Effect.Effect<void, EventsCommandError> =>
    Effect.scoped(Effect.gen(function*() {
      const { namespace, prefix } = yield* Connection.prefixOf(config)
      const sessionId = Option.isSome(config.session) ? Option.some(yield* Ids.decode(Ids.SessionId, "--session")(config.session.value)) : Option.none()
      const transport = NatsTransport.fromConnection(yield* NatsConnection.make(yield* Connection.natsOptions(config, `jitbox-events-${namespace}`)))
      const pattern = Option.match(sessionId, { onNone: () => Subject.allEvents(prefix), onSome: (id) => Subject.sessionEvents(prefix, id) })
      const profiles = Option.match(sessionId, { onNone: () => Subject.allProfiles(prefix), onSome: (id) => Subject.profile(prefix, id) })
      // the timings first: a call's profile record is published just before its completion
      const timings = yield* Transport.subscribe(profiles, { bufferSize: 4_096 }).pipe(Effect.provideService(Transport.Transport, transport))
      const stream = yield* Transport.subscribe(pattern, { bufferSize: 4_096 }).pipe(Effect.provideService(Transport.Transport, transport))
      const stdout = process.stdout
      const live = !config.json && Progress.isTerminal(stdout)
      const tally = new Tally()
      yield* Effect.forkScoped(Stream.runForEach(timings, (message) => Effect.sync(() => decodeTimings(message.data).forEach((timing) => tally.time(timing)))))
      const title = `jitbox events ${namespace}${Option.match(sessionId, { onNone: () => "", onSome: (id) => ` session ${id}` })}`
      let drawn = 0
      let dirty = true
      const draw = Effect.sync(() => {
        if (!dirty && drawn > 0) return
        dirty = false
        const width = Math.max(20, (stdout.columns || 100) - 1)
        const lines = screen(tally, title, Math.max(1, config.rows), Date.now()).map((text) => text.length > width ? `${text.slice(0, width - 1)}…` : text)
        stdout.write(`${drawn > 0 ? redraw.up(drawn) : ""}${redraw.clearBelow}${lines.join("\n")}\n`)
        drawn = lines.length
      })
      if (live) {
        stdout.write(Progress.ansi.hideCursor)
        yield* Effect.addFinalizer(() => Effect.zipRight(Effect.sync(() => (dirty = true)), Effect.zipRight(draw, Effect.sync(() => stdout.write(Progress.ansi.showCursor)))))
        yield* draw
        // the "ago" column moves even while nothing arrives
        yield* Effect.forkScoped(Effect.repeat(Effect.zipRight(Effect.sync(() => (dirty = true)), draw), Schedule.spaced("1 second")))
        yield* Effect.forkScoped(Effect.repeat(draw, Schedule.spaced("250 millis")))
      }
      let received = 0
      const events = stream.pipe(
        Stream.flatMap((message) => Stream.fromIterable(decodeEvents(message.data))),
        Stream.filter((event) => Option.isNone(sessionId) || event.payload.session_id === sessionId.value),
        (events) => Option.isSome(config.count) ? Stream.take(events, config.count.value) : events,
        Stream.runForEach((event) =>
          Effect.zipRight(timingOf(tally, event), Effect.sync(() => {
            received++
            const counted = tally.add(event, Date.now())
            if (live) dirty = true
            else stdout.write(`${config.json ? jsonLine(counted) : line(counted)}\n`)
          }))
        )
      )
      if (Option.isNone(config.timeout)) return yield* events
      const finished = yield* Effect.timeout(events, config.timeout.value).pipe(Effect.as(true), Effect.catchTag("TimeoutException", () => Effect.succeed(false)))
      if (!finished && Option.isSome(config.count)) {
        return yield* new EventsTimeout({ received, wanted: config.count.value, timeoutMs: config.timeout.value })
      }
    }))
).pipe(
  Command.withDescription(
    "Follow the namespace's events: a live table per tool (running, completed, failed, recent durations) on a terminal; one line per event when piped or with --json."
  )
)

/** @since 0.1.0 @category commands */
export const command = Command.make("events").pipe(
  Command.withDescription("The namespace's jit_tool_* events."),
  Command.withSubcommands([tail])
)
