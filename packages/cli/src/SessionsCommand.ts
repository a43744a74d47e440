/**
 * `jitbox sessions`: hosts sessions (`Sessions` of @jitbox/runtime) for remote callers. A
 * `RemoteSession` anywhere on the namespace that finds nobody serving its session asks the hosts
 * (`sessions.activate`, one queue group) and one of them activates it here from the snapshot
 * store. Code tools run on the workers of `--pool` (`RemoteCodeRunner`), never in this process.
 *
 * `--store` says where the sessions' snapshots are kept: `kv`, the namespace's JetStream KV
 * snapshot store on the connected server (`KvSnapshotStore`, bucket `jitbox-snapshots-<namespace>`,
 * with history), so every host of the namespace can take a session over; a directory, JSON files
 * in it (`SnapshotStore.layerFile`), shared by the hosts that share the directory; or `memory`
 * (the default), this process's memory, gone with it. A session idle for `--idle-timeout` is stored and
 * released (one activated and never used, after 30 s). At most `--max-sessions` (or
 * `JITBOX_MAX_SESSIONS`, default 1 000) are active at once: one more passivates the least recently
 * used idle session first, and is refused `TransportError` `Busy` when every session is busy. Each host claims a session (a JetStream KV record per session, `KvSessionOwnership`)
 * before it activates it, so a session is active in one host at a time, and every session's events
 * and profile records are published (`StreamPublisher`).
 *
 * With `--profile <name>` each session is admitted by the namespace's coordinator under that
 * execution profile when it activates, and spends the budgets the coordinator leases; without
 * `--deployment-consent` (JT-CFG-05) such a session runs no model-written code. Workers run code
 * only for admitted sessions unless they are started with `--no-admission`.
 *
 * Every session's harness is given the namespace's shared tool catalog (`KvCatalog`, bucket
 * `jitbox-catalog-<namespace>`, created if missing): what its session publishes other sessions of
 * the namespace load once the operator approves it (`jitbox catalog`); whether the model sees the
 * catalog's tools is the session's policy's to say. `--no-catalog` hosts sessions without it;
 * `--catalog-approve-on-publish` approves what is published as it is (the host's principal must
 * be allowed to write reviews: `jitbox auth config --catalog-hosts-approve`).
 *
 * With `--otlp URL` (or OTEL_EXPORTER_OTLP_ENDPOINT) it exports a span per tool call and the call
 * and lease metrics as service `jitbox-sessions` (`Telemetry`); a call that runs on a worker
 * carries its trace context there, so the worker's spans join the same trace.
 *
 * @since 0.1.0
 */
import { Command, HelpDoc, Options } from "@effect/cli"
import { type HarnessError, type JitHarnessSnapshot, JitPolicy, SharedCatalog } from "@jitbox/core"
import { KvCatalog, KvSessionOwnership, KvSnapshotStore, NatsConnection, NatsTransport } from "@jitbox/nats"
import { Ids, RemoteCodeRunner, type SessionOwnership, Sessions, SnapshotStore, StreamPublisher, type TransportError } from "@jitbox/runtime"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Connection from "./Connection.js"
import * as Health from "./Health.js"
import * as ProfileCheck from "./ProfileCheck.js"
import * as Serve from "./Serve.js"
import * as Telemetry from "./Telemetry.js"

const units: Record<string, Duration.Unit> = { ms: "millis", s: "seconds", m: "minutes", h: "hours" }

/**
 * A duration written `500ms`, `30s`, `5m` or `1h` (or as Effect writes it: `5 minutes`); throws
 * naming the option otherwise.
 *
 * @since 0.1.0
 * @category constructors
 */
export const parseDuration = (text: string, flag = "--idle-timeout"): Duration.Duration => {
  const short = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/.exec(text.trim())
  const decoded = short === null
    ? Duration.decodeUnknown(text.trim())
    : Option.some(Duration.decode(`${Number(short[1])} ${units[short[2]!]!}` as Duration.DurationInput))
  if (Option.isNone(decoded) || !Duration.greaterThan(decoded.value, Duration.zero)) {
    throw new Error(`${flag}: expected a duration such as 30s, 5m or 1h, got '${text}'`)
  }
  return decoded.value
}

/**
 * How long a session's claim lives unless renewed (renewed every third of it): a host that dies
 * loses its sessions to another host this long after at most.
 *
 * @since 0.1.0
 * @category options
 */
export const claimTtl = Options.text("claim-ttl").pipe(
  Options.withDescription("How long a host's claim on a session lives unless renewed (every third of it); another host takes the sessions of a dead host over after it (default 4s; keep it well above the clock skew between hosts)"),
  Options.withFallbackConfig(Config.string("JITBOX_CLAIM_TTL")),
  Options.withDefault("4s"),
  Options.mapTryCatch((text) => Duration.toMillis(parseDuration(text, "--claim-ttl")), (error) => HelpDoc.p(error instanceof Error ? error.message : String(error)))
)

