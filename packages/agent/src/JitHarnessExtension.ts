/**
 * The JIT extension: the agent's requests talk to a session (`Session` from `@jitbox/core`), one
 * per session id, taken from a `Sessions` service. By default the sessions are local: one
 * `JitHarness` per session id, activated from the extension's snapshot on the session's first
 * request (SNAP-13; every session gets its own copy, SNAP-03); the runtime can provide sessions
 * that live in another process. For each request it attaches the application's base tools to the
 * session and detaches them afterwards (LIFE-01), and offers the model the management tools (per
 * exposure mode and protocol), the code and text tools, the harness instructions and each tool's
 * guidelines.
 *
 * @since 0.1.0
 */
import {
  type Exposure,
  HarnessError,
  type JitHarness,
  type JitHarnessOptions,
  type JitHarnessSnapshot,
  ManagementTools,
  Sessions
} from "@jitbox/core"
import type { AgentExtension, RequestInfo, RequestTool, RequestTools } from "./AgentExtension.js"
import type { Protocol } from "./ModelProvider.js"

/** @since 0.1.0 @category models */
export type JitHarnessExtensionOptions = Omit<JitHarnessOptions, "sessionId" | "tools">

const wireProtocol = (protocol: Protocol): Exposure.ModelProtocol => protocol === "scripted" ? "chat_completions" : protocol

/** The tool guidance section: each offered tool's guidelines (OVR-08). @since 0.1.0 @category rendering */
export const toolGuidance = (tools: ReadonlyArray<RequestTool>): string => {
  const lines = tools.filter((tool) => tool.guidelines !== null).map((tool) => `- ${tool.name}: ${tool.guidelines}`)
  return lines.length === 0 ? "" : `Tool guidelines:\n${lines.join("\n")}`
}

/** @since 0.1.0 @category models */
export class JitHarnessExtension implements AgentExtension {
  readonly name = "JitHarnessExtension"
  readonly sessions: Sessions.SessionsShape
  private readonly local: ReturnType<typeof Sessions.local> | undefined

  /**
   * Local sessions built from `options` (and `snapshot`). Options are checked now: a bad one throws
   * a `ConfigError` here, not on a first request.
   */
  constructor(
    snapshotOrOptions?: JitHarnessSnapshot.JitHarnessSnapshot | JitHarnessExtensionOptions,
    options?: JitHarnessExtensionOptions
  ) {
    const isSnapshot = snapshotOrOptions !== undefined && "format_version" in snapshotOrOptions
    const snapshot = isSnapshot ? snapshotOrOptions as JitHarnessSnapshot.JitHarnessSnapshot : undefined
    const harnessOptions = (isSnapshot ? options : snapshotOrOptions as JitHarnessExtensionOptions | undefined) ?? {}
    this.local = Sessions.local({ snapshot, options: harnessOptions })
    this.sessions = this.local
  }

  /** @since 0.1.0 @category constructors */
  static make(options: JitHarnessExtensionOptions & { readonly snapshot?: JitHarnessSnapshot.JitHarnessSnapshot } = {}) {
    const { snapshot, ...rest } = options
    return snapshot === undefined ? new JitHarnessExtension(rest) : new JitHarnessExtension(snapshot, rest)
  }

  /**
   * An extension over sessions that live elsewhere (the runtime's, say).
   *
   * @since 0.1.0
   * @category constructors
   */
  static fromSessions(sessions: Sessions.SessionsShape): JitHarnessExtension {
    // Through the constructor, so the instance fields (openRequest) exist; then the given sessions replace the local ones.
    const extension = new JitHarnessExtension()
    Object.assign(extension, { sessions, local: undefined })
    return extension
  }

  /** The session's local harness (LIFE-09): one per session id, until `forgetSession`. */
  getHarness(sessionId: string): JitHarness {
    if (this.local === undefined) {
      throw new HarnessError.ConfigError({ option: "sessions", detail: "this extension's sessions are not local; use sessions.get" })
    }
    return this.local.harness(sessionId)
  }

  /** Releases an idle session's toolbox; snapshots and conversation history are untouched (LIFE-06). */
  forgetSession(sessionId: string): Promise<void> {
    return this.sessions.forget(sessionId)
  }

  readonly openRequest = async (request: RequestInfo): Promise<RequestTools> => {
    const session = this.sessions.get(request.sessionId)
    await session.ready
    const token = {}
    await session.attach(token, request.baseTools)
    const protocol = wireProtocol(request.protocol)
    // A management tool the mode does not expose (the inspection tier in Hidden mode) does not exist for the model (EXP-06).
    let exposed: ReadonlySet<string> | undefined
    const definitions = async () => {
      const offered = await session.definitions(protocol)
      exposed = new Set(offered.tools.filter((tool) => tool.management).map((tool) => tool.name))
      const guidance = toolGuidance(offered.tools)
      return { instructions: guidance === "" ? offered.instructions : `${offered.instructions}\n\n${guidance}`, tools: offered.tools }
    }
    const events = session.events.subscribe()
    return {
      definitions,
      call: async (name, args, options) => {
        if (ManagementTools.isManagementToolName(name)) {
          if (exposed === undefined) await definitions()
          if (!exposed!.has(name)) throw new HarnessError.ToolNotFound({ name })
        }
        return await session.callTool(name, args, options)
      },
      events,
      close: async () => {
        events.close()
        await session.detach(token)
      }
    }
  }
}
