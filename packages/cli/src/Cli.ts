/**
 * The `jitbox` command: `jitbox dev`, a whole namespace on this machine; `jitbox coordinator`,
 * `jitbox worker` and `jitbox sessions`, each serving one part of a namespace over NATS until
 * SIGTERM or SIGINT; `jitbox mcp`, a session as an MCP
 * server; and `jitbox bench`, timing a tool. `main` is what the `jitbox` binary
 * runs: it parses the arguments, serves, and reports a failure on stderr with its typed error
 * (a bad argument is reported by the parser itself, with the help of the command). The exit codes
 * are `ExitCode`'s. The operator's commands (`status`, `events tail`, `snapshot`) read a
 * namespace and serve nothing; `catalog` also approves and revokes its shared tools.
 *
 * @since 0.1.0
 */
import { Command, ValidationError } from "@effect/cli"
import type { CliApp } from "@effect/cli"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { createRequire } from "node:module"
import * as AuthCommand from "./AuthCommand.js"
import * as BenchCommand from "./BenchCommand.js"
import * as CatalogCommand from "./CatalogCommand.js"
import * as CoordinatorCommand from "./CoordinatorCommand.js"
import * as DevCommand from "./DevCommand.js"
import * as EventsCommand from "./EventsCommand.js"
import * as ExitCode from "./ExitCode.js"
import * as McpCommand from "./McpCommand.js"
import * as SessionsCommand from "./SessionsCommand.js"
import * as SnapshotCommand from "./SnapshotCommand.js"
import * as StatusCommand from "./StatusCommand.js"
import * as WorkerCommand from "./WorkerCommand.js"

/** This package's version, from its manifest (found by the package's name, so from its sources, `dist` and the bundle alike). @since 0.1.0 @category constants */
export const version: string = (createRequire(import.meta.url)("@jitbox/cli/package.json") as { readonly version: string }).version

/** What serving any of the commands can fail with (besides a bad argument). @since 0.1.0 @category errors */
export type CliError =
  | CoordinatorCommand.CoordinatorCommandError
  | DevCommand.DevCommandError
  | WorkerCommand.WorkerCommandError
  | SessionsCommand.SessionsCommandError
  | McpCommand.McpCommandError
  | BenchCommand.BenchCommandError
  | StatusCommand.StatusCommandError
  | EventsCommand.EventsCommandError
  | SnapshotCommand.SnapshotCommandError
  | CatalogCommand.CatalogCommandError
  | AuthCommand.AuthCommandError
  | ExitCode.ExitWith

const command = Command.make("jitbox").pipe(
  Command.withDescription(
    "Run a whole namespace on this machine (dev), serve the parts of a jitbox namespace over NATS (its coordinator, workers and session hosts), or a session as an MCP server; look at a namespace: status, events, snapshots, its shared tool catalog; time a tool."
  ),
  Command.withSubcommands([
    DevCommand.command,
    CoordinatorCommand.command,
    WorkerCommand.command,
    SessionsCommand.command,
    McpCommand.command,
    StatusCommand.command,
    EventsCommand.command,
    SnapshotCommand.command,
    CatalogCommand.command,
    BenchCommand.command,
    AuthCommand.command
  ])
)

/**
 * Runs the command line `argv` (as `process.argv`: the executable and script first).
 *
 * @since 0.1.0
 * @category running
 */
export const run: (argv: ReadonlyArray<string>) => Effect.Effect<void, CliError | ValidationError.ValidationError, CliApp.CliApp.Environment> = Command.run(command, {
  name: "jitbox",
  version
})

/** What a failure says on stderr: its tag and its message. */
const describe = (error: unknown): string => {
  if (error instanceof Error) {
    const tag = (error as { readonly _tag?: unknown })._tag
    return typeof tag === "string" && tag !== error.message ? `${tag}: ${error.message}` : error.message
  }
  return String(error)
}

/**
 * Reports why the command failed on stderr (`jitbox: <tag>: <message>`); nothing for an argument
 * error (the parser printed it) or an interruption (a signal: a clean stop).
 *
 * @since 0.1.0
 * @category running
 */
export const report = (cause: Cause.Cause<unknown>): Effect.Effect<void> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.void
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    return ValidationError.isValidationError(failure.value) || failure.value instanceof ExitCode.ExitWith
      ? Effect.void
      : Console.error(`jitbox: ${describe(failure.value)}`)
  }
  return Console.error(`jitbox: unexpected failure\n${Cause.pretty(cause)}`)
}

/**
 * `run` with failures reported by `report`: the program of the `jitbox` binary.
 *
 * @since 0.1.0
 * @category running
 */
export const main = (argv: ReadonlyArray<string>): Effect.Effect<void, CliError | ValidationError.ValidationError, CliApp.CliApp.Environment> =>
  run(argv).pipe(Effect.tapErrorCause(report))