/** Where a host keeps its sessions' snapshots. @since 0.1.0 @category models */
export type StoreChoice =
  | { readonly _tag: "Kv" }
  | { readonly _tag: "Memory" }
  | { readonly _tag: "Directory"; readonly directory: string }

/**
 * `--store`'s value: `kv`, `memory`, or any other text a directory (`./kv` for a directory named kv).
 *
 * @since 0.1.0
 * @category constructors
 */
export const parseStore = (text: string): StoreChoice => {
  if (text === "kv") return { _tag: "Kv" }
  if (text === "memory") return { _tag: "Memory" }
  if (text.trim() === "") throw new Error("--store: expected kv, memory or a directory, got ''")
  return { _tag: "Directory", directory: text }
}

/** @since 0.1.0 @category options */
export const store = Options.text("store").pipe(
  Options.withDescription(
    "Where the sessions' snapshots are kept: kv (the namespace's JetStream KV snapshot store on the connected server, bucket jitbox-snapshots-<namespace>), " +
      "memory (this process's, gone with it) or a directory (JSON files, created if missing; ./kv for a directory named kv); default memory"
  ),
  Options.withDefault("memory"),
  Options.mapTryCatch(parseStore, (error) => HelpDoc.p(error instanceof Error ? error.message : String(error)))
)

/** The snapshot store layer of a `--store` choice (the KV one on the host's NATS connection). */
const snapshotStoreOf = (choice: StoreChoice, namespace: string) => {
  switch (choice._tag) {
    case "Kv":
      return KvSnapshotStore.layer({ namespace })
    case "Memory":
      return SnapshotStore.layerMemory()
    case "Directory":
      return SnapshotStore.layerFile({ directory: choice.directory })
  }
}

/** @since 0.1.0 @category options */
export const pool = Options.text("pool").pipe(
  Options.withDescription(`The worker pool the sessions' code tools run on (default ${RemoteCodeRunner.defaults.pool})`),
  Options.withDefault(RemoteCodeRunner.defaults.pool)
)

/** @since 0.1.0 @category options */
export const idleTimeout = Options.text("idle-timeout").pipe(
  Options.withDescription("How long a session may be idle before it is stored and released: 500ms, 30s, 5m, 1h (default 5m)"),
  Options.withDefault("5m"),
  Options.mapTryCatch(parseDuration, (error) => HelpDoc.p(error instanceof Error ? error.message : String(error)))
)

/** @since 0.1.0 @category options */
export const maxSessions = Options.integer("max-sessions").pipe(
  Options.withDescription(
    `The most sessions active in this host at once (environment variable JITBOX_MAX_SESSIONS; default ${Sessions.defaults.maxActiveSessions}): ` +
      "one more passivates the least recently used idle session first, and is refused Busy when every session is busy"
  ),
  Options.withFallbackConfig(Config.integer("JITBOX_MAX_SESSIONS")),
  Options.withDefault(Sessions.defaults.maxActiveSessions)
)

/** @since 0.1.0 @category options */
export const profile = Options.text("profile").pipe(
  Options.withDescription("Admit each session with the namespace's coordinator under this execution profile"),
  Options.optional
)

/** @since 0.1.0 @category options */
export const deploymentConsent = Options.boolean("deployment-consent").pipe(
  Options.withDescription("The application consents to running model-written code on workers (JT-CFG-05); needs --profile")
)

/**
 * A request policy written as JSON (`{"allowedLanguages":["JavaScript"]}`); throws naming the option otherwise.
 *
 * @since 0.1.0
 * @category constructors
 */
export const parsePolicy = (text: string): JitPolicy.JitPolicyInput => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new Error(`--policy: expected a JSON object such as {"allowedLanguages":["JavaScript"]}, got '${text.slice(0, 200)}'`)
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("--policy: expected a JSON object")
  try {
    JitPolicy.make(parsed as JitPolicy.JitPolicyInput)
  } catch (error) {
    throw new Error(`--policy: ${error instanceof Error ? error.message : String(error)}`)
  }
  return parsed as JitPolicy.JitPolicyInput
}

/** @since 0.1.0 @category options */
export const policy = Options.text("policy").pipe(
  Options.withDescription("The sessions' request policy as JSON: it narrows --profile (fields left out are the profile's own; without --profile, the policy defaults); asking for more than the profile fails at start"),
  Options.mapTryCatch(parsePolicy, (error) => HelpDoc.p(error instanceof Error ? error.message : String(error))),
  Options.optional
)

