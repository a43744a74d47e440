/**
 * `jitbox status`: one look at a namespace, from what its processes answer:
 *
 * - the coordinator: whether it answers (`coordinator.<principal>.leases`, asked as `--principal`,
 *   by default the `--user`), its instances in NATS service
 *   discovery, and its execution profiles with the concurrency slots their leases hold;
 * - the workers: every `jitbox-worker` of the namespace answering `$SRV.INFO` and `$SRV.STATS`
 *   (pool, languages, requests, errors, mean processing time), with the capacity the coordinator
 *   last heard from each (running, concurrency, draining);
 * - the sessions: who hosts which, from the hosts' claims (`KvSessionOwnership`), live or lapsed;
 * - the leases: each session's owner (the principal that admitted it), live lease and the budget
 *   it has left, from the coordinator's ledger.
 *
 * A table by default, or `--json`: the same as one JSON document. Nothing is written anywhere.
 * When no coordinator answers within `--timeout` the table still shows the rest, and the command
 * fails `CoordinatorUnavailable` (exit 1).
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import { type HarnessError } from "@jitbox/core"
import { KvSessionOwnership, NatsConnection, NatsTransport } from "@jitbox/nats"
import { Coordinator, CoordinatorClient, CoordinatorProtocol, Ids, ServiceDiscovery, type SessionOwnership, Subject, Transport, TransportError, Worker, type WorkerCapacity } from "@jitbox/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Connection from "./Connection.js"
import * as OperatorOptions from "./OperatorOptions.js"
import * as Table from "./Table.js"

/** No coordinator of the namespace answered. @since 0.1.0 @category errors */
export class CoordinatorUnavailable extends Schema.TaggedError<CoordinatorUnavailable>()("CoordinatorUnavailable", {
  namespace: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `no coordinator of namespace '${this.namespace}' answers: ${this.detail}`
  }
}

/** One instance of a service, from `$SRV.INFO` and `$SRV.STATS`. @since 0.1.0 @category models */
export interface ServiceInstance {
  readonly id: string
  readonly version: string
  readonly metadata: Readonly<Record<string, string>>
  readonly started: string | null
  readonly requests: number
  readonly errors: number
  readonly lastError: string
  /** Mean time per request over every endpoint, in milliseconds. */
  readonly meanMs: number
}

/** @since 0.1.0 @category models */
export interface WorkerStatus extends ServiceInstance {
  readonly pool: string
  readonly languages: ReadonlyArray<string>
  /** What the coordinator last heard of it (null: no live capacity report). */
  readonly capacity: WorkerCapacity.WorkerCapacity | null
}

/** @since 0.1.0 @category models */
export interface SessionHost {
  readonly sessionId: string
  readonly host: string
  readonly live: boolean
  readonly expiresAt: number
}

/** What `jitbox status --json` prints. @since 0.1.0 @category models */
export interface Status {
  readonly namespace: string
  readonly at: string
  readonly coordinator: {
    readonly answering: boolean
    readonly error: string | null
    readonly instances: ReadonlyArray<ServiceInstance>
    readonly profiles: ReadonlyArray<CoordinatorProtocol.ProfileView>
  }
  readonly workers: ReadonlyArray<WorkerStatus>
  readonly sessions: { readonly hosts: ReadonlyArray<SessionHost>; readonly truncated: boolean }
  readonly leases: { readonly sessions: ReadonlyArray<CoordinatorProtocol.SessionBudget>; readonly truncated: boolean }
}

/** @since 0.1.0 @category options */
export const timeout = OperatorOptions.duration(
  "timeout",
  "How long to wait for the coordinator and for the workers' discovery answers: 500ms, 2s (default 2s)"
).pipe(Options.withDefault(2_000))

/** @since 0.1.0 @category options */
export const limit = Options.integer("limit").pipe(
  Options.withDescription(`The most sessions listed (1 to ${CoordinatorProtocol.leasesLimits.max}; default ${CoordinatorProtocol.leasesLimits.default})`),
  Options.withDefault(CoordinatorProtocol.leasesLimits.default)
)

type Connection = NatsConnection.NatsConnectionShape["nc"]

const decodeInfo = Schema.decodeUnknownEither(ServiceDiscovery.InfoResponse)
const decodeStats = Schema.decodeUnknownEither(ServiceDiscovery.StatsResponse)
const decoder = new TextDecoder()
/** No namespace has more answers than this; more are ignored. */
const maxAnswers = 1_024

