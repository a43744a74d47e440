/**
 * `jitbox worker`: serves a `Worker` of @jitbox/runtime, which runs the code tools of any session
 * of the namespace in sandboxed subprocesses. It prints `ready <workerId>` once it serves; with
 * `--log-invocations`, one line per finished invocation:
 *
 *     invocation worker=<workerId> session=<sessionId> tool=<name> call=<callId> outcome=ok|failed|cancelled
 *
 * On SIGTERM or SIGINT it drains (stops taking work, lets what runs finish for `--grace-ms`, then
 * kills the rest, each answered `Closed`), prints `stopped <workerId>` and exits 0. While it
 * drains, a terminal shows its progress on stderr (`Progress`): invocations finished of those
 * running when the signal came.
 *
 * `--credential NAME` (repeatable) hands the worker the secret in its own environment variable
 * `NAME`: sessions admitted under a profile whose `credentialName` is `NAME` run their code with it
 * (and only on workers that hold it).
 *
 * Its sandbox takes the flags of `WorkerSandbox`: the warm pool (sized from `--concurrency` unless
 * they size it), the resource limits of every child and the interpreters.
 *
 * With `--otlp URL` (or OTEL_EXPORTER_OTLP_ENDPOINT) it exports its invocation spans and metrics
 * (its capacity and load among them) as service `jitbox-worker` (`Telemetry`).
 *
 * @since 0.1.0
 */
import { Command, HelpDoc, Options } from "@effect/cli"
import { type CodeLanguage, CodeLanguages, type HarnessError } from "@jitbox/core"
import { NatsConnection, NatsTransport } from "@jitbox/nats"
import { Ids, type TransportError, Worker } from "@jitbox/runtime"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Connection from "./Connection.js"
import * as Health from "./Health.js"
import * as Progress from "./Progress.js"
import * as Serve from "./Serve.js"
import * as Telemetry from "./Telemetry.js"
import * as WorkerSandbox from "./WorkerSandbox.js"

/**
 * A comma-separated list of code languages; throws naming the first unknown one.
 *
 * @since 0.1.0
 * @category constructors
 */
export const parseLanguages = (text: string): ReadonlyArray<CodeLanguage> => {
  const names = text.split(",").map((name) => name.trim()).filter((name) => name !== "")
  if (names.length === 0) throw new Error(`--languages: expected one or more of ${CodeLanguages.join(", ")}`)
  for (const name of names) {
    if (!(CodeLanguages as ReadonlyArray<string>).includes(name)) {
      throw new Error(`--languages: '${name}' is not a language; the languages are ${CodeLanguages.join(", ")}`)
    }
  }
  return names as ReadonlyArray<CodeLanguage>
}

const positive = (name: string) => (value: number): number => {
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`--${name}: expected an integer ≥ 1, got ${value}`)
  return value
}

const helpOf = (error: unknown) => HelpDoc.p(error instanceof Error ? error.message : String(error))

/** @since 0.1.0 @category options */
export const pool = Options.text("pool").pipe(
  Options.withDescription(`The worker pool served; a session's RemoteCodeRunner names the pool it sends to (default ${Worker.defaults.pool})`),
  Options.withDefault(Worker.defaults.pool)
)

/** @since 0.1.0 @category options */
export const languages = Options.text("languages").pipe(
  Options.withDescription(`The languages served, comma-separated (${CodeLanguages.join(",")}); default: every language this machine's sandbox runs`),
  Options.mapTryCatch(parseLanguages, helpOf),
  Options.optional
)

/** @since 0.1.0 @category options */
export const concurrency = Options.integer("concurrency").pipe(
  Options.withDescription(`Invocations of one language run at once (default ${Worker.defaults.concurrency})`),
  Options.mapTryCatch(positive("concurrency"), helpOf),
  Options.withDefault(Worker.defaults.concurrency)
)

