/**
 * A session served over stdio: JSON-RPC lines on stdin and stdout (the SDK's
 * `StdioServerTransport`). Nothing else may be written to stdout while it serves. It serves until
 * stdin ends or `close` is called; the session itself is the caller's to release.
 *
 * @since 0.1.0
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import type { Readable, Writable } from "node:stream"
import type { ServedSession } from "./ServedSession.js"
import * as SessionServer from "./SessionServer.js"

/** @since 0.1.0 @category models */
export interface StdioOptions extends SessionServer.SessionServerOptions {
  readonly stdin?: Readable | undefined
  readonly stdout?: Writable | undefined
}

/** @since 0.1.0 @category models */
export interface StdioServer {
  /** Resolves once the server has stopped (stdin ended, or `close`). */
  readonly closed: Promise<void>
  readonly close: () => Promise<void>
}

/**
 * Serves `session` on stdin/stdout (the process's by default).
 *
 * @since 0.1.0
 * @category constructors
 */
export const serve = async (session: ServedSession, options: StdioOptions = {}): Promise<StdioServer> => {
  const stdin = options.stdin ?? process.stdin
  const served = await SessionServer.make(session, options)
  const transport = new StdioServerTransport(stdin, options.stdout ?? process.stdout)
  let resolveClosed!: () => void
  const closed = new Promise<void>((resolve) => resolveClosed = resolve)
  const close = async () => {
    stdin.off("end", ended)
    await served.close().catch(() => undefined)
    resolveClosed()
  }
  const ended = () => void close()
  served.server.onclose = () => void close()
  stdin.once("end", ended)
  await served.server.connect(transport)
  return { closed, close }
}
