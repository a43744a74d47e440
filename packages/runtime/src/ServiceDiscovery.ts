/**
 * NATS service discovery (the "micro" protocol of ADR-32) over the `Transport`, so standard NATS
 * tooling lists the runtime's processes: `nats micro ls`, `nats micro info jitbox-worker`,
 * `nats micro stats jitbox-coordinator`. `advertise` answers, for the life of its scope,
 *
 * | subject | answer (`type`) |
 * |---|---|
 * | `$SRV.PING`, `$SRV.PING.<name>`, `$SRV.PING.<name>.<id>` | `io.nats.micro.v1.ping_response`: name, id, version, metadata |
 * | `$SRV.INFO`, `…<name>`, `…<name>.<id>` | `io.nats.micro.v1.info_response`: the same, description, endpoints (name, subject, queue_group, metadata) |
 * | `$SRV.STATS`, `…<name>`, `…<name>.<id>` | `io.nats.micro.v1.stats_response`: the same, started (RFC 3339, UTC), per endpoint num_requests, num_errors, last_error, processing_time and average_processing_time (nanoseconds) |
 *
 * Each subject is served without a queue group: every instance answers a `PING`. The endpoints
 * themselves are served by their owner (a worker's `invoke` subjects, the coordinator's
 * operations); `advertise` only describes them. Their statistics come from a `Counter` that the
 * owner's handler records into: `measure` wraps a `Transport.Handler` so that each request is
 * counted with its processing time, and a reply of kind `error` (or a handler that throws) counts
 * as an error whose message becomes `last_error`.
 *
 * The service is not the `@nats-io/services` package: the runtime never imports NATS, and the
 * answers are the same JSON whichever transport carries them.
 *
 * @since 0.1.0
 */
import { HarnessError } from "@jitbox/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Envelope from "./Envelope.js"
import * as Ids from "./Ids.js"
import * as Subject from "./Subject.js"
import * as Transport from "./Transport.js"
import type { TransportError } from "./TransportError.js"

/** The version of `@jitbox/runtime`, as its services advertise it. @since 0.1.0 @category constants */
export const runtimeVersion = "0.1.0"

/** The `type` of each answer. @since 0.1.0 @category constants */
export const responseTypes = {
  PING: "io.nats.micro.v1.ping_response",
  INFO: "io.nats.micro.v1.info_response",
  STATS: "io.nats.micro.v1.stats_response"
} as const

/** The semantic-version expression semver.org suggests, which the protocol requires of `version`. @since 0.1.0 @category constants */
export const semVer =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/

/** What one endpoint has counted so far. @since 0.1.0 @category models */
export interface Counts {
  readonly requests: number
  readonly errors: number
  /** The last error's message; empty when there was none. */
  readonly lastError: string
  /** Time spent handling requests, in nanoseconds. */
  readonly processingNanos: number
}

/** The statistics of one endpoint, recorded by its handler. @since 0.1.0 @category models */
export interface Counter {
  /** Counts one request that took `nanos`; `error` is its failure's message, when it failed. */
  readonly record: (nanos: number, error?: string | undefined) => void
  readonly counts: () => Counts
}

/** The longest `last_error` kept. */
const maxErrorLength = 256

/** A counter at zero. @since 0.1.0 @category constructors */
export const counter = (): Counter => {
  let requests = 0
  let errors = 0
  let lastError = ""
  let processingNanos = 0
  return {
    record: (nanos, error) => {
      requests++
      processingNanos += Math.max(0, Math.round(nanos))
      if (error !== undefined) {
        errors++
        lastError = error.slice(0, maxErrorLength)
      }
    },
    counts: () => ({ requests, errors, lastError, processingNanos })
  }
}

const decoder = new TextDecoder()
/** `{"v":2,"kind":"error"`: how every error reply of the runtime's envelope begins. */
const errorReplyHead = Envelope.encode("error").slice(0, -1)

const payloadOf = (reply: Transport.Reply): string | Uint8Array => typeof reply === "string" || reply instanceof Uint8Array ? reply : reply.payload

/**
 * The failure an enveloped reply carries (`{"v":2,"kind":"error","error":{…}}`): its error's
 * `message`, else its `_tag`, `reason` and `detail`; `undefined` for any other reply.
 *
 * @since 0.1.0
 * @category failures
 */
