/**
 * The agent loop: `createAgent(model, { config: { sessionId }, tools, extensions })`, then
 * `run(prompt)` for the final message or `stream(prompt)` for typed events. Each model turn gets the
 * current tools and instructions; the calls of one response run with ordinary parallel calls
 * concurrently, then serial ones in order, then management calls in order (MGMT-15). A run that
 * needs more than `maxTurns` model turns fails with `AgentError` "MaxTurnsExceeded".
 *
 * An explicit `extensions` list is the whole list (OVR-09): without a history extension every run
 * starts from an empty conversation.
 *
 * @since 0.1.0
 */
import { randomBytes } from "node:crypto"
import { type BaseTools, HarnessError, JitHarness, ThrownValue } from "@jitbox/core"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { AgentError } from "./AgentError.js"
import type { AgentEvent } from "./AgentEvent.js"
import type { AgentExtension, RequestTool, RequestTools } from "./AgentExtension.js"
import type { AssistantMessage, Message, ModelProvider, ToolCall, ToolMessage } from "./ModelProvider.js"
import type { ProviderError } from "./ProviderError.js"

/** @since 0.1.0 @category models */
export interface AgentConfig {
  readonly sessionId: string
  /** Model turns one run may take. Default 16. */
  readonly maxTurns?: number | undefined
}

/** @since 0.1.0 @category models */
export interface CreateAgentOptions {
  readonly config: AgentConfig
  readonly tools?: BaseTools | undefined
  readonly extensions?: ReadonlyArray<AgentExtension> | undefined
}

/** @since 0.1.0 @category models */
export interface RunResult {
  /** The final assistant message's text. */
  readonly content: string | null
  /** What this run added to the conversation, in order. */
  readonly messages: ReadonlyArray<Message>
  readonly turns: number
}

const resultText = (value: unknown): string => {
  if (typeof value === "string") return value
  try {
    return JSON.stringify(value) ?? "null"
  } catch {
    return String(value)
  }
}

/**
 * Without an extension that offers tools, the base tools still run through a harness (the one
 * dispatch path: validation, middleware-free, unrecorded as base tools are when not managed), with
 * no management tool offered.
 */
const directTools = (tools: BaseTools | undefined, sessionId: string): RequestTools => {
  let harness: JitHarness
  try {
    harness = new JitHarness({ sessionId, tools: tools ?? [], manageBaseTools: false })
  } catch (cause) {
    throw new AgentError({ reason: "Configuration", detail: `base tools must be named tool(...) definitions: ${String(cause)}` })
  }
  const list: ReadonlyArray<RequestTool> = harness.definitions("chat_completions").tools.filter((tool) => !tool.management)
  const offered = new Set(list.map((tool) => tool.name))
  return {
    definitions: () => Promise.resolve({ instructions: "", tools: list }),
    call: (name, args, options) =>
      offered.has(name) ? harness.callTool(name, args, options) : Promise.reject(new HarnessError.ToolNotFound({ name })),
    close: () => harness.release()
  }
}

/** @since 0.1.0 @category models */
export class Agent {
  readonly sessionId: string
  readonly maxTurns: number
  private readonly extensions: ReadonlyArray<AgentExtension>

  constructor(readonly model: ModelProvider, readonly options: CreateAgentOptions) {
    this.sessionId = options.config.sessionId
    this.maxTurns = options.config.maxTurns ?? 16
    if (!Number.isInteger(this.maxTurns) || this.maxTurns < 1) {
      throw new AgentError({ reason: "Configuration", detail: "maxTurns must be a positive integer" })
    }
    this.extensions = options.extensions ?? []
    if (this.extensions.filter((extension) => extension.openRequest !== undefined).length > 1) {
      throw new AgentError({ reason: "Configuration", detail: "at most one extension may offer tools" })
    }
  }

  /** One run as an Effect; `emit` receives every event as it happens. */
  runEffect(prompt: string, emit: (event: AgentEvent) => void = () => {}): Effect.Effect<RunResult, ProviderError | AgentError> {
    return Effect.acquireUseRelease(
      Effect.tryPromise({
        try: () => this.openRequest(),
        catch: (cause) => cause instanceof AgentError ? cause : new AgentError({ reason: "Configuration", detail: String(cause) })
      }),
      (request) => this.loop(prompt, request, emit),
      (request) => Effect.promise(() => request.close())
    )
  }

