/**
 * The MCP sessions an HTTP server serves, one jitbox session each: its session server, its SDK
 * transport and its activity. A session is unnamed from its opening until the transport answers
 * its `initialize` with an id, named after; sessions being opened count against the limit too. A
 * session is closed once (its session server, then its jitbox session), by a `DELETE`, the
 * server's own close, the idle sweep, or the server's close.
 */
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { randomUUID } from "node:crypto"
import type * as http from "node:http"
import type { OpenedSession } from "../ServedSession.js"
import * as SessionServer from "../SessionServer.js"

export interface Entry {
  id: string | undefined
  readonly served: SessionServer.SessionServer
  readonly opened: OpenedSession
  readonly transport: StreamableHTTPServerTransport
  requests: number
  lastActive: number
  closing: Promise<void> | undefined
}

export interface HttpSessionsOptions extends Omit<SessionServer.SessionServerOptions, "events"> {
  /** Opens the jitbox session of a new MCP session. */
  readonly open: () => Promise<OpenedSession>
}

export class HttpSessions {
  private readonly named = new Map<string, Entry>()
  private readonly unnamed = new Set<Entry>()
  private opening = 0

  constructor(private readonly options: HttpSessionsOptions) {}

  /** MCP sessions open now (named ones). */
  get size(): number {
    return this.named.size
  }

  get(id: string): Entry | undefined {
    return this.named.get(id)
  }

  /** Whether `max` sessions are open or being opened. */
  full(max: number): boolean {
    return this.named.size + this.unnamed.size + this.opening >= max
  }

  /** Opens a session (a jitbox session and its session server, connected to a new transport), unnamed until initialized. */
  async open(): Promise<Entry> {
    this.opening++
    try {
      return await this.openEntry()
    } finally {
      this.opening--
    }
  }

  private async openEntry(): Promise<Entry> {
    const opened = await this.options.open()
    let served: SessionServer.SessionServer
    try {
      served = await SessionServer.make(opened.session, { ...this.options, events: opened.events })
    } catch (error) {
      await opened.close().catch(() => undefined)
      throw error
    }
    const entry: Entry = {
      id: undefined,
      served,
      opened,
      requests: 0,
      lastActive: Date.now(),
      closing: undefined,
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          entry.id = id
          this.unnamed.delete(entry)
          this.named.set(id, entry)
        },
        onsessionclosed: () => void this.close(entry)
      })
    }
    this.unnamed.add(entry)
    served.server.onclose = () => void this.close(entry)
    await served.server.connect(entry.transport)
    return entry
  }

  /** Closes the session, once: its session server, then its jitbox session. */
  close(entry: Entry): Promise<void> {
    if (entry.closing !== undefined) return entry.closing
    if (entry.id !== undefined && this.named.get(entry.id) === entry) this.named.delete(entry.id)
    this.unnamed.delete(entry)
    entry.closing = (async () => {
      await entry.served.close().catch(() => undefined)
      await entry.opened.close().catch(() => undefined)
    })()
    return entry.closing
  }

  /** Hands a request (its body read) to the session's transport, noting its activity. */
  async handle(entry: Entry, req: http.IncomingMessage, res: http.ServerResponse, body: unknown): Promise<void> {
    // a GET is the client's standing notification stream: it is no activity
    const counts = req.method !== "GET"
    if (counts) entry.requests++
    entry.lastActive = Date.now()
    try {
      await entry.transport.handleRequest(req, res, body)
    } finally {
      if (counts) entry.requests--
      entry.lastActive = Date.now()
    }
  }

  /** Closes the named sessions idle for `idleTimeoutMs`: no request in flight, no call running. */
  sweep(idleTimeoutMs: number): void {
    const now = Date.now()
    for (const entry of this.named.values()) {
      if (entry.requests === 0 && entry.served.running() === 0 && now - entry.lastActive >= idleTimeoutMs) void this.close(entry)
    }
  }

  /** Closes every session, named or not. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.named.values(), ...this.unnamed].map((entry) => this.close(entry)))
  }
}
