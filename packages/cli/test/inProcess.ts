/**
 * `jitbox <args>` run in the test's own process (`Cli.run`, the binary's parser and handlers),
 * with its console captured and, when given, the environment its `Config` reads.
 */
import { NodeContext } from "@effect/platform-node"
import * as ConfigProvider from "effect/ConfigProvider"
import type * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import { Cli } from "../src/index.js"
import { plain } from "./cliProcess.js"

/** A console that keeps what is printed. */
export const capturing = (): { readonly console: Console.Console; readonly out: Array<string>; readonly err: Array<string> } => {
  const out: Array<string> = []
  const err: Array<string> = []
  const base = Effect.runSync(Effect.console)
  const console: Console.Console = {
    ...base,
    log: (...args) => Effect.sync(() => void out.push(args.join(" "))),
    error: (...args) => Effect.sync(() => void err.push(args.join(" ")))
  }
  return { console, out, err }
}

/** Runs `jitbox <args>` to its end (at most 20 s); answers its exit and what it printed. */
export const inProcess = async (
  args: ReadonlyArray<string>,
  env?: Record<string, string>
): Promise<{ readonly exit: Exit.Exit<void, unknown>; readonly stdout: string; readonly stderr: string }> => {
  const captured = capturing()
  const run = Cli.run(["node", "jitbox", ...args]).pipe(
    Effect.provide(NodeContext.layer),
    Effect.withConsole(captured.console),
    Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error(`jitbox ${args.join(" ")} did not end`) })
  )
  const exit = await Effect.runPromiseExit(env === undefined ? run : run.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))))
  return { exit, stdout: plain(captured.out.join("\n")), stderr: plain(captured.err.join("\n")) }
}