  /** Runs the prompt to the final assistant message. Rejects with `ProviderError` or `AgentError`. */
  run(prompt: string, options: { readonly signal?: AbortSignal } = {}): Promise<RunResult> {
    return settle(this.runEffect(prompt), options.signal)
  }

  /** The run as events; iteration ends after `RUN_FINISHED`, or throws the run's error. */
  stream(prompt: string): AsyncIterable<AgentEvent> {
    const agent = this
    return {
      [Symbol.asyncIterator](): AsyncIterator<AgentEvent> {
        const queue: Array<AgentEvent> = []
        let wake: (() => void) | undefined
        let done = false
        let failure: { readonly error: unknown } | undefined
        const controller = new AbortController()
        const push = (event: AgentEvent) => {
          queue.push(event)
          wake?.()
        }
        settle(agent.runEffect(prompt, push), controller.signal).then(
          () => {
            done = true
            wake?.()
          },
          (error) => {
            failure = { error }
            done = true
            wake?.()
          }
        )
        return {
          next: async () => {
            for (;;) {
              const event = queue.shift()
              if (event !== undefined) return { value: event, done: false }
              if (failure !== undefined) throw failure.error
              if (done) return { value: undefined, done: true }
              await new Promise<void>((resolve) => {
                wake = () => {
                  wake = undefined
                  resolve()
                }
              })
            }
          },
          return: async () => {
            controller.abort()
            return { value: undefined, done: true }
          }
        }
      }
    }
  }

  private async openRequest(): Promise<RequestTools> {
    const provider = this.extensions.find((extension) => extension.openRequest !== undefined)
    return provider === undefined
      ? directTools(this.options.tools, this.sessionId)
      : await provider.openRequest!({ sessionId: this.sessionId, protocol: this.model.protocol, baseTools: this.options.tools })
  }

  private instructions(requestInstructions: string, tools: ReadonlyArray<RequestTool>): string {
    const parts = [requestInstructions]
    for (const extension of this.extensions) {
      const text = extension.instructions?.(tools)
      if (text !== undefined && text !== "") parts.push(text)
    }
    return parts.filter((part) => part !== "").join("\n\n")
  }

  private loop(prompt: string, request: RequestTools, emit: (event: AgentEvent) => void) {
    const agent = this
    return Effect.gen(function*() {
      const runId = `run_${randomBytes(6).toString("hex")}`
      const history = agent.extensions.find((extension) => extension.history !== undefined)?.history
      const previous = history === undefined ? [] : yield* historyStep(() => history.load(agent.sessionId))
      const added: Array<Message> = [{ role: "user", content: prompt }]
      emit({ type: "RUN_STARTED", sessionId: agent.sessionId, runId })
      const forwarding = request.events === undefined ? undefined : forward(request.events, emit)
      try {
        for (let turn = 1; turn <= agent.maxTurns; turn++) {
          const { instructions, tools } = yield* Effect.tryPromise({
            try: () => request.definitions(),
            catch: (cause) => new AgentError({ reason: "Configuration", detail: `the session's tool definitions could not be read: ${String(cause)}` })
          })
          const response = yield* agent.model.generate({
            instructions: agent.instructions(instructions, tools),
            messages: [...previous, ...added],
            tools: tools.map(({ deferLoading, description, name, parameters }) => ({ name, description, parameters, deferLoading }))
          })
          const message = response.message
          added.push(message)
          emit({ type: "MESSAGE", message })
          if (message.toolCalls.length === 0) {
            if (history !== undefined) yield* historyStep(() => history.append(agent.sessionId, added))
            request.events?.close()
            if (forwarding !== undefined) yield* Effect.promise(() => forwarding)
            emit({ type: "RUN_FINISHED", runId, content: message.content })
            return { content: message.content, messages: added, turns: turn } satisfies RunResult
          }
          const results = yield* agent.execute(message, tools, request, emit)
          added.push(...results)
        }
        if (history !== undefined) yield* historyStep(() => history.append(agent.sessionId, added))
        return yield* new AgentError({
          reason: "MaxTurnsExceeded",
          detail: `the model still asked for tools after ${agent.maxTurns} turns`
        })
      } finally {
        request.events?.close()
        if (forwarding !== undefined) yield* Effect.promise(() => forwarding)
      }
    })
  }

