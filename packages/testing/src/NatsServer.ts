/**
 * A real `nats-server` for tests (and for `jitbox dev`): started on a free port of 127.0.0.1 (or `port`) with JetStream stored in a
 * temporary directory, ready (it has sent its `INFO` to a probe connection) before it is handed
 * out, and gone with its directory when its scope closes. The binary is `NATS_SERVER_BIN`, else
 * `/usr/sbin/nats-server` (Debian's package), else `nats-server` on the `PATH`.
 *
 * `config` starts it with a configuration file (users with passwords and permissions, say), for
 * tests of authorization.
 *
 * Faults for tests: `stop` (SIGTERM, the server shuts down cleanly), `kill` (SIGKILL), `restart`
 * (stop if running, then start again on the same port with the same store, so clients reconnect
 * to the same URL and JetStream data survives).
 *
 * Two faces: `make`, a scoped Effect resource, and `start`, a Promise for vitest's
 * `beforeAll` / `afterAll`:
 *
 *     let server: NatsServer.Handle
 *     beforeAll(async () => { server = await NatsServer.start() })
 *     afterAll(() => server?.close())
 *
 * @since 0.1.0
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/** @since 0.1.0 @category errors */
export class NatsServerError extends Data.TaggedError("NatsServerError")<{
  readonly reason: "BinaryMissing" | "StartFailed" | "NotReady"
  readonly detail: string
}> {
  override get message(): string {
    return `${this.reason}: ${this.detail}`
  }
}

/** @since 0.1.0 @category models */
export interface NatsServerOptions {
  /** The binary; default `NATS_SERVER_BIN`, `/usr/sbin/nats-server`, then `nats-server` on the PATH. */
  readonly binary?: string | undefined
  /** The port of 127.0.0.1 to listen on (default: a free one, probed; another is tried if it is taken meanwhile). */
  readonly port?: number | undefined
  /** How long a start may take before it fails `NotReady` (default 10 000 ms). */
  readonly readyTimeoutMs?: number | undefined
  /**
   * The text of a server configuration file (users, permissions, …), written to the server's
   * directory and passed with `-c`. The fixture's own flags (address, port, JetStream and its
   * store) still apply and win over the file.
   */
  readonly config?: string | undefined
  /** Environment variables of the server process besides this one's (the variables its configuration reads, such as passwords). */
  readonly env?: Readonly<Record<string, string>> | undefined
}

/** The running server, as the Effect resource gives it. @since 0.1.0 @category models */
export interface NatsServer {
  /** `nats://127.0.0.1:<port>`: the same across restarts. */
  readonly url: string
  readonly port: number
  /** Where JetStream keeps its data: the same across restarts, removed when the scope closes. */
  readonly storeDir: string
  /** SIGTERM, then waits for the process to exit (SIGKILL after 5 s). Does nothing when stopped. */
  readonly stop: Effect.Effect<void>
  /** SIGKILL, then waits for the process to exit. Does nothing when stopped. */
  readonly kill: Effect.Effect<void>
  /** Stops the server if it runs, then starts it again on the same port and store and waits until it is ready. */
  readonly restart: Effect.Effect<void, NatsServerError>
  /** The last lines the server logged, for failure messages. */
  readonly log: () => string
}

/** The running server, as the Promise helper gives it. @since 0.1.0 @category models */
export interface Handle {
  readonly url: string
  readonly port: number
  readonly storeDir: string
  readonly stop: () => Promise<void>
  readonly kill: () => Promise<void>
  readonly restart: () => Promise<void>
  readonly log: () => string
  /** Stops the server and removes its directory; safe to call twice. */
  readonly close: () => Promise<void>
}

const defaultBinary = (): string => {
  const fromEnv = process.env["NATS_SERVER_BIN"]
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv
  return fs.existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "nats-server"
}

/** A TCP port of 127.0.0.1 that nothing listens on now. @since 0.1.0 @category constructors */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = net.createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port")))
    })
  })

/** Resolves once a connection to the port receives the server's `INFO` line. */
const answersInfo = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port })
    let seen = ""
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1_000, () => done(false))
    socket.on("data", (chunk) => {
      seen += chunk.toString("latin1")
      if (seen.startsWith("INFO ")) done(true)
      else if (seen.length >= 5) done(false)
    })
    socket.on("error", () => done(false))
    socket.on("close", () => done(false))
  })

const liveProcesses = new Set<ChildProcess>()
let exitHookInstalled = false
/** A test process that exits without closing its scope must not leave servers behind. */
const installExitHook = () => {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on("exit", () => {
    for (const child of liveProcesses) child.kill("SIGKILL")
  })
}

const maxLogLines = 80

/** One server: a port and a store directory that outlive each process started on them. */
class ServerProcess {
  private child: ChildProcess | undefined
  private exited: Promise<void> = Promise.resolve()
  private lines: Array<string> = []
  readonly storeDir: string

