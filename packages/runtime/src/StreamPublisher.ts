/**
 * Publishes what every harness in its context emits: each turn of the event loop, a session's
 * `jit_tool_*` events leave as one batch on `events.<sid>` and its finished attempts' profile
 * records as one batch on `profile.<sid>` (`StreamProtocol`):
 *
 *     {"v":2,"kind":"events","events":[{"type":"CUSTOM","name":"jit_tool_started","payload":{…}},…]}
 *     {"v":2,"kind":"records","records":[{"call_id":"…","tool_name":"add",…,"session_id":"s1","parent_call_id":null,"depth":0},…]}
 *
 * Publishing never blocks dispatch: the core's sinks are called synchronously on the dispatch
 * path, so they only append to a bounded queue, which is drained to the `Transport` once per turn
 * of the event loop until the layer's scope closes. When the queue is full an item is dropped and
 * counted per session; the loss is published in-band as a `jit_events_dropped` event (with the
 * count) in that session's events before its next event, or by the drain once the queue has room.
 * A publish the transport refuses (closed, reconnecting) counts as a loss of its batch's items the
 * same way. A record or event whose session id cannot be a subject token is not published.
 *
 * @since 0.1.0
 */
import { EventSink, ProfileSink } from "@jitbox/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as StreamProtocol from "./StreamProtocol.js"
import type * as Subject from "./Subject.js"
import * as Transport from "./Transport.js"
import { PublishQueue } from "./internal/publishQueue.js"

/** @since 0.1.0 @category models */
export interface StreamPublisherOptions {
  readonly prefix: Subject.Prefix
  /** How many events and records wait for the transport at most (≥ 1); more are dropped and reported. */
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
  /** Events and records waiting for the transport. */
  readonly pending: () => number
}

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
    const queue = new PublishQueue(transport, options.prefix, capacity, defaults.retryMs)
    yield* Effect.addFinalizer(() => Effect.sync(() => queue.close()))

    return {
      events: {
        emit: (event) =>
          queue.enqueue("events", event.payload.session_id, () => StreamProtocol.eventItem(event))
      },
      profile: {
        record: (record) =>
          queue.enqueue("records", record.session_id, () => JSON.stringify(record))
      },
      pending: () => queue.pending
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
