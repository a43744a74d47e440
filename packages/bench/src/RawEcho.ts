/**
 * The raw floor's child: one warm Node child running a JSON-lines echo loop, launched as the
 * sandbox launches a JavaScript tool's child (NodeRunner through the sandbox's `Spawn.launch`):
 * prlimit (address space, CPU, files, processes, file size, no core) → bubblewrap (read-only root,
 * the package mounted read-only, a tmpfs working directory, the seccomp filter without fork) → the
 * same Node binary with the permission model (`--permission --allow-fs-read=<package>`), the
 * sandbox's Node flags and `--max-old-space-size`, a scrubbed environment, its own process group and
 * the sandbox's uid. Only what the child runs differs: an echo loop instead of the jitbox child
 * runtime and the tool. No jitbox code is on a round trip's path.
 *
 * `make` is scoped: closing the scope kills the child's process group and removes its directories.
 *
 * @since 0.1.0
 */
import { Isolation, SandboxConfig, Spawn } from "@jitbox/sandbox"
import * as Effect from "effect/Effect"
import { BenchSetupError, describe } from "./BenchError.js"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as path from "node:path"

/** @since 0.1.0 @category models */
export interface RawEcho {
  /**
   * Sends `args` (JSON text) to the child; resolves with the line it answers (`{"id":…,"value":<args>}`),
   * rejects once the child has exited.
   */
  readonly roundTrip: (args: string) => Promise<string>
}

/**
 * The raw child's program: reads JSON lines `{"id":…,"args":…}` and answers `{"id":…,"value":<args>}`,
 * nothing else (the floor a sandboxed JavaScript tool's round trip is compared with).
 *
 * @since 0.1.0
 * @category constants
 */
export const echoLoop = `let b = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (c) => {
  b += c
  let i
  while ((i = b.indexOf("\\n")) !== -1) {
    const m = JSON.parse(b.slice(0, i))
    b = b.slice(i + 1)
    process.stdout.write(JSON.stringify({ id: m.id, value: m.args }) + "\\n")
  }
})
`

/**
 * Starts a child running `program` (a JSON-lines loop answering `{"id":…,…}` per line, as
 * `echoLoop` does) with the sandbox's default configuration, and waits for a first round trip.
 *
 * @since 0.1.0
 * @category constructors
 */
export const launch = (program: string): Effect.Effect<RawEcho, BenchSetupError, Scope.Scope> => Effect.gen(function*() {
  const config = SandboxConfig.make({})
  const iso = Isolation.detect(config)
  const { child } = yield* Effect.acquireRelease(
    Effect.sync(() => {
      const rawDir = fs.mkdtempSync(path.join(config.tmpDir, "jitbox-bench-raw-"))
      fs.chmodSync(rawDir, 0o755)
      const rawWork = fs.mkdtempSync(path.join(config.tmpDir, "jitbox-bench-raw-work-"))
      if (iso.runAs !== undefined) fs.chownSync(rawWork, iso.runAs.uid, iso.runAs.gid)
      fs.writeFileSync(path.join(rawDir, "echo.mjs"), program)
      fs.chmodSync(path.join(rawDir, "echo.mjs"), 0o644)
      const pkg: Spawn.Mount = { host: rawDir, inside: iso.bwrap !== undefined ? "/mnt/pkg" : rawDir, writable: false }
      const work: Spawn.WorkDir = iso.bwrap !== undefined ? { inside: "/mnt/work", host: undefined } : { inside: rawWork, host: rawWork }
      const child = Spawn.launch(iso, config, {
        ...Isolation.nodeCommand(iso, config, pkg.inside, "echo.mjs"),
        mounts: [pkg],
        workDir: work,
        marker: "jitbox-bench-raw",
        // the echo loop closes no inherited descriptor: "self" only spares it the host's listing
        inheritedDescriptors: "self"
      })
      const cleanup = () => {
        try {
          process.kill(-child.pid!, "SIGKILL")
        } catch {
          child.kill("SIGKILL")
        }
        fs.rmSync(rawDir, { recursive: true, force: true })
        fs.rmSync(rawWork, { recursive: true, force: true })
      }
      return { child, cleanup }
    }),
    ({ cleanup }) => Effect.sync(cleanup)
  )
  const waiting = new Map<number, (line: string) => void>()
  let buffer = ""
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (chunk: string) => {
    buffer += chunk
    let i
    while ((i = buffer.indexOf("\n")) !== -1) {
      const line = buffer.slice(0, i)
      buffer = buffer.slice(i + 1)
      const id = Number(/^\{"id":(\d+)/.exec(line)?.[1])
      const answer = waiting.get(id)
      waiting.delete(id)
      answer?.(line)
    }
  })
  child.stderr.resume()
  child.stdin.on("error", () => undefined)
  const rejecters = new Map<number, (error: Error) => void>()
  let exited: Error | undefined
  child.once("exit", (code, signal) => {
    exited = new Error(`the raw echo child exited (${code ?? signal})`)
    for (const reject of rejecters.values()) reject(exited)
    rejecters.clear()
    waiting.clear()
  })
  let ids = 0
  const roundTrip = (args: string) =>
    new Promise<string>((resolve, reject) => {
      if (exited !== undefined) return reject(exited)
      const id = ++ids
      rejecters.set(id, reject)
      waiting.set(id, (line) => {
        rejecters.delete(id)
        resolve(line)
      })
      child.stdin.write(`{"id":${id},"args":${args}}\n`)
    })
  yield* Effect.tryPromise({
    try: () => roundTrip("{}"),
    catch: (error) => new BenchSetupError({ step: "starting the raw echo child", detail: describe(error) })
  })
  return { roundTrip }
})

/**
 * Starts the echo child (`echoLoop`) and waits for a first round trip.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<RawEcho, BenchSetupError, Scope.Scope> = launch(echoLoop)