/** @since 0.1.0 @category options */
export const noCatalog = Options.boolean("no-catalog").pipe(
  Options.withDescription("Host the sessions without the namespace's shared tool catalog (by default each session publishes to and loads from KvCatalog, bucket jitbox-catalog-<namespace>)")
)

/** @since 0.1.0 @category options */
export const catalogApproveOnPublish = Options.boolean("catalog-approve-on-publish").pipe(
  Options.withDescription("Approve what the sessions publish to the catalog as they publish it (the host's principal must be allowed to write reviews: jitbox auth config --catalog-hosts-approve)")
)

/** The namespace's catalog on the host's connection, unless `--no-catalog`. */
const catalogOf = (config: { readonly noCatalog: boolean; readonly catalogApproveOnPublish: boolean }, namespace: string, connection: NatsConnection.NatsConnectionShape) =>
  config.noCatalog
    ? Effect.succeed({})
    : KvCatalog.fromConnection(connection.nc, { namespace, approveOnPublish: config.catalogApproveOnPublish }).pipe(
      Effect.mapError((error) => error.reason === "NoCatalog" ? new SharedCatalog.CatalogError({ name: error.name, reason: error.reason, detail: `${error.detail} (start with --no-catalog to host sessions without it)` }) : error),
      Effect.map((catalog) => ({ catalog }))
    )

/** What serving sessions can fail with. @since 0.1.0 @category errors */
export type SessionsCommandError =
  | HarnessError.ConfigError
  | TransportError.TransportError
  | JitHarnessSnapshot.SnapshotError
  | SessionOwnership.OwnershipError
  | Health.HealthServerError
  | SharedCatalog.CatalogError

/** @since 0.1.0 @category commands */
export const command = Command.make("sessions", { ...Connection.options, store, pool, idleTimeout, claimTtl, maxSessions, profile, deploymentConsent, policy, noCatalog, catalogApproveOnPublish, otlp: Telemetry.otlp, ...Health.options }, (config): Effect.Effect<never, SessionsCommandError> =>
  Serve.untilInterrupted(Effect.gen(function*() {
    const { namespace, prefix } = yield* Connection.prefixOf(config)
    yield* Ids.decode(Ids.PoolName, "--pool")(config.pool)
    const principal = yield* Connection.principalOf(config)
    const health = yield* Health.start(config, { command: "sessions", namespace, principal })
    // first in the scope, so shut down (flushing every span) after the sessions are released
    const telemetry = yield* Telemetry.install(config.otlp, "jitbox-sessions")
    const snapshots = snapshotStoreOf(config.store, namespace)
    // every host of the namespace claims a session before it activates it, so one session is active in one host at a time
    const ownership = KvSessionOwnership.layer({ namespace, ttlMs: Math.round(config.claimTtl) })
    const context = yield* Layer.build(
      Layer.provideMerge(
        Layer.mergeAll(RemoteCodeRunner.layer({ prefix, pool: config.pool }), StreamPublisher.layer({ prefix })),
        Layer.mergeAll(NatsTransport.layer, snapshots, ownership).pipe(Layer.provideMerge(Connection.serving(config, `jitbox-sessions-${namespace}`)))
      )
    ).pipe(telemetry.provide)
    if (Option.isSome(config.profile)) {
      const policy = Option.getOrUndefined(config.policy)
      yield* ProfileCheck.check({ prefix, principal, profile: config.profile.value, policy, deploymentConsent: config.deploymentConsent }).pipe(Effect.provide(context))
    }
    const catalog = yield* catalogOf(config, namespace, Context.get(context, NatsConnection.NatsConnection))
    const sessions = yield* Sessions.make({
      prefix,
      harness: { codeExecution: "sandboxed", principal, ...catalog, ...Option.match(config.policy, { onNone: () => ({}), onSome: (policy) => ({ policy }) }) },
      idleTimeout: config.idleTimeout,
      maxActiveSessions: config.maxSessions,
      activation: true,
      ...Option.match(config.profile, {
        onNone: () => ({}),
        onSome: (name) => ({ admission: { principal, profile: name, deploymentConsent: config.deploymentConsent } })
      })
    }).pipe(Effect.provide(context), telemetry.provide)
    yield* telemetry.watchLeases(sessions.leases)
    yield* health.serving({
      connection: Context.get(context, NatsConnection.NatsConnection),
      serves: () => ({ pool: config.pool, sessions: sessions.active().length, maxSessions: config.maxSessions })
    })
    return `sessions ${namespace}`
  }))).pipe(
  Command.withDescription("Host sessions for remote callers: activated here on first use, their code tools run on the workers of a pool.")
)
