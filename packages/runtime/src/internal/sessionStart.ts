/**
 * Starting one session of a host: a scope of its own, forked from the host's (so the host closes
 * it last, after it stops taking work), in which the session is built (claimed, admitted, its
 * actor activated); if building fails, the scope is closed with the failure, releasing whatever
 * was acquired. The scope is forked and closed on failure atomically; the build itself is
 * interruptible, so the runtime its harness captures (timers, fibers) can be interrupted.
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import type * as Ids from "../Ids.js"
import type * as SessionActor from "../SessionActor.js"
import type * as SnapshotStore from "../SnapshotStore.js"
import type * as Transport from "../Transport.js"
import type { Started } from "./sessionSlots.js"

/** Starts sessions in scopes forked from `hostScope`, building each with `build` in `context`. */
export const starter = (
  hostScope: Scope.Scope,
  context: Context.Context<Transport.Transport | SnapshotStore.SnapshotStore>,
  build: (
    sessionId: Ids.SessionId
  ) => Effect.Effect<SessionActor.SessionActor, SessionActor.ActivationError, Scope.Scope | Transport.Transport | SnapshotStore.SnapshotStore>
) =>
(sessionId: Ids.SessionId): Effect.Effect<Started, SessionActor.ActivationError> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const scope = yield* Scope.fork(hostScope, ExecutionStrategy.sequential)
      const exit = yield* restore(build(sessionId)).pipe(Scope.extend(scope), Effect.provide(context), Effect.exit)
      if (Exit.isFailure(exit)) {
        yield* Scope.close(scope, exit)
        return yield* Effect.failCause(exit.cause)
      }
      return { actor: exit.value, scope }
    })
  )
