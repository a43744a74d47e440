/**
 * `--health-port N` (`JITBOX_HEALTH_PORT`) of every serving command (`worker`, `coordinator`,
 * `sessions`, `mcp --http`): an HTTP server on `--health-host` (default 127.0.0.1) for a process
 * supervisor or a load balancer.
 *
 * - `GET /healthz`: 200 while the process is alive;
 * - `GET /readyz`: 200 only while the command serves and its NATS connection is up; 503 while it
 *   starts, while the connection is down (the client reconnecting) or closed, and once it stops.
 *
 * Both answer the same JSON body (`HealthReport`): the command, its namespace and principal, its
 * NATS connection's status, and what it serves (a worker's pool and languages, a session host's
 * active sessions, …). Anything else is 404. The server lives in the command's scope: it is closed
 * when the command has stopped.
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"
import { HarnessError } from "@jitbox/core"
import type { NatsConnection } from "@jitbox/nats"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as http from "node:http"

/** @since 0.1.0 @category options */
export const healthPort = Options.integer("health-port").pipe(
  Options.withDescription("Serve GET /healthz (alive) and GET /readyz (connected to NATS and serving) over HTTP on this port (0: a free one); environment variable JITBOX_HEALTH_PORT"),
  Options.withFallbackConfig(Config.integer("JITBOX_HEALTH_PORT")),
  Options.optional
)

/** @since 0.1.0 @category options */
export const healthHost = Options.text("health-host").pipe(
  Options.withDescription("The address --health-port listens on (default 127.0.0.1: this machine only)"),
  Options.withDefault("127.0.0.1")
)

/** The options, to spread into a serving command's options. @since 0.1.0 @category options */
export const options = { healthPort, healthHost } as const

/** What the options parse to. @since 0.1.0 @category models */
export interface HealthConfig {
  readonly healthPort: Option.Option<number>
  readonly healthHost: string
}

/** The NATS connection's status: `none` for a command that serves without NATS. @since 0.1.0 @category models */
export const ConnectionStatus = Schema.Literal("connected", "reconnecting", "closed", "none")

/** @since 0.1.0 @category models */
export type ConnectionStatus = typeof ConnectionStatus.Type

/** The body of `/healthz` and `/readyz`. @since 0.1.0 @category models */
export const HealthReport = Schema.Struct({
  command: Schema.String,
  namespace: Schema.optional(Schema.String),
  principal: Schema.optional(Schema.String),
  state: Schema.Literal("starting", "serving", "stopping"),
  connection: ConnectionStatus,
  ready: Schema.Boolean,
  serves: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

/** @since 0.1.0 @category models */
export type HealthReport = typeof HealthReport.Type

/** The health server could not listen. @since 0.1.0 @category errors */
export class HealthServerError extends Schema.TaggedError<HealthServerError>()("HealthServerError", {
  address: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `--health-port: cannot listen on ${this.address}: ${this.detail}`
  }
}

/** Who the command is, for the report. @since 0.1.0 @category models */
export interface Identity {
  readonly command: string
  readonly namespace?: string | undefined
  readonly principal?: string | undefined
}

/** What the command serves, once it does. @since 0.1.0 @category models */
export interface Probe {
  /** The process's NATS connection; absent for a command that serves without NATS. */
  readonly connection?: NatsConnection.NatsConnectionShape | undefined
  /** What it serves, read on each request. */
  readonly serves: () => Record<string, unknown>
}

/** @since 0.1.0 @category models */
export interface Health {
  /** Marks the command serving `probe` until the scope closes (it is stopping from the first finalizer on). */
  readonly serving: (probe: Probe) => Effect.Effect<void, never, Scope.Scope>
}

/**
 * The status of `connection`: closed for good, down (the client reconnecting), or connected.
 *
 * @since 0.1.0
 * @category constructors
 */
export const connectionStatus = (connection: NatsConnection.NatsConnectionShape | undefined): ConnectionStatus =>
  connection === undefined ? "none" : connection.nc.isClosed() ? "closed" : connection.isDown() ? "reconnecting" : "connected"

/** The report of `identity` in `state`, serving `probe`. */
const reportOf = (identity: Identity, state: HealthReport["state"], probe: Probe | undefined): HealthReport => {
  const connection = state === "starting" ? "none" : connectionStatus(probe?.connection)
  return {
    ...identity,
    state,
    connection,
    ready: state === "serving" && (connection === "connected" || connection === "none"),
    serves: state === "starting" ? {} : probe?.serves() ?? {}
  }
}

const encode = Schema.encodeSync(Schema.parseJson(HealthReport))

const answer = (report: () => HealthReport) => (request: http.IncomingMessage, response: http.ServerResponse): void => {
  const path = (request.url ?? "/").split("?")[0]
  if (request.method !== "GET" || (path !== "/healthz" && path !== "/readyz")) {
    response.writeHead(404, { "content-type": "text/plain" }).end("not found: GET /healthz or /readyz\n")
    return
  }
  const current = report()
  const status = path === "/healthz" || current.ready ? 200 : 503
  response.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" }).end(`${encode(current)}\n`)
}

/** The HTTP server on `host:port`, closed (its connections too) when the scope closes. */
const listen = (host: string, port: number, report: () => HealthReport): Effect.Effect<string, HealthServerError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<http.Server, HealthServerError>((resume) => {
      const server = http.createServer(answer(report))
      const failed = (error: Error) => resume(Effect.fail(new HealthServerError({ address: `${host}:${port}`, detail: error.message })))
      server.once("error", failed)
      server.listen(port, host, () => {
        server.off("error", failed).on("error", () => {})
        resume(Effect.succeed(server))
      })
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  ).pipe(Effect.map((server) => {
    const address = server.address()
    const bound = typeof address === "object" && address !== null ? address.port : port
    return `http://${host.includes(":") ? `[${host}]` : host}:${bound}`
  }))

/**
 * The health server of `config` for `identity`, starting (`/readyz` 503) until `serving`; with no
 * `--health-port`, nothing listens. The address goes to stderr: `health http://127.0.0.1:N`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const start = (config: HealthConfig, identity: Identity): Effect.Effect<Health, HarnessError.ConfigError | HealthServerError, Scope.Scope> =>
  Effect.gen(function*() {
    let state: HealthReport["state"] = "starting"
    let probe: Probe | undefined
    if (Option.isSome(config.healthPort)) {
      const port = config.healthPort.value
      if (!Number.isSafeInteger(port) || port < 0 || port > 65_535) {
        return yield* new HarnessError.ConfigError({ option: "--health-port", detail: `a port is 0 to 65535, got ${port}` })
      }
      const url = yield* listen(config.healthHost, port, () => reportOf(identity, state, probe))
      yield* Console.error(`health ${url}`)
    }
    return {
      serving: (served) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            probe = served
            state = "serving"
          }),
          () => Effect.sync(() => void (state = "stopping"))
        )
    }
  })