/** @since 0.1.0 @category options */
export const graceMs = Options.integer("grace-ms").pipe(
  Options.withDescription(`On SIGTERM or SIGINT, how long invocations in progress may go on before they are killed, in milliseconds (default ${Worker.defaults.graceMs})`),
  Options.mapTryCatch((value) => {
    if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--grace-ms: expected an integer ≥ 0, got ${value}`)
    return value
  }, helpOf),
  Options.withDefault(Worker.defaults.graceMs)
)

/** @since 0.1.0 @category options */
export const id = Options.text("id").pipe(
  Options.withDescription("This worker's id (letters, digits, _ and -); default: a fresh one"),
  Options.optional
)

/** @since 0.1.0 @category options */
export const logInvocations = Options.boolean("log-invocations").pipe(
  Options.withDescription("Print one line per finished invocation: worker, session, tool, call id and outcome")
)

/** @since 0.1.0 @category options */
export const noAdmission = Options.boolean("no-admission").pipe(
  Options.withDescription("Run code for any session, admitted by the coordinator or not (default: only for sessions whose lease the coordinator confirms)")
)

/** @since 0.1.0 @category options */
export const nodeId = Options.text("node-id").pipe(
  Options.withDescription("The name profiles pin with sandboxNodeId: this worker then also runs their code, one invocation at a time"),
  Options.optional
)

/**
 * A credential the worker holds: `name` and the value of its own environment variable `name`;
 * throws when that variable is unset or empty.
 *
 * @since 0.1.0
 * @category constructors
 */
export const parseCredential = (name: string, environment: NodeJS.ProcessEnv = process.env): readonly [string, string] => {
  const value = environment[name]
  if (value === undefined || value === "") throw new Error(`--credential ${name}: this process's environment has no ${name} to hand out`)
  return [name, value]
}

/** @since 0.1.0 @category options */
export const credential = Options.text("credential").pipe(
  Options.withDescription("A secret this worker holds, read from its own environment variable of that name; a profile's credentialName asks for it (repeatable)"),
  Options.repeated,
  Options.mapTryCatch((names) => names.map((name) => parseCredential(name)), helpOf)
)

/**
 * The line `--log-invocations` prints for one invocation.
 *
 * @since 0.1.0
 * @category formatting
 */
export const invocationLine = (invocation: Worker.Invocation): string =>
  `invocation worker=${invocation.workerId} session=${invocation.sessionId} tool=${invocation.toolName} call=${invocation.callId} outcome=${invocation.outcome}`

/** What serving a worker can fail with. @since 0.1.0 @category errors */
export type WorkerCommandError = HarnessError.ConfigError | TransportError.TransportError | Health.HealthServerError

/** @since 0.1.0 @category commands */
export const command = Command.make(
  "worker",
  { ...Connection.options, pool, languages, concurrency, graceMs, id, logInvocations, noAdmission, nodeId, credential, otlp: Telemetry.otlp, ...Health.options, ...WorkerSandbox.options },
  (config): Effect.Effect<never, WorkerCommandError> =>
    Serve.untilInterrupted(Effect.gen(function*() {
      const { prefix } = yield* Connection.prefixOf(config)
      const workerId = Option.isSome(config.id) ? yield* Ids.decode(Ids.WorkerId, "--id")(config.id.value) : undefined
      yield* Ids.decode(Ids.PoolName, "--pool")(config.pool)
      const principal = yield* Connection.principalOf(config)
      const health = yield* Health.start(config, { command: "worker", namespace: config.namespace, principal })
      // first in the scope, so shut down (flushing every span) after the worker has drained
      const telemetry = yield* Telemetry.install(config.otlp, "jitbox-worker")
      const transport = yield* Layer.build(NatsTransport.layer.pipe(Layer.provideMerge(Connection.serving(config, `jitbox-worker-${workerId ?? config.pool}`))))
      // scope finalizers run last-added first: the line is drawn before the worker drains and erased after
      let draining: Progress.Progress | undefined
      yield* Effect.addFinalizer(() => Effect.sync(() => draining?.stop()))
      const worker = yield* Worker.make({
        prefix,
        workerId,
        principal,
        pool: config.pool,
        languages: Option.getOrUndefined(config.languages),
        concurrency: config.concurrency,
        graceMs: config.graceMs,
        requireAdmission: !config.noAdmission,
        nodeId: Option.getOrUndefined(config.nodeId),
        credentials: Object.fromEntries(config.credential),
        sandbox: WorkerSandbox.sandboxOptions(config),
        onInvocation: config.logInvocations ? (invocation) => process.stdout.write(`${invocationLine(invocation)}\n`) : undefined
      }).pipe(Effect.provide(transport), telemetry.provide)
      yield* telemetry.watchWorker(worker, config.concurrency)
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          const total = worker.running()
          const progress = Progress.make({ status: { label: `draining ${worker.workerId}`, done: 0, total, detail: `${total} running, grace ${config.graceMs}ms` } })
          if (!progress.enabled) return
          draining = progress
          const poll = setInterval(() => {
            const running = worker.running()
            progress.update({ done: Math.max(0, total - running), detail: `${running} running, grace ${config.graceMs}ms` })
          }, 100)
          poll.unref()
          const stop = progress.stop
          draining = { ...progress, stop: () => (clearInterval(poll), stop()) }
        })
      )
      yield* health.serving({
        connection: Context.get(transport, NatsConnection.NatsConnection),
        serves: () => ({ workerId: worker.workerId, pool: worker.pool, languages: worker.languages, concurrency: config.concurrency, running: worker.running(), childrenStarted: worker.childrenStarted() })
      })
      return worker.workerId
    }))
).pipe(Command.withDescription("Serve a worker: runs the code tools of the namespace's sessions in sandboxed subprocesses."))
