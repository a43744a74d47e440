/**
 * `jitbox dev`: a whole namespace on this machine, in one command, to try jitbox with:
 *
 * - a `nats-server` (`NATS_SERVER_BIN`, else Debian's `/usr/sbin/nats-server`, else the `PATH`; started by `@jitbox/testing`'s `NatsServer`), with JetStream in a temporary directory, on 127.0.0.1 (a free
 *   port, or `--port`);
 * - a coordinator (`jitbox coordinator`) with one execution profile, `dev`, that allows everything
 *   the README shows: JavaScript (and TypeScript), Python and Bash tools, long-running tools,
 *   background invocations (`start_invocation`, `await_invocations`, `cancel_invocation`) and a
 *   large budget (`devPolicy`);
 * - `--workers N` workers (`jitbox worker --id dev-<i> --log-invocations`, default 2);
 * - a session host (`jitbox sessions --profile dev --deployment-consent`), whose sessions ask for
 *   the whole profile.
 *
 * Each part is the real `jitbox` command, a child process of this one started the way this one was
 * (`ChildCommand`): what runs here is what runs on several machines, each part stops on its own
 * signal exactly as it does in production, and what each prints is forwarded prefixed with its
 * name. Once every part serves, it prints how to connect (the server URL, the namespace and the
 * commands to try next) and `ready dev <url> namespace <namespace>`. On Ctrl-C (SIGINT), SIGTERM
 * or SIGHUP it stops the parts in order (the session host, the workers, the coordinator, then
 * NATS), removes the temporary directory, prints `stopped …` and exits 0.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import { HarnessError, type JitPolicy } from "@jitbox/core"
import { Ids } from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ChildCommand from "./ChildCommand.js"
import * as Connection from "./Connection.js"
import * as Serve from "./Serve.js"

/** The policy of the profile `dev`, and of the sessions its host admits. @since 0.1.0 @category constants */
export const devPolicy = {
  allowedLanguages: ["JavaScript", "Python", "Bash"],
  allowLongRunning: true,
  allowAsyncOperations: true,
  maximumTools: 16,
  maximumRepairs: 8,
  maximumInvocations: 6_400,
  maximumConcurrentInvocations: 8,
  sharedCatalog: "publish"
} as const satisfies JitPolicy.JitPolicyInput

/** @since 0.1.0 @category constants */
export const profileName = "dev"

/** @since 0.1.0 @category options */
export const port = Options.integer("port").pipe(
  Options.withDescription("The port of the NATS server (on 127.0.0.1); default a free one"),
  Options.optional
)

/** @since 0.1.0 @category options */
export const namespace = Options.text("namespace").pipe(
  Options.withDescription(`The namespace served (letters, digits, _ and -; default ${Connection.defaults.namespace})`),
  Options.withDefault(Connection.defaults.namespace)
)

/** @since 0.1.0 @category options */
export const workers = Options.integer("workers").pipe(
  Options.withDescription("How many workers to start (default 2)"),
  Options.withDefault(2)
)

/** What `jitbox dev` can fail with. @since 0.1.0 @category errors */
export type DevCommandError = HarnessError.ConfigError | NatsServer.NatsServerError | ChildCommand.ChildCommandError

/** How long a part may take to start serving, and to stop. */
const bounds = { readyMs: 120_000, stopMs: 15_000 } as const

/** A fresh temporary directory, removed with everything in it when the scope closes. */
const temporaryDirectory = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-dev-"))),
  (directory) => Effect.sync(() => fs.rmSync(directory, { recursive: true, force: true }))
)

/** SIGHUP (the terminal closed) stops the namespace as SIGTERM does, for the life of the scope. */
const hangUpStops = Effect.acquireRelease(
  Effect.sync(() => {
    const onHangUp = () => process.kill(process.pid, "SIGTERM")
    process.on("SIGHUP", onHangUp)
    return onHangUp
  }),
  (onHangUp) => Effect.sync(() => process.off("SIGHUP", onHangUp))
)

/**
 * What `jitbox dev` prints once the namespace serves: where it is and the commands to try.
 *
 * @since 0.1.0
 * @category formatting
 */
