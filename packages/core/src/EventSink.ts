/**
 * Where a harness's `jit_tool_*` events go besides its subscribers: a publisher on a subject, an
 * OpenTelemetry exporter. `emit` is called synchronously on the dispatch path with each event as
 * subscribers receive it; a sink must not block or throw (a throwing sink is ignored for that
 * event). A sink that queues and has to drop says so with a `jit_events_dropped` event of its own.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type { JitToolEvent } from "./JitToolEvent.js"

/** @since 0.1.0 @category models */
export interface EventSinkShape {
  readonly emit: (event: JitToolEvent) => void
}

/** @since 0.1.0 @category tags */
export class EventSink extends Context.Tag("@jitbox/core/EventSink")<EventSink, EventSinkShape>() {}

/** @since 0.1.0 @category layers */
export const layer = (sink: EventSinkShape): Layer.Layer<EventSink> => Layer.succeed(EventSink, sink)

/**
 * One sink that gives each event to `first` (when there is one), then to `second`; what `first`
 * throws does not keep it from `second`. For a layer that adds its sink to one already in the context.
 *
 * @since 0.1.0
 * @category combinators
 */
export const combine = (first: EventSinkShape | undefined, second: EventSinkShape): EventSinkShape =>
  first === undefined ? second : {
    emit: (event) => {
      try {
        first.emit(event)
      } catch {
        // a sink's failure is its own
      }
      second.emit(event)
    }
  }
