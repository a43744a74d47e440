/**
 * Publishes what every harness in its context emits: each `jit_tool_*` event on
 * `events.<sid>.<name>` and each finished attempt's profile record on `profile.<sid>`, in the
 * runtime's envelope:
 *
 *     {"v":1,"kind":"event","event":{"type":"CUSTOM","name":"jit_tool_started","payload":{…}}}
 *     {"v":1,"kind":"profile_record","record":{"call_id":"…","tool_name":"add",…,"session_id":"s1","parent_call_id":null,"depth":0}}
 *
 * Publishing never blocks dispatch: the core's sinks are called synchronously on the dispatch
 * path, so they only append to a bounded queue, which is drained to the `Transport` once per turn
 * of the event loop (what one turn queued leaves together) until the layer's scope closes. When
 * the queue is full the message is dropped and counted per session; the loss is published in-band
 * as a `jit_events_dropped` event (with the count) on that session's events subject before its
 * next event, or by the drain once the queue has room. A publish the transport refuses (closed,
 * reconnecting) counts as a loss the same way. A record or event whose session id cannot be a
 * subject token is not published.
 *
 * @since 0.1.0
 */
import { EventSink, ProfileSink } from "@jitbox/core"
import type { JitToolEvent } from "@jitbox/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Envelope from "./Envelope.js"
import * as Ids from "./Ids.js"
import * as Subject from "./Subject.js"
import * as Transport from "./Transport.js"

/** @since 0.1.0 @category models */
export interface StreamPublisherOptions {
  readonly prefix: Subject.Prefix
  /** How many messages wait for the transport at most (≥ 1); more are dropped and reported. */
  readonly queueSize?: number | undefined
}

/** @since 0.1.0 @category constants */
export const defaults = {
  queueSize: 4096,
  /** How long the drain waits before retrying a loss notice the transport refused. */
  retryMs: 100
} as const

/** The two sinks, sharing one queue and one drain. @since 0.1.0 @category models */
export interface StreamPublisherShape {
  readonly events: EventSink.EventSinkShape
  readonly profile: ProfileSink.ProfileSinkShape
  /** Messages waiting for the transport. */
  readonly pending: () => number
}

interface Pending {
  readonly session: Ids.SessionId
  readonly subject: Subject.Subject
  readonly payload: string
  /** How many messages are lost if this one is: a loss notice carries its own count. */
  readonly weight: number
}

const isSessionId = Schema.is(Ids.SessionId)
const droppedName = Ids.token("jit_events_dropped")

const eventMessage = (event: JitToolEvent.JitToolEvent): string => Envelope.encode("event", { event })

/**
 * Builds the publisher; it drains until the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: StreamPublisherOptions
): Effect.Effect<StreamPublisherShape, never, Scope.Scope | Transport.Transport> =>
  Effect.gen(function*() {
    const transport = yield* Transport.Transport
    const capacity = options.queueSize ?? defaults.queueSize
    if (!Number.isInteger(capacity) || capacity < 1) {
      return yield* Effect.dieMessage(`queueSize must be an integer ≥ 1, got ${capacity}`)
    }
    const prefix = options.prefix
    let queue: Array<Pending> = []
    const dropped = new Map<Ids.SessionId, number>()
    let immediate: ReturnType<typeof setImmediate> | undefined
    /** Set while a refused loss notice waits to be retried. */
    let retry: ReturnType<typeof setTimeout> | undefined
    let closed = false

    const signal = () => {
      if (immediate === undefined && retry === undefined && !closed) immediate = setImmediate(run)
    }

    const countLoss = (session: Ids.SessionId, count: number) => dropped.set(session, (dropped.get(session) ?? 0) + count)

    const notice = (session: Ids.SessionId, count: number): Pending => ({
      session,
      subject: Subject.events(prefix, session, droppedName),
      payload: eventMessage({ type: "CUSTOM", name: "jit_events_dropped", payload: { session_id: session, dropped: count } }),
      weight: count
    })

    const enqueue = (session: string, subject: (session: Ids.SessionId) => Subject.Subject, payload: () => string) => {
      if (!isSessionId(session)) return
      const lost = dropped.get(session)
      if (queue.length + (lost === undefined ? 1 : 2) > capacity) {
        countLoss(session, 1)
        return
      }
      if (lost !== undefined) {
        dropped.delete(session)
        queue.push(notice(session, lost))
      }
      queue.push({ session, subject: subject(session), payload: payload(), weight: 1 })
      signal()
    }

    const send = (message: Pending): boolean => {
      try {
        transport.publish(message.subject, message.payload)
        return true
      } catch {
        return false
      }
    }

    /** Publishes what is queued, then the loss notices of sessions with nothing more to send. */
    const drain = () => {
      const batch = queue
      queue = []
      for (const message of batch) {
        if (!send(message)) countLoss(message.session, message.weight)
      }
      for (const [session, count] of [...dropped]) {
        dropped.delete(session)
        if (!send(notice(session, count))) countLoss(session, count)
      }
    }

    // Drained once per turn of the event loop, with plain timers: an Effect fiber woken per call
    // costs more than the publishing itself.
    const run = () => {
      immediate = undefined
      retry = undefined
      drain()
      // A notice the transport refused is retried a little later, not in a tight loop.
      if (dropped.size > 0 && !closed) retry = setTimeout(run, defaults.retryMs)
    }

    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        if (immediate !== undefined) clearImmediate(immediate)
        if (retry !== undefined) clearTimeout(retry)
      })
    )

    return {
      events: {
        emit: (event) =>
          enqueue(
            event.payload.session_id,
            (session) => Subject.events(prefix, session, Ids.token(event.name)),
            () => eventMessage(event)
          )
      },
      profile: {
        record: (record) =>
          enqueue(record.session_id, (session) => Subject.profile(prefix, session), () => Envelope.encode("profile_record", { record }))
      },
      pending: () => queue.length
    }
  })

/**
 * The core's `EventSink` and `ProfileSink`, publishing on the transport: provide it to `Sessions`
 * (or `Harness.make`) so every session's events and records leave the process. Sinks already in
 * the context (an OpenTelemetry layer's) go on receiving everything, before the publisher.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: StreamPublisherOptions
): Layer.Layer<EventSink.EventSink | ProfileSink.ProfileSink, never, Transport.Transport> =>
  Layer.scopedContext(
    Effect.gen(function*() {
      const publisher = yield* make(options)
      const events = Option.getOrUndefined(yield* Effect.serviceOption(EventSink.EventSink))
      const profile = Option.getOrUndefined(yield* Effect.serviceOption(ProfileSink.ProfileSink))
      return Context.make(EventSink.EventSink, EventSink.combine(events, publisher.events)).pipe(
        Context.add(ProfileSink.ProfileSink, ProfileSink.combine(profile, publisher.profile))
      )
    })
  )
