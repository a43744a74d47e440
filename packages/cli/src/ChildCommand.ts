/**
 * A `jitbox` command as a child process, for `jitbox dev`: the same executable as this process
 * (its node, node flags and script, so a `jitbox` run from its sources starts its children from
 * them too), without the `JITBOX_*` variables of this environment (the flags say everything). Each
 * line it prints is forwarded prefixed with its name (`[worker-1] …`), stdout to stdout and
 * stderr to stderr. It lives in a scope: SIGTERM when the scope closes (it stops as it does
 * on Ctrl-C: a worker drains), SIGKILL if it has not exited within `stopAfterMs`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { type ChildProcess, spawn } from "node:child_process"
import * as Terminate from "./Terminate.js"

/** A child did not start serving. @since 0.1.0 @category errors */
export class ChildCommandError extends Schema.TaggedError<ChildCommandError>()("ChildCommandError", {
  name: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.name}: ${this.detail}`
  }
}

/** @since 0.1.0 @category models */
export interface ChildCommand {
  readonly name: string
  readonly pid: number
  /** Its `ready …` line; fails `ChildCommandError` when it exits before, or prints none within `timeoutMs`. */
  readonly ready: (timeoutMs: number) => Effect.Effect<string, ChildCommandError>
  /** Fails `ChildCommandError` when it exits (while it should serve). */
  readonly exited: Effect.Effect<never, ChildCommandError>
}

/** How this process was started: node, its flags and the script, to start another command the same way. */
const self = (): ReadonlyArray<string> => [...process.execArgv, process.argv[1]!]

const environment = (): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("JITBOX_")))

/** Calls `onLine` with each whole line of `stream`, and `write` with it prefixed by `name`. */
const forwardLines = (stream: NodeJS.ReadableStream, name: string, write: (text: string) => void, onLine: (line: string) => void) => {
  let rest = ""
  stream.on("data", (chunk: Buffer) => {
    const lines = (rest + chunk.toString("utf8")).split("\n")
    rest = lines.pop()!
    for (const line of lines) {
      write(`[${name}] ${line}\n`)
      onLine(line)
    }
  })
}

/** What a child printed: its `ready` line once seen, and its last lines (for an error). */
interface Output {
  ready: string | undefined
  readonly last: Array<string>
}

const keep = (output: Output, line: string, stdout: boolean) => {
  if (stdout && output.ready === undefined && line.startsWith("ready ")) output.ready = line
  output.last.push(line)
  output.last.splice(0, Math.max(0, output.last.length - 20))
}

const readyLine = (name: string, child: ChildProcess, output: Output) => (timeoutMs: number) =>
  Effect.async<string, ChildCommandError>((resume) => {
    const check = () => {
      const found = output.ready
      if (found !== undefined) return finish(Effect.succeed(found))
      if (child.exitCode !== null || child.signalCode !== null) {
        finish(Effect.fail(new ChildCommandError({ name, detail: `exited (${child.exitCode ?? child.signalCode}) before it served:\n${output.last.join("\n")}` })))
      }
    }
    const finish = (result: Effect.Effect<string, ChildCommandError>) => {
      child.stdout!.off("data", check)
      child.off("exit", check)
      resume(result)
    }
    child.stdout!.on("data", check)
    child.on("exit", check)
    check()
  }).pipe(
    Effect.timeoutFail({ duration: timeoutMs, onTimeout: () => new ChildCommandError({ name, detail: `not ready within ${timeoutMs} ms:\n${output.last.join("\n")}` }) })
  )

/**
 * Starts `jitbox <args>` as the child `name`, stopped when the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (name: string, args: ReadonlyArray<string>, options: { readonly stopAfterMs: number }): Effect.Effect<ChildCommand, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => spawn(process.execPath, [...self(), ...args], { env: environment(), stdio: ["ignore", "pipe", "pipe"] })),
    (child) => Terminate.terminate(child, options.stopAfterMs)
  ).pipe(Effect.map((child) => {
    const output: Output = { ready: undefined, last: [] }
    forwardLines(child.stdout!, name, (text) => process.stdout.write(text), (line) => keep(output, line, true))
    forwardLines(child.stderr!, name, (text) => process.stderr.write(text), (line) => keep(output, line, false))
    const exited = Effect.async<never, ChildCommandError>((resume) => {
      const failed = () => resume(Effect.fail(new ChildCommandError({ name, detail: `exited (${child.exitCode ?? child.signalCode}) while serving:\n${output.last.join("\n")}` })))
      if (child.exitCode !== null || child.signalCode !== null) return failed()
      child.once("exit", failed)
      return Effect.sync(() => child.off("exit", failed))
    })
    return { name, pid: child.pid ?? -1, ready: readyLine(name, child, output), exited }
  }))
