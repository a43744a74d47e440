/**
 * The root coordinator of a namespace as seen from a session's process or a worker: its
 * operations (`CoordinatorProtocol.operations`) as Effects failing with `CoordinatorError`,
 * derived from the table, each sent on `coordinator.<principal>.<op>` (the client's own principal,
 * `default` when none is given) and answered within `timeoutMs`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as CoordinatorProtocol from "./CoordinatorProtocol.js"
import * as Ids from "./Ids.js"
import * as Protocol from "./Protocol.js"
import * as Subject from "./Subject.js"
import * as Transport from "./Transport.js"
import { noCoordinator } from "./internal/missingServers.js"

/** @since 0.1.0 @category models */
export type CoordinatorClient = Protocol.EffectFacade<CoordinatorProtocol.Operations, CoordinatorProtocol.CoordinatorError>

/** Where a coordinator is: its namespace (and subject root), or the subject prefix itself. @since 0.1.0 @category models */
export type Address =
  | { readonly namespace: Ids.Namespace; readonly subjectRoot?: string | undefined }
  | { readonly prefix: Subject.Prefix }

/**
 * Who the client asks as: the NATS user it connects as (`jitbox auth config` lets each user
 * publish only its own principal's coordinator subjects). Absent: `default`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Asker {
  readonly principal?: string | undefined
}

/** @since 0.1.0 @category constants */
export const defaults = { timeoutMs: 10_000 } as const

/**
 * The principal of `asker`, checked as a subject token (`ConfigError` naming `principal`).
 *
 * @since 0.1.0
 * @category accessors
 */
export const principalOf = (asker: Asker): Ids.Principal =>
  asker.principal === undefined ? Ids.defaultPrincipal : Ids.principal(asker.principal)

const prefixOf = (address: Address): Subject.Prefix =>
  "prefix" in address ? address.prefix : Subject.prefix(address.namespace, address.subjectRoot)

const isFailure = Schema.is(CoordinatorProtocol.CoordinatorError)

/**
 * The coordinator at `address`, asked as `principal`, on the transport in the context. A bad
 * principal throws `ConfigError` naming `principal`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: Address & Asker & { readonly timeoutMs?: number | undefined }
): Effect.Effect<CoordinatorClient, never, Transport.Transport> =>
  Effect.map(Transport.Transport, (transport) => {
    const prefix = prefixOf(options)
    const principal = principalOf(options)
    const timeoutMs = options.timeoutMs ?? defaults.timeoutMs
    const subjects = new Map(CoordinatorProtocol.kinds.map((kind) => [kind as string, Subject.coordinator(prefix, principal, Ids.token(kind))]))
    const subjectOf = (kind: string) => subjects.get(kind)!
    const namespace = Subject.namespaceOf(prefix)
    const invoke = Protocol.client(CoordinatorProtocol.operations, subjectOf, (kind, payload) =>
      transport.request(subjectOf(kind), payload, { timeoutMs }).catch((error: unknown) => {
        throw noCoordinator(error, namespace)
      }))
    return Protocol.effectFacade(CoordinatorProtocol.operations, invoke, isFailure)
  })
