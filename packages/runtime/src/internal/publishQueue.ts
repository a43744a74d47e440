/**
 * The `StreamPublisher`'s bounded queue and its drain. `enqueue` only appends to its session's
 * outbox (it is called synchronously on the dispatch path); the queue is drained to the transport
 * once per turn of the event loop, with plain timers (an Effect fiber woken per call costs more
 * than the publishing itself): each session's events of the turn leave as one batch on
 * `events.<sid>`, its records as one on `profile.<sid>` (`StreamProtocol`, split when over its
 * bound). An item that does not fit the queue or a batch, or whose batch the transport refuses,
 * is counted as lost for its session; the loss is sent as a `jit_events_dropped` event in the
 * session's events before its next item, or by the drain once nothing more is queued. A notice
 * the transport refuses is retried a little later (`retryMs`), not in a tight loop.
 */
import type { JitToolEvent } from "@jitbox/core"
import * as Schema from "effect/Schema"
import * as Ids from "../Ids.js"
import * as StreamProtocol from "../StreamProtocol.js"
import * as Subject from "../Subject.js"
import type * as Transport from "../Transport.js"

interface Item {
  readonly json: string
  /** How many items are lost if this one is: a loss notice carries its own count. */
  readonly weight: number
}

/** What one session queued this turn. */
interface Outbox {
  readonly events: Array<Item>
  readonly records: Array<Item>
}

const isSessionId = Schema.is(Ids.SessionId)
const jsonOf = (item: Item): string => item.json

export class PublishQueue {
  private outboxes = new Map<Ids.SessionId, Outbox>()
  private queued = 0
  private readonly dropped = new Map<Ids.SessionId, number>()
  private immediate: ReturnType<typeof setImmediate> | undefined
  /** Set while a refused loss notice waits to be retried. */
  private retry: ReturnType<typeof setTimeout> | undefined
  private closed = false
  /** The session id last found to be a token: a session's items mostly come in a row. */
  private lastSession: Ids.SessionId | undefined

  constructor(
    private readonly transport: Transport.TransportShape,
    private readonly prefix: Subject.Prefix,
    private readonly capacity: number,
    private readonly retryMs: number
  ) {}

  /** Items waiting for the transport. */
  get pending(): number {
    return this.queued
  }

  /**
   * Queues an item of `kind` for `session` (not published when it cannot be a subject token), or
   * counts it lost when the queue is full or it is too large for a batch.
   */
  enqueue(kind: StreamProtocol.Kind, sessionId: string, item: () => string): void {
    const session = sessionId === this.lastSession ? this.lastSession : isSessionId(sessionId) ? (this.lastSession = sessionId) : undefined
    if (session === undefined) return
    const lost = this.dropped.get(session)
    if (this.queued + (lost === undefined ? 1 : 2) > this.capacity) {
      this.countLoss(session, 1)
      return
    }
    const json = item()
    if (!StreamProtocol.fits(kind, json)) {
      this.countLoss(session, 1)
      return
    }
    let outbox = this.outboxes.get(session)
    if (outbox === undefined) this.outboxes.set(session, outbox = { events: [], records: [] })
    if (lost !== undefined) {
      this.dropped.delete(session)
      outbox.events.push(this.notice(session, lost))
      this.queued++
    }
    outbox[kind].push({ json, weight: 1 })
    this.queued++
    this.signal()
  }

  /** Stops draining. */
  close(): void {
    this.closed = true
    if (this.immediate !== undefined) clearImmediate(this.immediate)
    if (this.retry !== undefined) clearTimeout(this.retry)
  }

  private signal(): void {
    if (this.immediate === undefined && this.retry === undefined && !this.closed) this.immediate = setImmediate(this.run)
  }

  private countLoss(session: Ids.SessionId, count: number): void {
    this.dropped.set(session, (this.dropped.get(session) ?? 0) + count)
  }

  private notice(session: Ids.SessionId, count: number): Item {
    const event: JitToolEvent.JitToolEvent = { type: "CUSTOM", name: "jit_events_dropped", payload: { session_id: session, dropped: count } }
    return { json: StreamProtocol.eventItem(event), weight: count }
  }

  /** Publishes `items` of `kind` of `session` in batches; the items of a batch the transport refuses are counted lost. */
  private send(session: Ids.SessionId, kind: StreamProtocol.Kind, items: ReadonlyArray<Item>): void {
    if (items.length === 0) return
    const subject = kind === "events" ? Subject.events(this.prefix, session) : Subject.profile(this.prefix, session)
    for (const batch of StreamProtocol.split(kind, items, jsonOf)) {
      try {
        this.transport.publish(subject, StreamProtocol.encode(kind, batch.map(jsonOf)))
      } catch {
        let weight = 0
        for (const item of batch) weight += item.weight
        this.countLoss(session, weight)
      }
    }
  }

  /** Publishes what is queued, then the loss notices of sessions with nothing more to send. */
  private drain(): void {
    const outboxes = this.outboxes
    this.outboxes = new Map()
    this.queued = 0
    // records first: a reader timing a completion finds its record already there
    for (const [session, outbox] of outboxes) {
      this.send(session, "records", outbox.records)
      this.send(session, "events", outbox.events)
    }
    for (const [session, count] of [...this.dropped]) {
      this.dropped.delete(session)
      this.send(session, "events", [this.notice(session, count)])
    }
  }

  private readonly run = (): void => {
    this.immediate = undefined
    this.retry = undefined
    this.drain()
    if (this.dropped.size > 0 && !this.closed) this.retry = setTimeout(this.run, this.retryMs)
  }
}
