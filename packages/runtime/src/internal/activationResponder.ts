/**
 * The `sessions.activate` responder: a remote caller that finds nobody serving
 * `session.<sid>.call` asks the hosts, in the `sessions` queue group, to activate the session; the
 * host that takes the request activates it and answers once it is active, or with why it cannot be.
 */
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

/** Serves `sessions.activate` until the scope closes, activating with `acquire`. */
export const serve = (
  transport: Transport.TransportShape,
  options: ActivationOptions,
  acquire: (sessionId: Ids.SessionId) => Promise<unknown>
): Effect.Effect<void, TransportError, Scope.Scope> =>
  transport.serve(
    Subject.sessionsActivate(options.prefix),
    { queue: options.queue, concurrency: 16, backlog: options.backlog, graceMs: options.graceMs },
    (request) => {
      const message = Envelope.decode(SessionProtocol.ActivateRequest, request.data, request.subject)
      if (Either.isLeft(message)) return Envelope.error(message.left)
      return acquire(message.right.session_id).then(
        () => Envelope.ok(),
        (thrown) => Envelope.error(WireError.fromThrown("activate", thrown))
      )
    }
  )
