/**
 * Where finished profile records go besides the harness's own window: a publisher on a subject,
 * an OpenTelemetry exporter, a log. `record` is called synchronously on the dispatch path, once
 * per finished attempt, after the harness recorded it; a sink that needs to do I/O queues the
 * record and returns (it must not throw: a throwing sink is ignored for that record).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type { ProfileRecord } from "./JitHarnessProfile.js"

/** A finished attempt with the ids that place it. @since 0.1.0 @category models */
export interface SessionProfileRecord extends ProfileRecord {
  readonly session_id: string
  /** The call that composed this one, or `null`. */
  readonly parent_call_id: string | null
  readonly depth: number
}

/** @since 0.1.0 @category models */
export interface ProfileSinkShape {
  readonly record: (record: SessionProfileRecord) => void
}

/** @since 0.1.0 @category tags */
export class ProfileSink extends Context.Tag("@jitbox/core/ProfileSink")<ProfileSink, ProfileSinkShape>() {}

/** @since 0.1.0 @category layers */
export const layer = (sink: ProfileSinkShape): Layer.Layer<ProfileSink> => Layer.succeed(ProfileSink, sink)

/**
 * One sink that gives each record to `first` (when there is one), then to `second`; what `first`
 * throws does not keep it from `second`. For a layer that adds its sink to one already in the context.
 *
 * @since 0.1.0
 * @category combinators
 */
export const combine = (first: ProfileSinkShape | undefined, second: ProfileSinkShape): ProfileSinkShape =>
  first === undefined ? second : {
    record: (record) => {
      try {
        first.record(record)
      } catch {
        // a sink's failure is its own
      }
      second.record(record)
    }
  }
