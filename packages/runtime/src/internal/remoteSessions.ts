/**
 * The sessions a `RemoteCodeRunner` serves its workers: while a session has activations, it serves
 * `session.<sid>.package` (its packages' chunks, `packageTransfer`) and `session.<sid>.nested`
 * (nested calls from its code, into the harness by the parent's call id, in the trace context the
 * request carried), both from one handler derived from `WorkerProtocol.session`, and listens to
 * its heartbeats (`heartbeats.watchdog`). Each session's subjects live in a scope of their own,
 * closed when its last activation is forgotten; serving a session again waits until its previous
 * scope has closed, so two responders never answer one session.
 */
import { type CodeRunner, HarnessError } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"
import type * as Ids from "../Ids.js"
import * as Protocol from "../Protocol.js"
import * as Subject from "../Subject.js"
import type * as TraceContext from "../TraceContext.js"
import * as Transport from "../Transport.js"
import { TransportError } from "../TransportError.js"
import * as WorkerProtocol from "../WorkerProtocol.js"
import { Capabilities } from "./capabilities.js"
import type * as Heartbeats from "./heartbeats.js"
import { Packages } from "./packageTransfer.js"

/** One served session. */
export interface ServedSession {
  /** The harness the nested calls go into (the latest to activate). */
  host: CodeRunner.CallHost
  readonly packages: Packages
  /** What its workers may fetch and call back as (`capabilities`). */
  readonly capabilities: Capabilities
  readonly activations: Set<string>
  /** Resolves once its subjects are served. */
  readonly serving: Promise<void>
}

export interface RemoteSessions {
  /** The session, served from now on if it was not. */
  readonly open: (sessionId: Ids.SessionId, host: CodeRunner.CallHost) => ServedSession
  readonly get: (sessionId: Ids.SessionId) => ServedSession | undefined
  /** Stops serving the session (its last activation was forgotten). */
  readonly close: (sessionId: Ids.SessionId) => void
}

export interface Options {
  readonly prefix: Subject.Prefix
  readonly nestedConcurrency: number
  readonly trace: TraceContext.TraceContextShape
  readonly watchdog: Heartbeats.Watchdog
}

const kindOf = (subject: string): string => subject.endsWith(".package") ? "package" : "nested"

/** A fetch without the capability of the version: answered as a version that is not here, which it is not for the asker. */
const noPackage = (versionId: string, subject: string) =>
  new TransportError({ reason: "InvalidArgument", subject, detail: `no package version ${versionId} here for this capability` })

/** A nested call without the capability of the call it names: answered as a call that is not running. */
const notRunning = (name: string, parentCallId: string) =>
  new HarnessError.ToolRejected({
    name,
    reason: "NoActiveInvocation",
    detail: `no running call '${parentCallId}' holds this capability: a nested call acts only as the invocation it was sent with`
  })

/** The sessions served, each until it is closed or the scope closes. */
export const make = (options: Options): Effect.Effect<RemoteSessions, never, Scope.Scope | Transport.Transport> =>
  Effect.gen(function*() {
    const transport = yield* Transport.Transport
    const run = Runtime.runPromise(yield* Effect.runtime<Transport.Transport>())
    const outer = yield* Effect.scope
    const sessions = new Map<Ids.SessionId, ServedSession & { readonly scope: Scope.CloseableScope }>()
    /** Sessions whose subjects are being given up: serving them again waits. */
    const closing = new Map<Ids.SessionId, Promise<void>>()

    const handler = (entry: ServedSession) =>
      Protocol.serve(WorkerProtocol.session, {
        package: ({ capability, chunk, versionId }, request) => {
          if (!entry.capabilities.allowsPackage(capability, versionId)) throw noPackage(versionId, request!.subject)
          return entry.packages.chunk(versionId, chunk, transport.maxPayload(), request!.subject)
        },
        nested: ({ args, capability, name, parentCallId }, request) => {
          if (!entry.capabilities.allowsCall(capability, parentCallId)) throw notRunning(name, parentCallId)
          return options.trace.incoming(entry.host.sessionId, request!.headers, () => entry.host.callTool(parentCallId, name, args ?? {}))
        }
      }, { kindOf })

    const open = (sessionId: Ids.SessionId, host: CodeRunner.CallHost): ServedSession => {
      const found = sessions.get(sessionId)
      if (found !== undefined) {
        found.host = host
        return found
      }
      const scope = Effect.runSync(Scope.fork(outer, ExecutionStrategy.sequential))
      const entry = {
        host,
        packages: new Packages(),
        capabilities: new Capabilities(),
        activations: new Set<string>(),
        scope,
        serving: undefined as unknown as Promise<void>
      }
      const serve = Effect.all([
        options.watchdog.listen(sessionId),
        transport.serve(Subject.sessionPackage(options.prefix, sessionId), { concurrency: 8 }, handler(entry)),
        transport.serve(Subject.sessionNested(options.prefix, sessionId), { concurrency: options.nestedConcurrency }, handler(entry))
      ])
      const previous = closing.get(sessionId) ?? Promise.resolve()
      ;(entry as { serving: Promise<void> }).serving = previous.then(() => run(Scope.extend(serve, scope))).then(() => undefined)
      sessions.set(sessionId, entry)
      return entry
    }

    const close = (sessionId: Ids.SessionId): void => {
      const entry = sessions.get(sessionId)
      if (entry === undefined) return
      sessions.delete(sessionId)
      const closed = run(Scope.close(entry.scope, Exit.void))
      closing.set(sessionId, closed)
      void closed.then(() => {
        if (closing.get(sessionId) === closed) closing.delete(sessionId)
      })
    }

    return { open, get: (sessionId) => sessions.get(sessionId), close }
  })