/** Every answer to a discovery request within `waitMs`, decoded; what does not decode is dropped. */
const gather = <A>(nc: Connection, subject: string, waitMs: number, decode: (value: unknown) => Either.Either<A, unknown>) =>
  Effect.tryPromise({
    try: async () => {
      const out: Array<A> = []
      try {
        const replies = await nc.requestMany(subject, "", { strategy: "timer", maxWait: waitMs, maxMessages: maxAnswers })
        for await (const reply of replies) {
          let value: unknown
          try {
            value = JSON.parse(decoder.decode(reply.data))
          } catch {
            continue
          }
          const decoded = decode(value)
          if (Either.isRight(decoded)) out.push(decoded.right)
        }
      } catch (error) {
        if (!/no responders/i.test(String(error))) throw error
      }
      return out
    },
    catch: (error) => NatsTransport.toTransportError(error, subject)
  })

/** The instances of service `name` serving `namespace`. */
const instances = (nc: Connection, name: string, namespace: string, waitMs: number) =>
  Effect.gen(function*() {
    const [infos, stats] = yield* Effect.all([
      gather(nc, Subject.serviceDiscovery("INFO", Ids.token(name)), waitMs, decodeInfo),
      gather(nc, Subject.serviceDiscovery("STATS", Ids.token(name)), waitMs, decodeStats)
    ], { concurrency: 2 })
    const statsOf = new Map(stats.map((answer) => [answer.id, answer]))
    return infos
      .filter((info) => info.metadata.namespace === namespace)
      .sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
      .map((info): ServiceInstance => {
        const answer = statsOf.get(info.id)
        const requests = answer?.endpoints.reduce((sum, endpoint) => sum + endpoint.num_requests, 0) ?? 0
        const nanos = answer?.endpoints.reduce((sum, endpoint) => sum + endpoint.processing_time, 0) ?? 0
        return {
          id: info.id,
          version: info.version,
          metadata: info.metadata,
          started: answer?.started ?? null,
          requests,
          errors: answer?.endpoints.reduce((sum, endpoint) => sum + endpoint.num_errors, 0) ?? 0,
          lastError: answer?.endpoints.map((endpoint) => endpoint.last_error).find((error) => error !== "") ?? "",
          meanMs: requests === 0 ? 0 : nanos / requests / 1e6
        }
      })
  })

/**
 * Gathers the status of the namespace of `config`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const gatherStatus = (
  config: Connection.ConnectionConfig & { readonly timeout: number; readonly limit: number }
) =>
  Effect.scoped(Effect.gen(function*() {
    const { namespace } = yield* Connection.prefixOf(config)
    const principal = yield* Connection.principalOf(config)
    const connection = yield* NatsConnection.make(yield* Connection.natsOptions(config, `jitbox-status-${namespace}`))
    const nc = connection.nc
    const transport = NatsTransport.fromConnection(connection)
    const client = yield* CoordinatorClient.make({ namespace, principal, timeoutMs: config.timeout }).pipe(Effect.provideService(Transport.Transport, transport))
    const limit = Math.max(1, Math.min(CoordinatorProtocol.leasesLimits.max, config.limit))
    const [leases, capacities, coordinators, workers, claims] = yield* Effect.all([
      Effect.either(client.leases(limit)),
      Effect.either(client.workers()),
      instances(nc, Coordinator.serviceName, namespace, Math.min(config.timeout, 1_000)),
      instances(nc, Worker.serviceName, namespace, Math.min(config.timeout, 1_000)),
      KvSessionOwnership.list(nc, { namespace, limit })
    ], { concurrency: "unbounded" })
    const now = Date.now()
    const capacityOf = new Map((Either.isRight(capacities) ? capacities.right : []).map((capacity) => [capacity.workerId, capacity]))
    const status: Status = {
      namespace,
      at: new Date(now).toISOString(),
      coordinator: {
        answering: Either.isRight(leases),
        error: Either.isLeft(leases) ? leases.left.message : null,
        instances: coordinators,
        profiles: Either.isRight(leases) ? leases.right.profiles : []
      },
      workers: workers.map((worker) => ({
        ...worker,
        pool: worker.metadata.pool ?? "-",
        languages: (worker.metadata.languages ?? "").split(",").filter((language) => language !== ""),
        capacity: capacityOf.get(worker.id) ?? null
      })),
      sessions: {
        hosts: claims.claims
          .map((claim) => ({ sessionId: claim.sessionId, host: claim.ownerId, live: claim.expiresAt > now, expiresAt: claim.expiresAt }))
          .sort((a, b) => Number(b.live) - Number(a.live) || (a.sessionId < b.sessionId ? -1 : 1)),
        truncated: claims.truncated
      },
      leases: Either.isRight(leases) ? { sessions: leases.right.sessions, truncated: leases.right.truncated } : { sessions: [], truncated: false }
    }
    return status
  }))

const languagesOf = (profile: CoordinatorProtocol.ProfileView) => profile.policy.allowedLanguages.join(",")

/**
 * The status as the table `jitbox status` prints, line by line.
 *
 * @since 0.1.0
 * @category formatting
 */
