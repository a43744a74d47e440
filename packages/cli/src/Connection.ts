/**
 * The options every `jitbox` command shares: where NATS is (`--server`, `JITBOX_SERVER`), how to
 * authenticate (`--creds`, `JITBOX_CREDS`: a NATS `.creds` file) and which namespace to serve
 * (`--namespace`, `JITBOX_NAMESPACE`, default `default`). A flag wins over its environment
 * variable; without either, the default applies.
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"
import type { HarnessError } from "@jitbox/core"
import { NatsConnection } from "@jitbox/nats"
import { Ids, Subject, type TransportError } from "@jitbox/runtime"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"

/** @since 0.1.0 @category constants */
export const defaults = {
  server: "nats://127.0.0.1:4222",
  namespace: "default"
} as const

/** @since 0.1.0 @category options */
export const server = Options.text("server").pipe(
  Options.withDescription(
    `NATS server URL(s), comma-separated (nats://host:4222,nats://other:4222); environment variable JITBOX_SERVER; default ${defaults.server}`
  ),
  Options.withDefault(defaults.server),
  Options.withFallbackConfig(Config.string("JITBOX_SERVER"))
)

/** @since 0.1.0 @category options */
export const creds = Options.file("creds").pipe(
  Options.withDescription("A NATS credentials file (.creds: user JWT and NKey seed); environment variable JITBOX_CREDS"),
  Options.withFallbackConfig(Config.string("JITBOX_CREDS")),
  Options.optional
)

/** @since 0.1.0 @category options */
export const namespace = Options.text("namespace").pipe(
  Options.withDescription(`The namespace served (subject-safe: letters, digits, _ and -); environment variable JITBOX_NAMESPACE; default ${defaults.namespace}`),
  Options.withDefault(defaults.namespace),
  Options.withFallbackConfig(Config.string("JITBOX_NAMESPACE"))
)

/** The shared options, to spread into a command's options. @since 0.1.0 @category options */
export const options = { server, creds, namespace } as const

/** What the shared options parse to. @since 0.1.0 @category models */
export interface ConnectionConfig {
  readonly server: string
  readonly creds: Option.Option<string>
  readonly namespace: string
}

/**
 * The options of the process's NATS connection for `config`; the connection is named `name` in
 * the server's monitoring.
 *
 * @since 0.1.0
 * @category constructors
 */
export const natsOptions = (config: ConnectionConfig, name: string): NatsConnection.NatsConnectionOptions => ({
  servers: config.server.split(",").map((url) => url.trim()).filter((url) => url !== ""),
  credentialsFile: Option.getOrUndefined(config.creds),
  name
})

/**
 * The process's one NATS connection for `config`, which its transport and KV services share.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  config: ConnectionConfig,
  name: string
): Layer.Layer<NatsConnection.NatsConnection, TransportError.TransportError> =>
  NatsConnection.layer(natsOptions(config, name))

/**
 * The namespace and its subject prefix; a name that is not a subject-safe token fails `ConfigError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const prefixOf = (
  config: ConnectionConfig
): Effect.Effect<{ readonly namespace: Ids.Namespace; readonly prefix: Subject.Prefix }, HarnessError.ConfigError> =>
  Effect.map(Ids.decode(Ids.Namespace, "namespace")(config.namespace), (namespace) => ({ namespace, prefix: Subject.prefix(namespace) }))
