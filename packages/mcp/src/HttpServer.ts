/**
 * Sessions served over MCP Streamable HTTP (the SDK's `StreamableHTTPServerTransport`), one
 * jitbox session per MCP session: an `initialize` request without an `mcp-session-id` opens a
 * session (`open`: a new harness from a snapshot, a remote session, …) and the server answers its
 * id; every later request names it. A `DELETE` with the id, or `idleTimeoutMs` without a request
 * while no call runs, closes the MCP session and the jitbox session with it.
 *
 * What crosses the boundary is bounded: a POST body over `maxBodyBytes` is answered 413 unread,
 * one that is not JSON 400; at most `maxSessions` MCP sessions are open (and being opened) at
 * once, a further `initialize` is answered 503; an unknown session id is answered 404, as the
 * protocol asks, so the client starts again. Failures answer 500 and never reach the process.
 *
 * DNS rebinding: a web page whose name an attacker points at 127.0.0.1 could otherwise reach a
 * local server from the user's browser (and build and run tools). A request whose `Host` header
 * names a host outside `allowedHosts` is answered 403 before its body is read (the SDK's
 * `hostHeaderValidation`); listening on a loopback address, the default allows only `localhost`,
 * `127.0.0.1` and `[::1]`.
 *
 * Authentication: with `bearerToken`, a request without the header `Authorization: Bearer
 * <bearerToken>` is answered 401 before anything else is done with it (the token compared in
 * constant time). Without it anyone who reaches the port may open sessions and run their tools:
 * `jitbox mcp --http` asks for a token unless it listens on this machine only and is told so.
 *
 * This module routes and bounds requests; the sessions themselves (opening, closing, the idle
 * sweep) are `internal/httpSessions`.
 *
 * @since 0.1.0
 */
import { hostHeaderValidation } from "@modelcontextprotocol/sdk/server/middleware/hostHeaderValidation.js"
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as crypto from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { type Entry, HttpSessions } from "./internal/httpSessions.js"
import { McpServeError } from "./McpError.js"
import type { OpenedSession } from "./ServedSession.js"
import type * as SessionServer from "./SessionServer.js"

/** @since 0.1.0 @category models */
export interface HttpOptions extends Omit<SessionServer.SessionServerOptions, "events"> {
  /** Opens the jitbox session of a new MCP session. */
  readonly open: () => Promise<OpenedSession>
  /** 0 (default): a free port. */
  readonly port?: number | undefined
  /** Default 127.0.0.1: only this machine can connect. */
  readonly host?: string | undefined
  /**
   * Host names (without port; IPv6 in brackets) a request's `Host` header may name, others are
   * answered 403. Default: `localhost`, `127.0.0.1` and `[::1]` when `host` is a loopback address;
   * for any other address no check (give the names the server is reached by).
   */
  readonly allowedHosts?: ReadonlyArray<string> | undefined
  /** Requests must carry `Authorization: Bearer <bearerToken>`; default: no authentication. */
  readonly bearerToken?: string | undefined
  /** The endpoint's path (default `/mcp`). */
  readonly path?: string | undefined
  /** Largest POST body, in bytes (default 4 MiB). */
  readonly maxBodyBytes?: number | undefined
  /** MCP sessions open at once (default 32). */
  readonly maxSessions?: number | undefined
  /** An MCP session without a request for this long, and no call running, is closed (default 5 minutes). */
  readonly idleTimeoutMs?: number | undefined
}

/** @since 0.1.0 @category models */
export interface HttpServer {
  /** The endpoint, `http://host:port/path`. */
  readonly url: string
  readonly port: number
  /** MCP sessions open now. */
  readonly sessions: () => number
  /** Closes every MCP session (and its jitbox session), then the listener. */
  readonly close: () => Promise<void>
}

/** @since 0.1.0 @category constants */
export const defaults = {
  host: "127.0.0.1",
  path: "/mcp",
  maxBodyBytes: 4 * 1024 * 1024,
  maxSessions: 32,
  idleTimeoutMs: 5 * 60_000
} as const

