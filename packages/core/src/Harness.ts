/**
 * The harness as an Effect service: `Harness.layer(options)` builds one scoped `JitHarness`
 * (released when the scope closes), and the functions below are the Effect API over the same
 * dispatch path the Promise API uses. Tool failures arrive typed: harness errors as themselves,
 * anything a tool's own code threw as `ToolFailure`.
 *
 * The layer reads its seams from the context when they are provided: `CodeRunner`, `Admission`,
 * `HarnessClock` (else Effect's `Clock`, so `TestClock` drives deadlines), `ProfileSink` and
 * `EventSink`. A seam given in `options` wins over the context.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Admission from "./Admission.js"
import * as CodeRunner from "./CodeRunner.js"
import * as EventSink from "./EventSink.js"
import * as HarnessClock from "./HarnessClock.js"
import * as ProfileSink from "./ProfileSink.js"
import type * as Stream from "effect/Stream"
import type { SubscribeOptions } from "./EventFeed.js"
import { type HarnessError, isHarnessError, ToolFailure } from "./HarnessError.js"
import { JitHarness, type JitHarnessOptions } from "./JitHarness.js"
import type { JitHarnessProfile, ToolStats } from "./JitHarnessProfile.js"
import type { JitHarnessSnapshot } from "./JitHarnessSnapshot.js"
import type { JitToolEvent } from "./JitToolEvent.js"
import * as ThrownValue from "./ThrownValue.js"
import type { ToolErrorReport } from "./ToolErrorReport.js"
import type { CreateToolRequest, ToolAck, UpdateToolRequest } from "./ToolRequest.js"

/** @since 0.1.0 @category tags */
export class Harness extends Context.Tag("@jitbox/core/Harness")<Harness, JitHarness>() {}

/**
 * Builds a harness with the seams found in the context; a bad option fails with `ConfigError`.
 * With a `snapshot`, the harness activates it (await `ready`, SNAP-13).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: JitHarnessOptions = {}, snapshot?: JitHarnessSnapshot): Effect.Effect<JitHarness, HarnessError, never> =>
  Effect.gen(function*() {
    const runner = yield* Effect.serviceOption(CodeRunner.CodeRunner)
    const admission = yield* Effect.serviceOption(Admission.Admission)
    const harnessClock = yield* Effect.serviceOption(HarnessClock.HarnessClock)
    const profileSink = yield* Effect.serviceOption(ProfileSink.ProfileSink)
    const eventSink = yield* Effect.serviceOption(EventSink.EventSink)
    const clock = Option.isSome(harnessClock)
      ? harnessClock.value
      : HarnessClock.fromEffect(yield* Effect.clock, yield* Effect.runtime<never>())
    const seams: Record<string, unknown> = {}
    if (Option.isSome(runner) && options.runners === undefined) {
      seams.runners = [runner.value]
      if (options.codeExecution === undefined) seams.codeExecution = "sandboxed"
    }
    if (Option.isSome(admission) && options.admission === undefined && options.policy === undefined) seams.admission = admission.value
    if (options.clock === undefined) seams.clock = clock
    if (Option.isSome(profileSink) && options.profileSink === undefined) seams.profileSink = profileSink.value
    if (Option.isSome(eventSink) && options.eventSink === undefined) seams.eventSink = eventSink.value
    return yield* Effect.try({
      try: () => snapshot === undefined ? new JitHarness({ ...options, ...seams }) : new JitHarness(snapshot, { ...options, ...seams }),
      catch: (error) => error as HarnessError
    })
  })

/** A harness that lives as long as the scope; closing the scope releases it. @since 0.1.0 @category constructors */
export const makeScoped = (options: JitHarnessOptions = {}, snapshot?: JitHarnessSnapshot) =>
  Effect.acquireRelease(make(options, snapshot), (harness) => Effect.promise(() => harness.release()))

/** @since 0.1.0 @category layers */
export const layer = (options: JitHarnessOptions = {}): Layer.Layer<Harness, HarnessError> =>
  Layer.scoped(Harness, makeScoped(options))

const toError = (name: string) => (thrown: unknown): HarnessError | ToolFailure =>
  isHarnessError(thrown)
    ? thrown
    : new ToolFailure({ toolName: name, errorType: ThrownValue.errorType(thrown), detail: ThrownValue.message(thrown), cause: thrown })

const run = <A>(name: string, f: (harness: JitHarness, signal: AbortSignal) => Promise<A>) =>
  Effect.flatMap(Harness, (harness) => Effect.tryPromise({ try: (signal) => f(harness, signal), catch: toError(name) }))

/**
 * Calls a tool. Interrupting the effect cancels the call (its record says `cancelled`).
 *
 * @since 0.1.0
 * @category dispatch
 */
export const callTool = (name: string, args: unknown = {}, options: { readonly callId?: string } = {}) =>
  run(name, (harness, signal) => harness.callTool(name, args, { ...options, signal }))

/** @since 0.1.0 @category changes */
export const createTool = (request: CreateToolRequest): Effect.Effect<ToolAck, HarnessError | ToolFailure, Harness> =>
  run(request.name ?? request.entrypoint ?? "create_tool", (harness) => harness.createTool(request))

/** @since 0.1.0 @category changes */
export const updateTool = (request: UpdateToolRequest): Effect.Effect<ToolAck, HarnessError | ToolFailure, Harness> =>
  run(request.name, (harness) => harness.updateTool(request))

/** @since 0.1.0 @category changes */
export const unloadTool = (name: string): Effect.Effect<ToolAck, HarnessError | ToolFailure, Harness> =>
  run(name, (harness) => harness.unloadTool(name))

/** @since 0.1.0 @category changes */
export const loadTool = (name: string): Effect.Effect<ToolAck, HarnessError | ToolFailure, Harness> =>
  run(name, (harness) => harness.loadTool(name))

const read = <A>(f: (harness: JitHarness) => A): Effect.Effect<A, HarnessError, Harness> =>
  Effect.flatMap(Harness, (harness) => Effect.try({ try: () => f(harness), catch: (error) => error as HarnessError }))

/** @since 0.1.0 @category reading */
export const profile = (name?: string, options?: { readonly offset?: number; readonly limit?: number }): Effect.Effect<JitHarnessProfile, HarnessError, Harness> =>
  read((harness) => harness.profile(name, options))

/** @since 0.1.0 @category reading */
export const profileStats = (name: string): Effect.Effect<ToolStats, HarnessError, Harness> => read((harness) => harness.profileStats(name))

/** @since 0.1.0 @category reading */
export const toolErrors = (name?: string, options?: { readonly offset?: number; readonly limit?: number }): Effect.Effect<ToolErrorReport, HarnessError, Harness> =>
  read((harness) => harness.toolErrors(name, options))

/** The harness's `jit_tool_*` events as a Stream. @since 0.1.0 @category events */
export const events = (options?: SubscribeOptions): Effect.Effect<Stream.Stream<JitToolEvent>, never, Harness> =>
  Effect.map(Harness, (harness) => harness.events.stream(options))
