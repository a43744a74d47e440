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
import { KvLedger, NatsTransport } from "@jitbox/nats"
import { Coordinator, ExecutionProfile, type Ledger, type TransportError } from "@jitbox/runtime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Connection from "./Connection.js"
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

/** What serving the coordinator can fail with. @since 0.1.0 @category errors */
export type CoordinatorCommandError = HarnessError.ConfigError | TransportError.TransportError | Ledger.LedgerError

/** @since 0.1.0 @category commands */
export const command = Command.make("coordinator", { ...Connection.options, profiles }, (config): Effect.Effect<never, CoordinatorCommandError> =>
  Serve.untilInterrupted(Effect.gen(function*() {
    const { namespace } = yield* Connection.prefixOf(config)
    const loaded = yield* loadProfiles(config.profiles)
    const context = yield* Layer.build(
      Layer.merge(NatsTransport.layer, KvLedger.layer({ bucket: KvLedger.bucketOf(namespace) })).pipe(
        Layer.provide(Connection.serving(config, `jitbox-coordinator-${namespace}`))
      )
    )
    yield* Coordinator.make({ namespace, profiles: loaded }).pipe(Effect.provide(context))
    return `coordinator ${namespace}`
  }))).pipe(
  Command.withDescription("Serve the root coordinator of a namespace: admits sessions under the host's execution profiles, its ledger in NATS KV.")
)