const rpcError = (res: http.ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}): void => {
  if (res.headersSent) {
    res.destroy()
    return
  }
  res.writeHead(status, { "content-type": "application/json", ...headers })
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }))
}

type Body = { readonly tooLarge: true } | { readonly tooLarge: false; readonly text: string }

/** Reads a body up to `max` bytes: a declared length over it is refused unread, an undeclared one as soon as it passes it. */
const readBody = (req: http.IncomingMessage, max: number): Promise<Body> =>
  new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"])
    if (Number.isFinite(declared) && declared > max) return resolve({ tooLarge: true })
    const chunks: Array<Buffer> = []
    let size = 0
    let done = false
    req.on("data", (chunk: Buffer) => {
      if (done) return
      size += chunk.length
      if (size > max) {
        done = true
        resolve({ tooLarge: true })
        return
      }
      chunks.push(chunk)
    })
    req.on("end", () => {
      if (done) return
      done = true
      resolve({ tooLarge: false, text: Buffer.concat(chunks).toString("utf8") })
    })
    req.on("error", (error) => {
      if (done) return
      done = true
      reject(error)
    })
  })

const describe = (error: unknown): string => error instanceof Error ? error.message : String(error)

const loopback = ["127.0.0.1", "localhost", "::1", "[::1]"]

/** Whether `req` may go on; when not, the SDK's middleware has answered it (403). */
type HostCheck = (req: http.IncomingMessage, res: http.ServerResponse) => boolean

const hostCheck = (host: string, allowed: ReadonlyArray<string> | undefined): HostCheck | undefined => {
  const names = allowed ?? (loopback.includes(host) ? ["localhost", "127.0.0.1", "[::1]"] : undefined)
  if (names === undefined) return undefined
  const middleware = hostHeaderValidation([...names])
  return (req, res) => {
    let passed = false
    // the middleware answers through Express's `res.status(code).json(body)`
    const answer = {
      status: (code: number) => ({
        json: (body: unknown) => {
          res.writeHead(code, { "content-type": "application/json", connection: "close" })
          res.end(JSON.stringify(body))
        }
      })
    }
    middleware(req as never, answer as never, () => passed = true)
    return passed
  }
}

/** Whether `req` may go on; when not, it has been answered 401. */
type AuthCheck = (req: http.IncomingMessage, res: http.ServerResponse) => boolean

const digest = (text: string): Buffer => crypto.createHash("sha256").update(text, "utf8").digest()

/** Checks the bearer token; both sides are hashed first, so the comparison takes the same time whatever their lengths. */
const authCheck = (token: string | undefined): AuthCheck | undefined => {
  if (token === undefined) return undefined
  const expected = digest(token)
  return (req, res) => {
    const given = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? "")?.[1]
    if (given !== undefined && crypto.timingSafeEqual(digest(given), expected)) return true
    rpcError(res, 401, -32001, "Unauthorized: this server needs the header Authorization: Bearer <token>", {
      "www-authenticate": `Bearer realm="jitbox-mcp"`,
      connection: "close"
    })
    return false
  }
}

/** What the request handler works with. */
interface Endpoint {
  readonly path: string
  readonly maxBodyBytes: number
  readonly maxSessions: number
  readonly checkHost: HostCheck | undefined
  readonly checkAuth: AuthCheck | undefined
  readonly sessions: HttpSessions
  readonly stopped: () => boolean
}

/** A POST's body, parsed; `undefined` when it was refused (and answered). Other methods have none. */
const readJson = async (endpoint: Endpoint, req: http.IncomingMessage, res: http.ServerResponse): Promise<{ readonly body: unknown } | undefined> => {
  if (req.method !== "POST") return { body: undefined }
  const read = await readBody(req, endpoint.maxBodyBytes)
  if (read.tooLarge) {
    rpcError(res, 413, -32000, `Payload too large: a request body may have ${endpoint.maxBodyBytes} bytes`, { connection: "close" })
    res.on("finish", () => req.destroy())
    return undefined
  }
  try {
    return { body: JSON.parse(read.text) }
  } catch {
    rpcError(res, 400, -32700, "Parse error: the body is not JSON")
    return undefined
  }
}