  /** Ordinary parallel calls concurrently, then serial ones, then management calls, in order. */
  private execute(
    message: AssistantMessage,
    tools: ReadonlyArray<RequestTool>,
    request: RequestTools,
    emit: (event: AgentEvent) => void
  ): Effect.Effect<Array<ToolMessage>> {
    const byName = new Map(tools.map((tool) => [tool.name, tool]))
    const phase = (call: ToolCall) => {
      const tool = byName.get(call.name)
      return tool === undefined ? 1 : tool.management ? 2 : tool.executionMode === "serial" ? 1 : 0
    }
    const callOne = (call: ToolCall): Effect.Effect<ToolMessage> =>
      Effect.gen(function*() {
        emit({ type: "TOOL_STARTED", toolCallId: call.id, toolName: call.name })
        if (call.argumentsError !== undefined) {
          emit({ type: "TOOL_COMPLETED", toolCallId: call.id, toolName: call.name, success: false, errorType: "InvalidArguments" })
          return toolMessage(call, `InvalidArguments: ${call.argumentsError}`, true)
        }
        const outcome = yield* Effect.either(
          Effect.tryPromise({ try: (signal) => request.call(call.name, call.arguments ?? {}, { callId: call.id, signal }), catch: (e) => e })
        )
        if (outcome._tag === "Right") {
          emit({ type: "TOOL_COMPLETED", toolCallId: call.id, toolName: call.name, success: true, errorType: null })
          return toolMessage(call, resultText(outcome.right), false)
        }
        const { text, type } = ThrownValue.forModel(outcome.left)
        emit({ type: "TOOL_COMPLETED", toolCallId: call.id, toolName: call.name, success: false, errorType: type })
        return toolMessage(call, text, true)
      })
    const calls = message.toolCalls
    return Effect.gen(function*() {
      const answers = new Array<ToolMessage>(calls.length)
      const order = calls.map((call, index) => ({ call, index, phase: phase(call) }))
      const parallel = order.filter((item) => item.phase === 0)
      const answered = yield* Effect.forEach(parallel, (item) => callOne(item.call), { concurrency: "unbounded" })
      parallel.forEach((item, i) => {
        answers[item.index] = answered[i]!
      })
      for (const item of order.filter((i) => i.phase > 0).sort((a, b) => a.phase - b.phase)) {
        answers[item.index] = yield* callOne(item.call)
      }
      return answers
    })
  }
}

/** A history store's load or append: its failure is the run's typed `AgentError` "History", not a defect. */
const historyStep = <A>(step: () => Promise<A>): Effect.Effect<A, AgentError> =>
  Effect.tryPromise({
    try: step,
    catch: (cause) => cause instanceof AgentError ? cause : new AgentError({ reason: "History", detail: String(cause) })
  })

/** Runs the effect; rejects with the error itself (`ProviderError`, `AgentError`), not a `FiberFailure` wrapper. */
const settle = <A, E>(effect: Effect.Effect<A, E>, signal: AbortSignal | undefined): Promise<A> =>
  Effect.runPromiseExit(effect, signal === undefined ? undefined : { signal }).then((exit) =>
    Exit.isSuccess(exit) ? exit.value : Promise.reject(Cause.squash(exit.cause))
  )

const toolMessage = (call: ToolCall, content: string, isError: boolean): ToolMessage => ({
  role: "tool",
  toolCallId: call.id,
  name: call.name,
  content,
  isError
})

const forward = async (events: AsyncIterable<AgentEvent>, emit: (event: AgentEvent) => void): Promise<void> => {
  for await (const event of events) emit(event)
}

/**
 * Creates an agent for one session (OVR-06).
 *
 * @since 0.1.0
 * @category constructors
 */
export const createAgent = async (model: ModelProvider, options: CreateAgentOptions): Promise<Agent> => new Agent(model, options)