export const instructions = (served: {
  readonly url: string
  readonly namespace: string
  readonly directory: string
  readonly workers: ReadonlyArray<string>
}): string => {
  const target = `--server ${served.url}${served.namespace === Connection.defaults.namespace ? "" : ` --namespace ${served.namespace}`}`
  return [
    `jitbox dev: namespace ${served.namespace} on ${served.url}`,
    `  nats-server   JetStream in ${served.directory} (removed when this stops)`,
    `  coordinator   profile ${profileName}: JavaScript and TypeScript, Python, Bash; long-running tools; background invocations; the shared catalog; ${devPolicy.maximumInvocations} invocations a session`,
    `  workers       ${served.workers.join(", ")} (pool default)`,
    `  sessions      a session host: each session is admitted under profile ${profileName}`,
    "",
    "try:",
    `  jitbox mcp --session demo --create ${target}`,
    `  jitbox status ${target}`,
    `  jitbox events tail ${target}`,
    `  export JITBOX_SERVER=${served.url}${served.namespace === Connection.defaults.namespace ? "" : ` JITBOX_NAMESPACE=${served.namespace}`}`,
    "",
    "Ctrl-C stops everything."
  ].join("\n")
}

/** The checked options: the namespace, the port and the count of workers. */
const check = (config: { readonly namespace: string; readonly port: Option.Option<number>; readonly workers: number }) =>
  Effect.gen(function*() {
    const checked = yield* Ids.decode(Ids.Namespace, "--namespace")(config.namespace)
    if (Option.isSome(config.port) && (config.port.value < 1 || config.port.value > 65_535)) {
      return yield* new HarnessError.ConfigError({ option: "--port", detail: `a port is 1 to 65535, got ${config.port.value}` })
    }
    if (!Number.isSafeInteger(config.workers) || config.workers < 1 || config.workers > 64) {
      return yield* new HarnessError.ConfigError({ option: "--workers", detail: `1 to 64 workers, got ${config.workers}` })
    }
    return checked
  })

/** @since 0.1.0 @category commands */
export const command = Command.make("dev", { port, namespace, workers }, (config): Effect.Effect<never, DevCommandError> => {
  // once every part serves: the first to exit stops the namespace (the others stop with it) and fails the command
  let anyExited: Effect.Effect<never, ChildCommand.ChildCommandError> = Effect.never
  return Serve.untilInterrupted(Effect.gen(function*() {
    const served = yield* check(config)
    const directory = yield* temporaryDirectory
    yield* hangUpStops
    const nats = yield* NatsServer.make({ port: Option.getOrUndefined(config.port) })
    const profiles = path.join(directory, "profiles.json")
    fs.writeFileSync(profiles, JSON.stringify({ profiles: [{ name: profileName, policy: devPolicy }] }))
    const common = ["--server", nats.url, "--namespace", served]
    // started in this order, so stopped in the reverse one: the session host first, the coordinator last
    const parts = [yield* ChildCommand.make("coordinator", ["coordinator", ...common, "--profiles", profiles], { stopAfterMs: bounds.stopMs })]
    const workerIds = Array.from({ length: config.workers }, (_, index) => `dev-${index + 1}`)
    for (const id of workerIds) {
      parts.push(yield* ChildCommand.make(`worker ${id}`, ["worker", ...common, "--id", id, "--log-invocations", "--grace-ms", "2000"], { stopAfterMs: bounds.stopMs }))
    }
    const sessionsArgs = ["sessions", ...common, "--profile", profileName, "--deployment-consent", "--policy", JSON.stringify(devPolicy)]
    parts.push(yield* ChildCommand.make("sessions", sessionsArgs, { stopAfterMs: bounds.stopMs }))
    yield* Effect.forEach(parts, (part) => part.ready(bounds.readyMs), { concurrency: "unbounded", discard: true })
    // raceAll waits for the first success: each exit, flipped, is one
    anyExited = Effect.flatMap(Effect.raceAll(parts.map((part) => Effect.flip(part.exited))), Effect.fail)
    yield* Console.log(instructions({ url: nats.url, namespace: served, directory: nats.storeDir, workers: workerIds }))
    return `dev ${nats.url} namespace ${served}`
  }), () => anyExited)
}).pipe(
  Command.withDescription(
    "Run a whole namespace on this machine: a nats-server from the PATH (JetStream in a temporary directory), a coordinator whose profile allows every language and background invocations, --workers workers and a session host, as jitbox child processes; Ctrl-C stops them all."
  )
)