/** A request without a session id: an `initialize` opens a session, within the limit. */
const initialize = async (endpoint: Endpoint, req: http.IncomingMessage, res: http.ServerResponse, body: unknown): Promise<void> => {
  const initializing = req.method === "POST" && (Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body))
  if (!initializing) return rpcError(res, 400, -32000, "Bad Request: no mcp-session-id, and not an initialize request")
  const sessions = endpoint.sessions
  if (sessions.full(endpoint.maxSessions)) {
    return rpcError(res, 503, -32000, `Too many sessions: this server serves ${endpoint.maxSessions} at once`, { "retry-after": "5" })
  }
  let entry: Entry
  try {
    entry = await sessions.open()
  } catch (error) {
    return rpcError(res, 500, -32603, `The session could not be opened: ${describe(error)}`)
  }
  try {
    await sessions.handle(entry, req, res, body)
  } finally {
    if (entry.id === undefined) await sessions.close(entry)
  }
}

const handle = async (endpoint: Endpoint, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
  if (endpoint.checkHost !== undefined && !endpoint.checkHost(req, res)) return
  if (endpoint.checkAuth !== undefined && !endpoint.checkAuth(req, res)) return
  const url = new URL(req.url ?? "/", "http://localhost")
  if (url.pathname !== endpoint.path) return rpcError(res, 404, -32000, `Not found: the MCP endpoint is ${endpoint.path}`)
  if (endpoint.stopped()) return rpcError(res, 503, -32000, "The server is stopping")
  const header = req.headers["mcp-session-id"]
  if (Array.isArray(header)) return rpcError(res, 400, -32000, "Bad Request: one mcp-session-id header at most")
  const read = await readJson(endpoint, req, res)
  if (read === undefined) return
  if (header === undefined) return initialize(endpoint, req, res, read.body)
  const entry = endpoint.sessions.get(header)
  if (entry === undefined) return rpcError(res, 404, -32001, "Session not found")
  return endpoint.sessions.handle(entry, req, res, read.body)
}

/**
 * Listens and serves until `close`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const listen = async (options: HttpOptions): Promise<HttpServer> => {
  const host = options.host ?? defaults.host
  const path = options.path ?? defaults.path
  const idleTimeoutMs = options.idleTimeoutMs ?? defaults.idleTimeoutMs
  const sessions = new HttpSessions(options)
  let stopped = false
  const endpoint: Endpoint = {
    path,
    maxBodyBytes: options.maxBodyBytes ?? defaults.maxBodyBytes,
    maxSessions: options.maxSessions ?? defaults.maxSessions,
    checkHost: hostCheck(host, options.allowedHosts),
    checkAuth: authCheck(options.bearerToken),
    sessions,
    stopped: () => stopped
  }

  const server = http.createServer((req, res) => {
    req.on("error", () => undefined)
    res.on("error", () => undefined)
    handle(endpoint, req, res).catch((error: unknown) => rpcError(res, 500, -32603, `Internal error: ${describe(error)}`))
  })
  server.on("clientError", (_error, socket) => socket.destroy())

  const sweep = setInterval(() => sessions.sweep(idleTimeoutMs), Math.max(50, Math.min(idleTimeoutMs / 2, 30_000)))
  sweep.unref()

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject)
      resolve()
    })
  })
  const port = (server.address() as AddressInfo).port
  let closing: Promise<void> | undefined
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}${path}`,
    port,
    sessions: () => sessions.size,
    close: () =>
      closing ??= (async () => {
        stopped = true
        clearInterval(sweep)
        await sessions.closeAll()
        await new Promise<void>((resolve) => {
          server.close(() => resolve())
          server.closeAllConnections()
        })
      })()
  }
}

/**
 * `listen` as a scoped resource: closed with its scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const serve = (options: HttpOptions): Effect.Effect<HttpServer, McpServeError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () => listen(options),
      catch: (error) => new McpServeError({ reason: "Listen", detail: `cannot listen on ${options.host ?? defaults.host}:${options.port ?? 0}: ${describe(error)}` })
    }),
    (server) => Effect.promise(() => server.close())
  )
