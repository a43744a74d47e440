/**
 * A `nats-server` from the `PATH` for `jitbox dev`: JetStream stored in a directory, listening on
 * 127.0.0.1 only (no authorization: this machine's processes alone reach it), ready once it
 * sends its `INFO` to a probe connection. It lives in a scope: SIGTERM when the scope closes, then
 * SIGKILL if it has not exited within 5 s.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { spawn } from "node:child_process"
import * as net from "node:net"
import * as Terminate from "./Terminate.js"

/** The server could not start. @since 0.1.0 @category errors */
export class NatsServerError extends Schema.TaggedError<NatsServerError>()("NatsServerError", {
  reason: Schema.Literal("Missing", "Exited", "NotReady"),
  detail: Schema.String
}) {
  override get message(): string {
    return `nats-server ${this.reason}: ${this.detail}`
  }
}

/** @since 0.1.0 @category models */
export interface LocalNatsServer {
  /** `nats://127.0.0.1:<port>`. */
  readonly url: string
  readonly port: number
  readonly pid: number
}

/** @since 0.1.0 @category models */
export interface LocalNatsServerOptions {
  /** Where JetStream keeps its data (the parent of its `jetstream` directory). */
  readonly directory: string
  /** The port; default a free one. */
  readonly port?: number | undefined
  /** The binary (default `nats-server`, found on the `PATH`). */
  readonly binary?: string | undefined
  /** How long it may take to answer (default 10 s). */
  readonly readyTimeoutMs?: number | undefined
}

/**
 * A TCP port of 127.0.0.1 that nothing listens on now.
 *
 * @since 0.1.0
 * @category constructors
 */
export const freePort: Effect.Effect<number> = Effect.async((resume) => {
  const probe = net.createServer()
  probe.listen(0, "127.0.0.1", () => {
    const address = probe.address()
    probe.close(() => resume(typeof address === "object" && address !== null ? Effect.succeed(address.port) : Effect.die(new Error("no port"))))
  })
})

/** Whether a connection to the port receives a NATS `INFO` line. */
const answersInfo = (port: number): Effect.Effect<boolean> =>
  Effect.async((resume) => {
    const socket = net.connect({ host: "127.0.0.1", port })
    let seen = ""
    const done = (ok: boolean) => {
      socket.destroy()
      resume(Effect.succeed(ok))
    }
    socket.setTimeout(1_000, () => done(false))
    socket.on("data", (chunk) => {
      seen += chunk.toString("latin1")
      if (seen.length >= 5) done(seen.startsWith("INFO "))
    })
    socket.on("error", () => done(false))
    socket.on("close", () => done(false))
  })

/** The server process, stopped when the scope closes; `log` keeps its last lines for an error. */
const spawnServer = (binary: string, args: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] })
      const lines: Array<string> = []
      const record = (chunk: Buffer) => {
        lines.push(...chunk.toString("utf8").split("\n").filter((line) => line !== ""))
        lines.splice(0, Math.max(0, lines.length - 40))
      }
      child.stdout!.on("data", record)
      child.stderr!.on("data", record)
      let failure: NatsServerError | undefined
      child.once("error", (error: NodeJS.ErrnoException) => {
        failure = new NatsServerError({ reason: error.code === "ENOENT" ? "Missing" : "Exited", detail: `${binary}: ${error.message} (install nats-server and put it on the PATH)` })
      })
      child.once("exit", (code, signal) => {
        failure ??= new NatsServerError({ reason: "Exited", detail: `${binary} ${args.join(" ")} exited (${code ?? signal}):\n${lines.slice(-20).join("\n")}` })
      })
      return { child, failure: () => failure }
    }),
    ({ child }) => Terminate.terminate(child, 5_000)
  )

/**
 * A server for the life of the scope, ready to take connections.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: LocalNatsServerOptions): Effect.Effect<LocalNatsServer, NatsServerError, Scope.Scope> =>
  Effect.gen(function*() {
    const port = options.port ?? (yield* freePort)
    const binary = options.binary ?? "nats-server"
    const timeoutMs = options.readyTimeoutMs ?? 10_000
    const server = yield* spawnServer(binary, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", options.directory])
    const probe = Effect.suspend(() => {
      const failure = server.failure()
      if (failure !== undefined) return Effect.fail(failure)
      return Effect.flatMap(answersInfo(port), (ok) => ok ? Effect.void : Effect.fail(new NatsServerError({ reason: "NotReady", detail: `no INFO on port ${port} within ${timeoutMs} ms` })))
    })
    yield* probe.pipe(
      Effect.retry({ schedule: Schedule.spaced("50 millis"), while: (error) => error.reason === "NotReady" }),
      Effect.timeoutFail({ duration: timeoutMs, onTimeout: () => new NatsServerError({ reason: "NotReady", detail: `no INFO on port ${port} within ${timeoutMs} ms` }) })
    )
    return { url: `nats://127.0.0.1:${port}`, port, pid: server.child.pid! }
  })
