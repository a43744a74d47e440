/**
 * One jitbox session as an MCP server (the SDK's low-level `Server`, whose handlers take the
 * session's JSON Schemas as they are):
 *
 * - `tools/list` answers `Session.definitions("chat_completions")`: MCP has no deferred loading,
 *   so the protocol must be one without it (every definition the exposure mode exposes is listed,
 *   and the instructions never point at a tool search the host cannot run); Chat Completions is the
 *   plain function-calling protocol, the one the agent uses for a protocol-agnostic model. A tool's
 *   guidelines follow its description; the instruction block is the server's `instructions`.
 * - `tools/call` goes through `session.callTool` (profiled, evented, budgeted) with the request's
 *   abort signal, so `notifications/cancelled` cancels the call; a management tool the mode does
 *   not expose does not exist (EXP-06). While a call runs and the client sent a progress token,
 *   a heartbeat `notifications/progress` goes out every `heartbeatMs`.
 * - every successful `create_tool`, `update_tool`, `unload_tool` or `load_tool`, whoever called it
 *   (the client, code through `harness.callTool`, or an application through `createTool` … or a
 *   `manage` message, which emit the same events), is seen in the session's events and sends
 *   `notifications/tools/list_changed`; so does a notice that events were dropped (a change may
 *   have been among them). A change seen while calls run is announced by each of them as it ends,
 *   on the call's own response stream, before its result (over HTTP a notification outside a
 *   request needs the client's standalone stream, which may not be open yet); one seen while
 *   nothing runs is announced at once.
 *
 * @since 0.1.0
 */
import { type Exposure, HarnessError, type JitToolEvent, ManagementTools, type SessionTool } from "@jitbox/core"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { CallToolRequestSchema, ListToolsRequestSchema, type Tool } from "@modelcontextprotocol/sdk/types.js"
import type { EventSource, ServedSession, StopListening } from "./ServedSession.js"
import * as ToolResult from "./ToolResult.js"

/** @since 0.1.0 @category models */
export interface SessionServerOptions {
  /** The session's events: without them no `list_changed` is sent. */
  readonly events?: EventSource | undefined
  /** The server's name in `initialize` (default `jitbox`). */
  readonly name?: string | undefined
  readonly version?: string | undefined
  /** Milliseconds between progress heartbeats of a running call (default 1,000). */
  readonly heartbeatMs?: number | undefined
}

/** @since 0.1.0 @category models */
export interface SessionServer {
  readonly server: Server
  /** Calls running now. */
  readonly running: () => number
  /** Stops following events and closes the server (and its transport). */
  readonly close: () => Promise<void>
}

/** The protocol whose definitions MCP receives (see the module comment). @since 0.1.0 @category constants */
export const protocol: Exposure.ModelProtocol = "chat_completions"

/** @since 0.1.0 @category constants */
export const defaults = { name: "jitbox", version: "0.1.0", heartbeatMs: 1_000 } as const

/** Whether `event` says the tool list may have changed. @since 0.1.0 @category predicates */
export const changesToolList = (event: JitToolEvent.JitToolEvent): boolean =>
  event.name === "jit_events_dropped" ||
  (event.name === "jit_tool_completed" && event.payload.success && event.payload.origin === "management" && ManagementTools.changesToolbox(event.payload.tool_name))

/** An MCP tool for a session tool: its guidelines follow its description. @since 0.1.0 @category constructors */
export const mcpTool = (tool: SessionTool): Tool => {
  const parameters = tool.parameters as Record<string, unknown>
  return {
    name: tool.name,
    description: tool.guidelines === null ? tool.description : `${tool.description}\n\nGuidelines: ${tool.guidelines}`,
    inputSchema: { ...parameters, type: "object" } as Tool["inputSchema"],
    _meta: { "jitbox/management": tool.management, "jitbox/execution_mode": tool.executionMode }
  }
}

/**
 * Builds the server of `session` once it is ready (its instruction block is read now); connect it
 * to a transport with `server.connect`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = async (session: ServedSession, options: SessionServerOptions = {}): Promise<SessionServer> => {
  await session.ready
  const initial = await session.definitions(protocol)
  const server = new Server(
    { name: options.name ?? defaults.name, version: options.version ?? defaults.version },
    { capabilities: { tools: { listChanged: true } }, instructions: initial.instructions }
  )
  const heartbeatMs = options.heartbeatMs ?? defaults.heartbeatMs
  let exposed: ReadonlySet<string> = new Set(initial.tools.filter((tool) => tool.management).map((tool) => tool.name))
  let running = 0
  let changes = 0
  let closed = false

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const offered = await session.definitions(protocol)
    exposed = new Set(offered.tools.filter((tool) => tool.management).map((tool) => tool.name))
    return { tools: offered.tools.map(mcpTool) }
  })

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const name = request.params.name
    if (ManagementTools.isManagementToolName(name) && !exposed.has(name)) return ToolResult.failure(new HarnessError.ToolNotFound({ name }))
    const token = extra._meta?.progressToken
    let beats = 0
    const heartbeat = token === undefined ? undefined : setInterval(() => {
      beats++
      extra.sendNotification({
        method: "notifications/progress",
        params: { progressToken: token, progress: beats, message: `${name} running for ${(beats * heartbeatMs / 1000).toFixed(1)} s` }
      }).catch(() => {
        // the client is gone: the call goes on until it ends or is cancelled
      })
    }, heartbeatMs)
    running++
    const changesBefore = changes
    let result
    try {
      result = ToolResult.success(await session.callTool(name, request.params.arguments ?? {}, { signal: extra.signal }))
    } catch (error) {
      result = ToolResult.failure(error)
    } finally {
      running--
      if (heartbeat !== undefined) clearInterval(heartbeat)
    }
    if (changes !== changesBefore) {
      // a cancelled request has no stream left to carry it
      const announced = extra.signal.aborted ? server.sendToolListChanged() : extra.sendNotification({ method: "notifications/tools/list_changed" })
      await announced.catch(() => undefined)
    }
    return result
  })

  let stop: StopListening | undefined
  if (options.events !== undefined) {
    const listened = await options.events((event) => {
      if (closed || !changesToolList(event)) return
      changes++
      if (running > 0) return
      server.sendToolListChanged().catch(() => {
        // not connected yet, or the client is gone: it lists the tools when it comes back
      })
    })
    stop = listened
  }

  return {
    server,
    running: () => running,
    close: async () => {
      if (closed) return
      closed = true
      try {
        await stop?.()
      } catch {
        // the event source is already gone
      }
      await server.close()
    }
  }
}
