/**
 * The `StreamPublisher`'s bounded queue and its drain. `enqueue` only appends (it is called
 * synchronously on the dispatch path); the queue is drained to the transport once per turn of the
 * event loop, with plain timers: an Effect fiber woken per call costs more than the publishing
 * itself. A message that does not fit, or that the transport refuses, is counted as lost for its
 * session; the loss is sent as a `jit_events_dropped` notice on the session's events subject
 * before its next message, or by the drain once nothing more is queued. A notice the transport
 * refuses is retried a little later (`retryMs`), not in a tight loop.
 */
import type { JitToolEvent } from "@jitbox/core"
import * as Schema from "effect/Schema"
import * as Envelope from "../Envelope.js"
import * as Ids from "../Ids.js"
import * as Subject from "../Subject.js"
import type * as Transport from "../Transport.js"

interface Pending {
  readonly session: Ids.SessionId
  readonly subject: Subject.Subject
  readonly payload: string
  /** How many messages are lost if this one is: a loss notice carries its own count. */
  readonly weight: number
}

const isSessionId = Schema.is(Ids.SessionId)
const droppedName = Ids.token("jit_events_dropped")

export const eventMessage = (event: JitToolEvent.JitToolEvent): string => Envelope.encode("event", { event })

export class PublishQueue {
  private queue: Array<Pending> = []
  private readonly dropped = new Map<Ids.SessionId, number>()
  private immediate: ReturnType<typeof setImmediate> | undefined
  /** Set while a refused loss notice waits to be retried. */
  private retry: ReturnType<typeof setTimeout> | undefined
  private closed = false

  constructor(
    private readonly transport: Transport.TransportShape,
    private readonly prefix: Subject.Prefix,
    private readonly capacity: number,
    private readonly retryMs: number
  ) {}

  /** Messages waiting for the transport. */
  get pending(): number {
    return this.queue.length
  }

  /** Queues a message for `session` (not published when it cannot be a subject token), or counts it lost when the queue is full. */
  enqueue(session: string, subject: (session: Ids.SessionId) => Subject.Subject, payload: () => string): void {
    if (!isSessionId(session)) return
    const lost = this.dropped.get(session)
    if (this.queue.length + (lost === undefined ? 1 : 2) > this.capacity) {
      this.countLoss(session, 1)
      return
    }
    if (lost !== undefined) {
      this.dropped.delete(session)
      this.queue.push(this.notice(session, lost))
    }
    this.queue.push({ session, subject: subject(session), payload: payload(), weight: 1 })
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

  private notice(session: Ids.SessionId, count: number): Pending {
    return {
      session,
      subject: Subject.events(this.prefix, session, droppedName),
      payload: eventMessage({ type: "CUSTOM", name: "jit_events_dropped", payload: { session_id: session, dropped: count } }),
      weight: count
    }
  }

  private send(message: Pending): boolean {
    try {
      this.transport.publish(message.subject, message.payload)
      return true
    } catch {
      return false
    }
  }

  /** Publishes what is queued, then the loss notices of sessions with nothing more to send. */
  private drain(): void {
    const batch = this.queue
    this.queue = []
    for (const message of batch) {
      if (!this.send(message)) this.countLoss(message.session, message.weight)
    }
    for (const [session, count] of [...this.dropped]) {
      this.dropped.delete(session)
      if (!this.send(this.notice(session, count))) this.countLoss(session, count)
    }
  }

  private readonly run = (): void => {
    this.immediate = undefined
    this.retry = undefined
    this.drain()
    if (this.dropped.size > 0 && !this.closed) this.retry = setTimeout(this.run, this.retryMs)
  }
}