export const envelopeFailure = (reply: Transport.Reply): string | undefined => {
  const payload = payloadOf(reply)
  const head = typeof payload === "string" ? payload.slice(0, errorReplyHead.length) : decoder.decode(payload.subarray(0, errorReplyHead.length))
  if (head !== errorReplyHead) return undefined
  try {
    const error = (JSON.parse(typeof payload === "string" ? payload : decoder.decode(payload)) as { error?: Record<string, unknown> }).error
    if (typeof error?.message === "string") return error.message
    const text = (key: string) => typeof error?.[key] === "string" ? error[key] as string : undefined
    const head = [text("_tag"), text("reason")].filter((part) => part !== undefined).join(" ") || "error"
    const detail = text("detail")
    return detail === undefined ? head : `${head}: ${detail}`
  } catch {
    return "error"
  }
}

const messageOf = (thrown: unknown): string => thrown instanceof Error ? thrown.message : String(thrown)

const isPromiseLike = (u: unknown): u is PromiseLike<Transport.Reply> =>
  typeof u === "object" && u !== null && typeof (u as PromiseLike<unknown>).then === "function"

const nanosSince = (start: number): number => (performance.now() - start) * 1e6

/**
 * `handler`, counting each request it answers into `stats`: its processing time, and as an error
 * a throw, a rejection, or a reply `failure` recognises (by default an enveloped `error` reply).
 *
 * @since 0.1.0
 * @category constructors
 */
export const measure = (
  stats: Counter,
  handler: Transport.Handler,
  failure: (reply: Transport.Reply) => string | undefined = envelopeFailure
): Transport.Handler =>
(request) => {
  const start = performance.now()
  let reply: Transport.Reply | PromiseLike<Transport.Reply>
  try {
    reply = handler(request)
  } catch (error) {
    stats.record(nanosSince(start), messageOf(error))
    throw error
  }
  if (!isPromiseLike(reply)) {
    stats.record(nanosSince(start), failure(reply))
    return reply
  }
  return Promise.resolve(reply).then(
    (answer) => {
      stats.record(nanosSince(start), failure(answer))
      return answer
    },
    (error: unknown) => {
      stats.record(nanosSince(start), messageOf(error))
      throw error
    }
  )
}

/** One endpoint a service describes. @since 0.1.0 @category models */
export interface Endpoint {
  /** Letters, digits, `-` and `_`. */
  readonly name: string
  readonly subject: Subject.Pattern
  /** The queue group it is served in; none when absent (answered as `""`). */
  readonly queueGroup?: string | undefined
  readonly metadata?: Readonly<Record<string, string>> | undefined
  /** Where its handler counts requests (see `measure`); zeros when absent. */
  readonly stats?: Counter | undefined
}

/** @since 0.1.0 @category models */
export interface ServiceOptions {
  /** The kind of service, shared by its instances: letters, digits, `-` and `_`. */
  readonly name: string
  /** Semantic version (`1.2.3`). */
  readonly version: string
  /** This instance (a token); default a fresh one. */
  readonly id?: string | undefined
  readonly description?: string | undefined
  readonly metadata?: Readonly<Record<string, string>> | undefined
  readonly endpoints: ReadonlyArray<Endpoint>
}

const Metadata = Schema.Record({ key: Schema.String, value: Schema.String })

const identity = {
  name: Schema.String,
  id: Schema.String,
  version: Schema.String,
  metadata: Metadata
}

/** The answer to `PING`. @since 0.1.0 @category schemas */
export const PingResponse = Schema.Struct({ type: Schema.Literal(responseTypes.PING), ...identity })

/** The answer to `INFO`. @since 0.1.0 @category schemas */
export const InfoResponse = Schema.Struct({
  type: Schema.Literal(responseTypes.INFO),
  ...identity,
  description: Schema.String,
  endpoints: Schema.Array(Schema.Struct({ name: Schema.String, subject: Schema.String, queue_group: Schema.String, metadata: Metadata }))
})

/** The answer to `STATS`. @since 0.1.0 @category schemas */
export const StatsResponse = Schema.Struct({
  type: Schema.Literal(responseTypes.STATS),
  ...identity,
  /** RFC 3339, UTC. */
  started: Schema.String,
  endpoints: Schema.Array(Schema.Struct({
    name: Schema.String,
    subject: Schema.String,
    queue_group: Schema.String,
    num_requests: Schema.Number,
    num_errors: Schema.Number,
    last_error: Schema.String,
    /** Nanoseconds. */
    processing_time: Schema.Number,
    /** Nanoseconds: processing_time divided by num_requests, truncated; 0 without requests. */
    average_processing_time: Schema.Number
  }))
})

