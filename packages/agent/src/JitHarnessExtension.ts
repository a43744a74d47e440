/**
 * The JIT extension: one `JitHarness` per session id, activated from the extension's snapshot on
 * the session's first request (SNAP-13; every session gets its own copy, SNAP-03). For each request
 * it attaches the application's base tools to the harness and detaches them afterwards (LIFE-01),
 * and offers the model the management tools (per exposure mode and protocol), the code and text
 * tools, the harness instructions and each tool's guidelines.
 *
 * @since 0.1.0
 */
import {
  Exposure,
  HarnessError,
  JitHarness,
  type JitHarnessOptions,
  type JitHarnessSnapshot,
  ManagementTools
} from "@jitbox/core"
import type { AgentExtension, RequestInfo, RequestTool, RequestTools } from "./AgentExtension.js"
import type { Protocol } from "./ModelProvider.js"

/** @since 0.1.0 @category models */
export type JitHarnessExtensionOptions = Omit<JitHarnessOptions, "sessionId" | "tools">

const wireProtocol = (protocol: Protocol): Exposure.ModelProtocol =>
  protocol === "scripted" ? Exposure.ModelProtocol.ChatCompletions : protocol

/** The tool guidance section: each offered tool's guidelines (OVR-08). @since 0.1.0 @category rendering */
export const toolGuidance = (tools: ReadonlyArray<RequestTool>): string => {
  const lines = tools.filter((tool) => tool.guidelines !== null).map((tool) => `- ${tool.name}: ${tool.guidelines}`)
  return lines.length === 0 ? "" : `Tool guidelines:\n${lines.join("\n")}`
}

/** @since 0.1.0 @category models */
export class JitHarnessExtension implements AgentExtension {
  readonly name = "JitHarnessExtension"
  readonly snapshot: JitHarnessSnapshot.JitHarnessSnapshot | undefined
  readonly options: JitHarnessExtensionOptions
  private readonly harnesses = new Map<string, JitHarness>()

  constructor(
    snapshotOrOptions?: JitHarnessSnapshot.JitHarnessSnapshot | JitHarnessExtensionOptions,
    options?: JitHarnessExtensionOptions
  ) {
    const isSnapshot = snapshotOrOptions !== undefined && "format_version" in snapshotOrOptions
    this.snapshot = isSnapshot ? snapshotOrOptions as JitHarnessSnapshot.JitHarnessSnapshot : undefined
    this.options = (isSnapshot ? options : snapshotOrOptions as JitHarnessExtensionOptions | undefined) ?? {}
    // Checks the options once, up front, so a bad value fails here and not on a first request.
    void new JitHarness({ ...this.options, sessionId: "options-check" }).release()
  }

  /** @since 0.1.0 @category constructors */
  static make(options: JitHarnessExtensionOptions & { readonly snapshot?: JitHarnessSnapshot.JitHarnessSnapshot } = {}) {
    const { snapshot, ...rest } = options
    return snapshot === undefined ? new JitHarnessExtension(rest) : new JitHarnessExtension(snapshot, rest)
  }

  /** The session's harness (LIFE-09): one per session id, until `forgetSession`. */
  getHarness(sessionId: string): JitHarness {
    let harness = this.harnesses.get(sessionId)
    if (harness === undefined) {
      harness = this.snapshot === undefined
        ? new JitHarness({ ...this.options, sessionId })
        : new JitHarness(this.snapshot, { ...this.options, sessionId })
      this.harnesses.set(sessionId, harness)
    }
    return harness
  }

  /** Releases an idle session's toolbox; snapshots and conversation history are untouched (LIFE-06). */
  async forgetSession(sessionId: string): Promise<void> {
    const harness = this.harnesses.get(sessionId)
    if (harness === undefined) return
    this.harnesses.delete(sessionId)
    await harness.release()
  }

  readonly openRequest = async (request: RequestInfo): Promise<RequestTools> => {
    const harness = this.getHarness(request.sessionId)
    await harness.ready
    const token = {}
    harness.attach(token, request.baseTools)
    const exposure = Exposure.exposureFor(harness.inspectionTools, wireProtocol(request.protocol))
    // A management tool the mode does not expose (the inspection tier in Hidden mode) does not exist for the model (EXP-06).
    const exposed = new Set(exposure.tools.map((tool) => tool.name))
    const tools = (): ReadonlyArray<RequestTool> => [
      ...harness.modelTools().map((tool) => ({
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
        deferLoading: false,
        executionMode: tool.executionMode,
        management: false,
        guidelines: tool.guidelines
      })),
      ...[...exposure.tools, ...harness.operationTools()].map((tool) => ({
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
        deferLoading: "deferLoading" in tool && tool.deferLoading === true,
        executionMode: "serial" as const,
        management: true,
        guidelines: null
      }))
    ]
    const events = harness.subscribe()
    return {
      instructions: () => {
        const guidance = toolGuidance(tools())
        return guidance === "" ? exposure.instructions : `${exposure.instructions}\n\n${guidance}`
      },
      tools,
      call: (name, args, options) =>
        ManagementTools.isManagementToolName(name) && !exposed.has(name)
          ? Promise.reject(new HarnessError.ToolNotFound({ name }))
          : harness.callTool(name, args, options),
      events,
      harness,
      close: async () => {
        events.close()
        harness.detach(token)
      }
    }
  }
}