export const table = (status: Status, now: number = Date.parse(status.at)): Array<string> => {
  const lines: Array<string> = []
  const coordinator = status.coordinator
  lines.push(
    `namespace ${status.namespace}  (${status.at})`,
    "",
    coordinator.answering
      ? `coordinator: answering (${coordinator.instances.length === 0 ? "no discovery answer" : coordinator.instances.map((instance) => `${instance.id}, ${instance.requests} requests`).join("; ")})`
      : `coordinator: NOT ANSWERING: ${coordinator.error ?? "no answer"}`
  )
  if (coordinator.profiles.length > 0) {
    lines.push(...Table.render(
      ["PROFILE", "LOCATION", "LANGUAGES", "INVOCATIONS", "TOOLS", "REPAIRS", "CONCURRENCY", "SLOTS HELD"],
      coordinator.profiles.map((profile) => [
        profile.name,
        profile.sandboxNodeId === undefined ? profile.location : `node ${profile.sandboxNodeId}`,
        languagesOf(profile),
        profile.policy.maximumInvocations,
        profile.policy.maximumTools,
        profile.policy.maximumRepairs,
        profile.policy.maximumConcurrentInvocations,
        profile.slotsHeld
      ]),
      "  "
    ))
  }
  lines.push("", `workers: ${status.workers.length}`)
  if (status.workers.length > 0) {
    lines.push(...Table.render(
      ["WORKER", "POOL", "LANGUAGES", "RUNNING", "DRAINING", "REQUESTS", "ERRORS", "MEAN", "UP"],
      status.workers.map((worker) => [
        worker.id,
        worker.pool,
        worker.languages.join(","),
        worker.capacity === null ? "-" : worker.capacity.running,
        worker.capacity === null ? "-" : worker.capacity.draining ? "yes" : "no",
        worker.requests,
        worker.errors,
        Table.span(worker.meanMs),
        worker.started === null ? "-" : Table.span(now - Date.parse(worker.started))
      ]),
      "  "
    ))
  }
  const live = status.sessions.hosts.filter((host) => host.live).length
  lines.push("", `sessions: ${live} hosted${status.sessions.hosts.length > live ? `, ${status.sessions.hosts.length - live} lapsed claims` : ""}${status.sessions.truncated ? " (more not listed)" : ""}`)
  if (status.sessions.hosts.length > 0) {
    lines.push(...Table.render(
      ["SESSION", "HOST", "CLAIM"],
      status.sessions.hosts.map((host) => [host.sessionId, host.host, host.live ? `live, ${Table.span(host.expiresAt - now)} left` : "lapsed"]),
      "  "
    ))
  }
  const leased = status.leases.sessions.filter((session) => session.lease !== null).length
  lines.push("", `leases: ${leased} live of ${status.leases.sessions.length} sessions in the ledger${status.leases.truncated ? " (more not listed)" : ""}`)
  if (status.leases.sessions.length > 0) {
    lines.push(...Table.render(
      ["SESSION", "PROFILE", "OWNER", "CONSENT", "LEASE", "EXPIRES", "SLOTS", "INVOCATIONS LEFT", "TOOLS LEFT", "REPAIRS LEFT"],
      status.leases.sessions.map((session) => [
        session.sessionId,
        session.profile,
        session.principal ?? "-",
        session.deploymentConsent ? "yes" : "no",
        session.lease?.id ?? "-",
        session.lease === null ? "-" : Table.span(session.lease.expiresAt - now),
        session.lease?.slots ?? "-",
        session.left.invocations,
        session.left.tools,
        session.left.repairs
      ]),
      "  "
    ))
  }
  return lines
}

/** What `jitbox status` can fail with. @since 0.1.0 @category errors */
export type StatusCommandError =
  | CoordinatorUnavailable
  | HarnessError.ConfigError
  | TransportError.TransportError
  | SessionOwnership.OwnershipError

/** @since 0.1.0 @category commands */
export const command = Command.make(
  "status",
  { ...Connection.options, json: OperatorOptions.json, timeout, limit },
  (config): Effect.Effect<void, StatusCommandError> =>
    Effect.gen(function*() {
      const status = yield* gatherStatus(config)
      yield* Console.log(config.json ? JSON.stringify(status) : table(status).join("\n"))
      if (!status.coordinator.answering) {
        return yield* new CoordinatorUnavailable({ namespace: status.namespace, detail: status.coordinator.error ?? "no answer" })
      }
    })
).pipe(
  Command.withDescription(
    "Show a namespace: the coordinator and its profiles, the workers (NATS service discovery), who hosts which session, the leases and budgets left. Exit 1 when no coordinator answers."
  )
)