/** @since 0.1.0 @category models */
export interface Service {
  readonly name: string
  readonly id: Ids.Token
  readonly ping: () => typeof PingResponse.Type
  readonly info: () => typeof InfoResponse.Type
  readonly stats: () => typeof StatsResponse.Type
}

const serviceIds = Ids.generator<Ids.Token>("svc")

const configError = (option: string, detail: string) => new HarnessError.ConfigError({ option, detail })

const checkOptions = (options: ServiceOptions): HarnessError.ConfigError | undefined => {
  if (!Ids.tokenPattern.test(options.name)) return configError("name", `${JSON.stringify(options.name)}: a service name is letters, digits, "-" and "_"`)
  if (!semVer.test(options.version)) return configError("version", `${JSON.stringify(options.version)} is not a semantic version`)
  if (options.id !== undefined && (!Ids.tokenPattern.test(options.id) || options.id.length > Ids.maxIdLength)) {
    return configError("id", `${JSON.stringify(options.id)}: a service id is letters, digits, "-" and "_"`)
  }
  for (const endpoint of options.endpoints) {
    if (!Ids.tokenPattern.test(endpoint.name)) return configError("endpoints", `${JSON.stringify(endpoint.name)}: an endpoint name is letters, digits, "-" and "_"`)
    if (!Subject.isPattern(endpoint.subject)) return configError("endpoints", `${JSON.stringify(endpoint.subject)} is not a subject`)
  }
  return undefined
}

const zero: Counts = { requests: 0, errors: 0, lastError: "", processingNanos: 0 }

/** Answers for one server of discovery requests; a few at once is plenty. */
const serveOptions: Transport.ServeOptions = { concurrency: 4, backlog: 256, graceMs: 0 }

/**
 * Answers the service protocol's `PING`, `INFO` and `STATS` for `options` until the scope closes.
 * Fails `ConfigError` for a name, version, id or endpoint the protocol does not allow. `started`
 * is the context's `Clock` when it begins.
 *
 * @since 0.1.0
 * @category constructors
 */
export const advertise = (
  options: ServiceOptions
): Effect.Effect<Service, TransportError | HarnessError.ConfigError, Scope.Scope | Transport.Transport> =>
  Effect.gen(function*() {
    const bad = checkOptions(options)
    if (bad !== undefined) return yield* bad
    const transport = yield* Transport.Transport
    const name = options.name as Ids.Token
    const id = (options.id ?? serviceIds()) as Ids.Token
    const started = new Date(yield* Effect.clockWith((clock) => clock.currentTimeMillis)).toISOString()
    const metadata = { ...options.metadata }
    const endpoints = options.endpoints.map((endpoint) => ({
      name: endpoint.name,
      subject: endpoint.subject as string,
      queue_group: endpoint.queueGroup ?? "",
      metadata: { ...endpoint.metadata },
      stats: endpoint.stats
    }))

    const ping = () => ({ type: responseTypes.PING, name, id, version: options.version, metadata })
    const info = () => ({
      type: responseTypes.INFO,
      name,
      id,
      version: options.version,
      metadata,
      description: options.description ?? "",
      endpoints: endpoints.map(({ metadata, name, queue_group, subject }) => ({ name, subject, queue_group, metadata }))
    })
    const stats = () => ({
      type: responseTypes.STATS,
      name,
      id,
      version: options.version,
      metadata,
      started,
      endpoints: endpoints.map(({ name, queue_group, stats, subject }) => {
        const counts = stats?.counts() ?? zero
        return {
          name,
          subject,
          queue_group,
          num_requests: counts.requests,
          num_errors: counts.errors,
          last_error: counts.lastError,
          processing_time: counts.processingNanos,
          average_processing_time: counts.requests === 0 ? 0 : Math.trunc(counts.processingNanos / counts.requests)
        }
      })
    })

    const pingReply = JSON.stringify(ping())
    const answers: Record<Subject.ServiceVerb, () => string> = {
      PING: () => pingReply,
      INFO: () => JSON.stringify(info()),
      STATS: () => JSON.stringify(stats())
    }
    for (const verb of Subject.serviceVerbs) {
      const answer = answers[verb]
      for (const subject of [Subject.serviceDiscovery(verb), Subject.serviceDiscovery(verb, name), Subject.serviceDiscovery(verb, name, id)]) {
        yield* transport.serve(subject, serveOptions, answer)
      }
    }
    return { name, id, ping, info, stats }
  })
