/**
 * The two CUSTOM events of the harness (EVT-01, EVT-06): deliberately small, never arguments,
 * results or messages. `tool_call_id` equals the profile record's `call_id`, except for a change
 * made through the application API, which emits the management tool's pair without being a call.
 * A feed that had to drop events says so with `jit_events_dropped` before the next event it delivers.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

const Origin = Schema.Literal("code", "text", "management")

/** @since 0.1.0 @category schemas */
export const JitToolStarted = Schema.Struct({
  type: Schema.Literal("CUSTOM"),
  name: Schema.Literal("jit_tool_started"),
  payload: Schema.Struct({
    session_id: Schema.String,
    tool_call_id: Schema.String,
    tool_name: Schema.String,
    origin: Origin
  })
})

/** @since 0.1.0 @category schemas */
export const JitToolCompleted = Schema.Struct({
  type: Schema.Literal("CUSTOM"),
  name: Schema.Literal("jit_tool_completed"),
  payload: Schema.Struct({
    session_id: Schema.String,
    tool_call_id: Schema.String,
    tool_name: Schema.String,
    origin: Origin,
    success: Schema.Boolean,
    error_type: Schema.NullOr(Schema.String)
  })
})

/** @since 0.1.0 @category schemas */
export const JitEventsDropped = Schema.Struct({
  type: Schema.Literal("CUSTOM"),
  name: Schema.Literal("jit_events_dropped"),
  payload: Schema.Struct({ session_id: Schema.String, dropped: Schema.Int.pipe(Schema.positive()) })
})

/**
 * A catalog version this session holds (its tool's current version) was revoked: the tool keeps
 * working as loaded; the catalog no longer offers the version for new loads.
 *
 * @since 0.1.0
 * @category schemas
 */
export const JitCatalogRevoked = Schema.Struct({
  type: Schema.Literal("CUSTOM"),
  name: Schema.Literal("jit_catalog_revoked"),
  payload: Schema.Struct({ session_id: Schema.String, tool_name: Schema.String, version_id: Schema.String, revoked_by: Schema.String })
})

/** @since 0.1.0 @category schemas */
export const JitToolEvent = Schema.Union(JitToolStarted, JitToolCompleted, JitEventsDropped, JitCatalogRevoked)

/** @since 0.1.0 @category models */
export type JitToolEvent = Schema.Schema.Type<typeof JitToolEvent>

/** @since 0.1.0 @category models */
export type JitToolStarted = Schema.Schema.Type<typeof JitToolStarted>

/** @since 0.1.0 @category models */
export type JitToolCompleted = Schema.Schema.Type<typeof JitToolCompleted>
