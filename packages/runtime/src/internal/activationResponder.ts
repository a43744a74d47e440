/**
 * The `sessions.activate` responder: a remote caller that finds nobody serving
 * `session.<sid>.call` asks the hosts, in the `sessions` queue group, to activate the session; the
 * host that takes the request activates it and answers once it is active, or with why it cannot be.
 * A request with `create: false` activates only a session the host knows (active, or stored).
 */
import { JitHarnessSnapshot } from "@jitbox/core"
import * as Either from "effect/Either"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Envelope from "../Envelope.js"
import type * as Ids from "../Ids.js"
import * as SessionProtocol from "../SessionProtocol.js"
import * as Subject from "../Subject.js"
import type * as Transport from "../Transport.js"
import type { TransportError } from "../TransportError.js"
import * as WireError from "../WireError.js"

export interface ActivationOptions {
  readonly prefix: Subject.Prefix
  readonly queue: string
  readonly backlog?: number | undefined
  readonly graceMs?: number | undefined
}

/** How a host activates a session, and tells whether it has one to activate (active, or stored). */
export interface Activator {
  readonly acquire: (sessionId: Ids.SessionId) => Promise<unknown>
  readonly known: (sessionId: Ids.SessionId) => Promise<boolean>
}

const notStored = (sessionId: Ids.SessionId) =>
  new JitHarnessSnapshot.SnapshotError({ reason: "NotFound", path: sessionId, detail: "no snapshot is stored for this session, and it is not active: it is not created without create" })

/** Activates the session, or with `create: false` only a known one. */
const activate = (activator: Activator, request: SessionProtocol.ActivateRequest): Promise<unknown> =>
  request.create === false
    ? activator.known(request.session_id).then((known) => known ? activator.acquire(request.session_id) : Promise.reject(notStored(request.session_id)))
    : activator.acquire(request.session_id)

/** Serves `sessions.activate` until the scope closes, activating with `activator`. */
export const serve = (
  transport: Transport.TransportShape,
  options: ActivationOptions,
  activator: Activator
): Effect.Effect<void, TransportError, Scope.Scope> =>
  transport.serve(
    Subject.sessionsActivate(options.prefix),
    { queue: options.queue, concurrency: 16, backlog: options.backlog, graceMs: options.graceMs },
    (request) => {
      const message = Envelope.decode(SessionProtocol.ActivateRequest, request.data, request.subject)
      if (Either.isLeft(message)) return Envelope.error(message.left)
      return activate(activator, message.right).then(
        () => Envelope.ok(),
        (thrown) => Envelope.error(WireError.fromThrown("activate", thrown))
      )
    }
  )
