/**
 * Heartbeats, both ends of `session.<sid>.heartbeat`:
 *
 * - the worker's `sender`: every `intervalMs` it tells each session which of its calls run here;
 * - the session's `watchdog`: it remembers when it last heard of each invocation in flight (a
 *   heartbeat naming it, or the invocation sent again), and one loop, every `intervalMs`, fails
 *   those not heard of for `misses` intervals `WorkerLost` (their `lost` signal aborts with it).
 *
 * Both loops are fibers on the context's `Clock` (`Schedule.spaced`), forked in the scope, so a
 * test drives them with `TestClock`.
 */
import * as Either from "effect/Either"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Envelope from "../Envelope.js"
import type * as Ids from "../Ids.js"
import * as Subject from "../Subject.js"
import * as Transport from "../Transport.js"
import { RemoteExecutionError } from "../RemoteExecutionError.js"
import { TransportError } from "../TransportError.js"
import * as WorkerProtocol from "../WorkerProtocol.js"

const encodeHeartbeat = Schema.encodeSync(WorkerProtocol.Heartbeat)

/** Publishes the calls of each session every `intervalMs`, until the scope closes. */
export const sender = (options: {
  readonly prefix: Subject.Prefix
  readonly workerId: Ids.WorkerId
  readonly intervalMs: number
  readonly calls: () => ReadonlyMap<Ids.SessionId, ReadonlyArray<string>>
}): Effect.Effect<void, never, Scope.Scope | Transport.Transport> =>
  Effect.gen(function*() {
    const transport = yield* Transport.Transport
    const beat = Effect.sync(() => {
      for (const [sessionId, callIds] of options.calls()) {
        try {
          const message = encodeHeartbeat({ v: Envelope.version, kind: "heartbeat", workerId: options.workerId, callIds })
          transport.publish(Subject.sessionHeartbeat(options.prefix, sessionId), JSON.stringify(message))
        } catch {
          // the transport is closing: the sessions will notice the silence
        }
      }
    })
    yield* Effect.forkScoped(Effect.interruptible(Effect.repeat(beat, Schedule.spaced(options.intervalMs))))
  })

/** One invocation in flight, as the watchdog sees it. */
export interface Watched {
  lastHeard: number
  /** Aborts with `WorkerLost` when the worker goes silent (or with the caller's reason). */
  readonly lost: AbortController
  readonly sessionId: Ids.SessionId
  readonly toolName: string
  readonly callId: string
  readonly subject: Subject.Subject
}

export interface Watchdog {
  /** Watches an invocation until `unwatch`. */
  readonly watch: (sessionId: Ids.SessionId, callId: string, toolName: string, subject: Subject.Subject) => Watched
  readonly unwatch: (watched: Watched) => void
  /** The invocation was heard of now (it is being sent again). */
  readonly heard: (watched: Watched) => void
  /** Listens to the heartbeats of `sessionId` until the scope closes. */
  readonly listen: (sessionId: Ids.SessionId) => Effect.Effect<void, TransportError, Scope.Scope>
}

/** The session's watchdog; its loop runs until the scope closes. */
export const watchdog = (options: {
  readonly prefix: Subject.Prefix
  readonly intervalMs: number
  readonly misses: number
}): Effect.Effect<Watchdog, never, Scope.Scope | Transport.Transport> =>
  Effect.gen(function*() {
    const transport = yield* Transport.Transport
    const clock = yield* Effect.clock
    const now = () => clock.unsafeCurrentTimeMillis()
    const lostAfterMs = options.intervalMs * options.misses
    /** Invocations in flight, by session and call id. */
    const inflight = new Map<Ids.SessionId, Map<string, Watched>>()

    const sweep = Effect.sync(() => {
      const t = now()
      for (const calls of inflight.values()) {
        for (const watched of calls.values()) {
          if (t - watched.lastHeard <= lostAfterMs || watched.lost.signal.aborted) continue
          watched.lost.abort(
            new RemoteExecutionError({
              reason: "WorkerLost",
              subject: watched.subject,
              toolName: watched.toolName,
              callId: watched.callId,
              detail: `no heartbeat in ${lostAfterMs} ms: the worker died or lost its connection`
            })
          )
        }
      }
    })
    yield* Effect.forkScoped(Effect.interruptible(Effect.repeat(sweep, Schedule.spaced(options.intervalMs))))

    const watch: Watchdog["watch"] = (sessionId, callId, toolName, subject) => {
      const watched: Watched = { lastHeard: now(), lost: new AbortController(), sessionId, toolName, callId, subject }
      let calls = inflight.get(sessionId)
      if (calls === undefined) inflight.set(sessionId, calls = new Map())
      calls.set(callId, watched)
      return watched
    }
    const unwatch: Watchdog["unwatch"] = (watched) => {
      const calls = inflight.get(watched.sessionId)
      if (calls?.get(watched.callId) !== watched) return
      calls.delete(watched.callId)
      if (calls.size === 0) inflight.delete(watched.sessionId)
    }
    const listen: Watchdog["listen"] = (sessionId) =>
      Effect.flatMap(transport.subscribe(Subject.sessionHeartbeat(options.prefix, sessionId)), (stream) =>
        Effect.forkScoped(Effect.ignore(Stream.runForEach(stream, (message) =>
          Effect.sync(() => {
            const decoded = Envelope.decode(WorkerProtocol.Heartbeat, message.data, message.subject)
            if (Either.isLeft(decoded)) return
            const beat = decoded.right
            const calls = inflight.get(sessionId)
            if (calls === undefined) return
            const t = now()
            for (const callId of beat.callIds) {
              const watched = calls.get(callId)
              if (watched !== undefined) watched.lastHeard = t
            }
          })))))
    return { watch, unwatch, heard: (watched) => watched.lastHeard = now(), listen }
  })
