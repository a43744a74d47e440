/**
 * `jitbox auth config`: prints the nats-server authorization of one namespace, a user per
 * principal (coordinator, operator, session hosts, applications, worker pools, pinned workers,
 * observers) allowed only what its role uses, for the server's configuration file. Passwords
 * stay out of the file: each user's is an environment variable the block names
 * (`$JITBOX_PASSWORD_<USER>`), which nats-server reads when it starts and the principal's command
 * is given as `--password` (or `JITBOX_PASSWORD`). `--json` prints the principals instead: user,
 * role, inbox prefix, password variable, and what each may publish and subscribe.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import { HarnessError } from "@jitbox/core"
import { Authorization } from "@jitbox/nats"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Connection from "./Connection.js"
import * as OperatorOptions from "./OperatorOptions.js"

const names = (name: string, description: string) =>
  Options.text(name).pipe(Options.withDescription(description), Options.repeated)

const options = {
  namespace: Connection.namespace,
  application: names("application", "An application principal (repeat for several; default app)"),
  sessionHost: names("session-host", "A session host principal (repeat for several; default sessions)"),
  pool: names("pool", "A worker pool, principal worker-<pool> (repeat for several; default default)"),
  node: names("node", "A pinned worker (a profile's sandboxNodeId), principal node-<id> (repeat for several)"),
  observer: names("observer", "An observer principal (repeat for several; default observer)"),
  catalogHostsApprove: Options.boolean("catalog-hosts-approve").pipe(
    Options.withDescription("Let session hosts approve and revoke catalog entries too (for jitbox sessions --catalog-approve-on-publish; default: only the operator)")
  ),
  jetstream: Options.boolean("jetstream").pipe(Options.withDescription("Print `jetstream {}` before the block (the coordinator's ledger and the hosts' buckets need it)")),
  json: OperatorOptions.json
}

const orDefault = (given: ReadonlyArray<string>): ReadonlyArray<string> | undefined => given.length === 0 ? undefined : given

const configCommand = Command.make("config", options, (config) =>
  Effect.gen(function*() {
    const request = {
      namespace: config.namespace,
      applications: orDefault(config.application),
      sessionHosts: orDefault(config.sessionHost),
      pools: orDefault(config.pool),
      nodes: config.node,
      observers: orDefault(config.observer),
      catalogHostsApprove: config.catalogHostsApprove,
      jetstream: config.jetstream
    }
    const text = yield* Effect.try({
      try: () => config.json ? JSON.stringify(Authorization.principals(request), null, 2) : Authorization.config(request),
      catch: (error) =>
        error instanceof HarnessError.ConfigError ? error : new HarnessError.ConfigError({ option: "--namespace", detail: String(error) })
    })
    yield* Console.log(text.trimEnd())
  })).pipe(Command.withDescription("Print the nats-server authorization of a namespace: one user per principal, each allowed only what its role uses"))

/** @since 0.1.0 @category commands */
export const command = Command.make("auth").pipe(
  Command.withDescription("What a namespace's NATS server must enforce"),
  Command.withSubcommands([configCommand])
)

/** @since 0.1.0 @category errors */
export type AuthCommandError = HarnessError.ConfigError