  constructor(
    readonly binary: string,
    readonly port: number,
    readonly root: string,
    private readonly readyTimeoutMs: number,
    private readonly config: string | undefined,
    private readonly env: Readonly<Record<string, string>> = {}
  ) {
    this.storeDir = path.join(root, "jetstream")
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`
  }

  log = (): string => this.lines.join("\n")

  private record(chunk: Buffer): void {
    for (const line of chunk.toString("utf8").split("\n")) if (line !== "") this.lines.push(line)
    if (this.lines.length > maxLogLines) this.lines = this.lines.slice(-maxLogLines)
  }

  async start(): Promise<void> {
    if (this.child !== undefined) return
    // `-sd` names the parent of JetStream's own `jetstream` directory.
    const args = ["-a", "127.0.0.1", "-p", String(this.port), "-js", "-sd", this.root]
    if (this.config !== undefined) {
      const file = path.join(this.root, "nats-server.conf")
      fs.writeFileSync(file, this.config)
      args.unshift("-c", file)
    }
    const child = spawn(this.binary, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...this.env } })
    let exitCode: number | null | undefined
    let spawnError: Error | undefined
    this.exited = new Promise<void>((resolve) => {
      child.once("exit", (code, signal) => {
        exitCode = code ?? (signal === null ? null : -1)
        liveProcesses.delete(child)
        if (this.child === child) this.child = undefined
        resolve()
      })
      child.once("error", (error) => {
        spawnError = error
        liveProcesses.delete(child)
        if (this.child === child) this.child = undefined
        resolve()
      })
    })
    child.stdout!.on("data", (chunk: Buffer) => this.record(chunk))
    child.stderr!.on("data", (chunk: Buffer) => this.record(chunk))
    this.child = child
    liveProcesses.add(child)
    installExitHook()

    const deadline = Date.now() + this.readyTimeoutMs
    while (Date.now() < deadline) {
      if (spawnError !== undefined) {
        throw new NatsServerError({
          reason: (spawnError as NodeJS.ErrnoException).code === "ENOENT" ? "BinaryMissing" : "StartFailed",
          detail: `${this.binary}: ${spawnError.message} (set NATS_SERVER_BIN to the nats-server binary)`
        })
      }
      if (exitCode !== undefined) {
        throw new NatsServerError({ reason: "StartFailed", detail: `${this.binary} ${args.join(" ")} exited (${exitCode}):\n${this.log()}` })
      }
      if (await answersInfo(this.port)) return
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    await this.kill()
    throw new NatsServerError({ reason: "NotReady", detail: `no INFO on port ${this.port} within ${this.readyTimeoutMs} ms:\n${this.log()}` })
  }

  private async signal(signal: NodeJS.Signals, forceAfterMs: number | undefined): Promise<void> {
    const child = this.child
    if (child === undefined) return
    child.kill(signal)
    if (forceAfterMs === undefined) return this.exited
    const timer = setTimeout(() => child.kill("SIGKILL"), forceAfterMs)
    await this.exited
    clearTimeout(timer)
  }

  stop = (): Promise<void> => this.signal("SIGTERM", 5_000)
  kill = (): Promise<void> => this.signal("SIGKILL", undefined)

  restart = async (): Promise<void> => {
    await this.stop()
    await this.start()
  }

  close = async (): Promise<void> => {
    await this.kill()
    await fs.promises.rm(this.root, { recursive: true, force: true })
  }
}

const open = async (options: NatsServerOptions): Promise<ServerProcess> => {
  const binary = options.binary ?? defaultBinary()
  const readyTimeoutMs = options.readyTimeoutMs ?? 10_000
  let lastError: unknown
  // Another process may take the free port between the probe and the server's bind: try again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-nats-"))
    const server = new ServerProcess(binary, options.port ?? await freePort(), root, readyTimeoutMs, options.config, options.env)
    try {
      await server.start()
      return server
    } catch (error) {
      await server.close()
      lastError = error
      const portTaken = error instanceof NatsServerError && error.reason === "StartFailed" && /address already in use/i.test(error.detail)
      if (!portTaken || options.port !== undefined) break
    }
  }
  throw lastError
}

const toError = (error: unknown): NatsServerError =>
  error instanceof NatsServerError ? error : new NatsServerError({ reason: "StartFailed", detail: String(error) })

/**
 * A server for the life of the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: NatsServerOptions = {}): Effect.Effect<NatsServer, NatsServerError, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.tryPromise({ try: () => open(options), catch: toError }),
      (server) => Effect.promise(server.close)
    ),
    (server) => ({
      url: server.url,
      port: server.port,
      storeDir: server.storeDir,
      stop: Effect.promise(server.stop),
      kill: Effect.promise(server.kill),
      restart: Effect.tryPromise({ try: server.restart, catch: toError }),
      log: server.log
    })
  )

/**
 * A server until `close()`: for vitest's `beforeAll` / `afterAll` (one server per test file).
 * Rejects with `NatsServerError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const start = async (options: NatsServerOptions = {}): Promise<Handle> => {
  const server = await open(options)
  let closing: Promise<void> | undefined
  return {
    url: server.url,
    port: server.port,
    storeDir: server.storeDir,
    stop: server.stop,
    kill: server.kill,
    restart: server.restart,
    log: server.log,
    close: () => closing ??= server.close()
  }
}
