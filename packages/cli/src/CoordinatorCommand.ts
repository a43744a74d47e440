/**
 * `jitbox coordinator --profiles <file.json>`: serves the root coordinator of a namespace
 * (`Coordinator` of @jitbox/runtime) under the host's execution profiles, read from a JSON file
 * `{ "profiles": [ { "name": …, "policy": { … }, "location": … } ] }`, with its ledger in the
 * JetStream KV bucket `jitbox-ledger-<namespace>` (`KvLedger`), so a restarted coordinator, or
 * one started on another machine, carries on with the budgets spent so far.
 *
 * A profiles file that cannot be read, is not JSON or holds a bad profile fails with the
 * `ConfigError` naming the problem, before anything connects.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import { HarnessError } from "@jitbox/core"
import { KvLedger, NatsConnection, NatsTransport } from "@jitbox/nats"
import { Coordinator, ExecutionProfile, Ids, type Ledger, type TransportError } from "@jitbox/runtime"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Connection from "./Connection.js"
import * as Health from "./Health.js"
import * as OperatorOptions from "./OperatorOptions.js"
import * as Serve from "./Serve.js"

/** @since 0.1.0 @category options */
export const profiles = Options.file("profiles").pipe(
  Options.withDescription(`The host's execution profiles: a JSON file { "profiles": [ { "name": "…", "policy": { … }, "location": "<pool>" } ] }`)
)

/**
 * The profiles of `path`; a `ConfigError` naming the field at fault otherwise.
 *
 * @since 0.1.0
 * @category constructors
 */
export const loadProfiles = (path: string): Effect.Effect<ReadonlyArray<ExecutionProfile.ExecutionProfile>, HarnessError.ConfigError> =>
  Effect.try({
    try: () => ExecutionProfile.fromFile(path),
    catch: (error) =>
      error instanceof HarnessError.ConfigError
        ? error
        : new HarnessError.ConfigError({ option: "profilesFile", detail: `${path}: ${String(error)}` })
  })

/** The coordinator's bounds, each with its `Coordinator` default when not given. @since 0.1.0 @category options */
export const bounds = {
  slotHold: OperatorOptions.duration(
    "slot-hold",
    `How long a lease keeps its concurrency slots without a renewal (default ${Coordinator.defaults.slotHoldMs / 1000}s): slots nobody renews go back to the profile`
  ).pipe(Options.optional),
  ledgerRetention: OperatorOptions.duration(
    "ledger-retention",
    "How long a session's ledger record outlives its ended lease (default 24h); a session admitted again within it keeps what it spent"
  ).pipe(Options.optional),
  maxWorkers: Options.integer("max-workers").pipe(
    Options.withDescription("Workers the capacity table keeps at most (default 256); a report of a new worker id beyond it is dropped"),
    Options.optional
  )
}

/** @since 0.1.0 @category options */
export const coordinatorId = Options.text("coordinator-id").pipe(
  Options.withDescription("This coordinator's id in NATS service discovery, as `jitbox status` and $SRV.INFO show it (letters, digits, _ and -); default: a fresh one; environment variable JITBOX_COORDINATOR_ID"),
  Options.withFallbackConfig(Config.string("JITBOX_COORDINATOR_ID")),
  Options.optional
)

/** What serving the coordinator can fail with. @since 0.1.0 @category errors */
export type CoordinatorCommandError = HarnessError.ConfigError | TransportError.TransportError | Ledger.LedgerError | Health.HealthServerError

/** @since 0.1.0 @category commands */
export const command = Command.make("coordinator", { ...Connection.options, profiles, coordinatorId, ...bounds, ...Health.options }, (config): Effect.Effect<never, CoordinatorCommandError> =>
  Serve.untilInterrupted(Effect.gen(function*() {
    const { namespace } = yield* Connection.prefixOf(config)
    const loaded = yield* loadProfiles(config.profiles)
    const id = Option.isSome(config.coordinatorId) ? yield* Ids.decode(Ids.Token, "--coordinator-id")(config.coordinatorId.value) : undefined
    const health = yield* Health.start(config, { command: "coordinator", namespace, principal: yield* Connection.principalOf(config) })
    const context = yield* Layer.build(
      Layer.merge(NatsTransport.layer, KvLedger.layer({ bucket: KvLedger.bucketOf(namespace) })).pipe(
        Layer.provideMerge(Connection.serving(config, `jitbox-coordinator-${namespace}`))
      )
    )
    yield* Coordinator.make({
      namespace,
      coordinatorId: id,
      profiles: loaded,
      slotHoldMs: Option.getOrUndefined(config.slotHold),
      ledgerRetentionMs: Option.getOrUndefined(config.ledgerRetention),
      maxWorkers: Option.getOrUndefined(config.maxWorkers)
    }).pipe(Effect.provide(context))
    yield* health.serving({
      connection: Context.get(context, NatsConnection.NatsConnection),
      serves: () => ({ profiles: loaded.map((profile) => profile.name) })
    })
    return `coordinator ${namespace}`
  }))).pipe(
  Command.withDescription("Serve the root coordinator of a namespace: admits sessions under the host's execution profiles, its ledger in NATS KV.")
)
