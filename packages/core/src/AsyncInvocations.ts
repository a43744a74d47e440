/**
 * Bounded asynchronous operations (D-19, JT-POL-08): `start_invocation` runs a tool in the
 * background and answers an `invocation_id` at once; past `maximumConcurrentInvocations` the start
 * is accepted and queued (status `queued`) until a slot frees, and only past what the invocation
 * budget can still pay for is it refused. `await_invocations` waits (at most the short timeout, on
 * the harness's clock) for 1–16 of them and returns the finished ones and the ids still queued or
 * running; `cancel_invocation` is idempotent. A finished result is kept until it is read once, or
 * until the harness is released. Every started call goes through the harness's dispatch path, and
 * the handlers of the three tools live here, as the management tools' live with their handlers.
 *
 * @since 0.1.0
 */
import * as CodePoints from "./CodePoints.js"
import { InvalidToolRequest, PolicyViolation } from "./HarnessError.js"
import type { HarnessClockShape } from "./HarnessClock.js"
import type { JsonSchema } from "./JsonSchema.js"
import * as ResponseBudget from "./ResponseBudget.js"
import * as ThrownValue from "./ThrownValue.js"

/** @since 0.1.0 @category models */
export interface FinishedInvocation {
  readonly invocation_id: string
  readonly tool_name: string
  readonly status: "completed" | "failed" | "cancelled"
  readonly result?: unknown
  readonly error?: { readonly error_type: string; readonly message: string | null }
}

/** @since 0.1.0 @category models */
export interface AwaitResult {
  readonly finished: ReadonlyArray<FinishedInvocation>
  /** Started or queued, not finished yet. */
  readonly running: ReadonlyArray<string>
}

/** @since 0.1.0 @category models */
export interface Started {
  readonly invocation_id: string
  /** `queued` until a concurrency slot frees. */
  readonly status: "running" | "queued"
}

interface Operation {
  readonly id: string
  readonly name: string
  readonly args: unknown
  readonly controller: AbortController
  state: "queued" | "running" | "finished"
  done: Promise<void>
  finish: () => void
  outcome: FinishedInvocation | undefined
}

/** What the operations need of the harness. @since 0.1.0 @category models */
export interface Dispatcher {
  readonly callTool: (name: string, args: unknown, options: { readonly signal: AbortSignal }) => Promise<unknown>
}

/** @since 0.1.0 @category models */
export interface Options {
  /** Operations running at once; later starts queue. */
  readonly maximumConcurrent: number
  /** Operations queued at once, at most; a start past it is refused. */
  readonly maximumQueued: () => number
  /** The longest `await_invocations` wait, in seconds. */
  readonly maximumWaitSeconds: number
  readonly clock: HarnessClockShape
}

/** @since 0.1.0 @category models */
export class AsyncInvocations {
  private readonly operations = new Map<string, Operation>()
  private readonly queue: Array<Operation> = []
  private counter = 0
  private active = 0

  constructor(
    private readonly dispatcher: Dispatcher,
    readonly options: Options
  ) {}

  get maximumWaitSeconds(): number {
    return this.options.maximumWaitSeconds
  }

  /** Operations running now (not queued, not finished). */
  get running(): number {
    return this.active
  }

  /** Starts `name` now, or queues it when the concurrency bound is reached; refuses only past the queue's bound. */
  start(name: string, args: unknown = {}): Started {
    const queued = this.active >= this.options.maximumConcurrent
    if (queued && this.queue.length >= this.options.maximumQueued()) {
      throw new PolicyViolation({
        name,
        reason: "ConcurrencyLimit",
        detail: `${this.active} invocations are running and ${this.queue.length} are queued, all the invocation budget allows; await or cancel one first`
      })
    }
    const id = `inv_${(++this.counter).toString(36)}`
    let finish!: () => void
    const done = new Promise<void>((resolve) => {
      finish = resolve
    })
    const operation: Operation = { id, name, args, controller: new AbortController(), state: "queued", done, finish, outcome: undefined }
    this.operations.set(id, operation)
    if (queued) this.queue.push(operation)
    else this.run(operation)
    return { invocation_id: id, status: queued ? "queued" : "running" }
  }

  private run(operation: Operation): void {
    operation.state = "running"
    this.active++
    const { controller, id, name } = operation
    this.dispatcher.callTool(name, operation.args, { signal: controller.signal }).then(
      (result) => this.settle(operation, { invocation_id: id, tool_name: name, status: "completed", result }),
      (error: unknown) =>
        this.settle(operation, {
          invocation_id: id,
          tool_name: name,
          status: controller.signal.aborted ? "cancelled" : "failed",
          error: { error_type: ThrownValue.errorType(error), message: ThrownValue.message(error) }
        })
    )
  }

  private settle(operation: Operation, outcome: FinishedInvocation): void {
    const wasRunning = operation.state === "running"
    operation.state = "finished"
    operation.outcome = outcome
    operation.finish()
    if (!wasRunning) return
    this.active--
    const next = this.queue.shift()
    if (next !== undefined) this.run(next)
  }

  private known(id: string): Operation {
    const operation = this.operations.get(id)
    if (operation === undefined) {
      throw new InvalidToolRequest({ reason: "UnknownInvocation", detail: `no invocation ${id} is pending or unread` })
    }
    return operation
  }

  /** Waits until every id finished or `timeoutSeconds` passed; finished results are handed over once. */
  async await(ids: ReadonlyArray<string>, timeoutSeconds: number): Promise<AwaitResult> {
    if (ids.length < 1 || ids.length > 16) {
      throw new InvalidToolRequest({ reason: "OutOfRange", detail: "await 1 to 16 invocation ids" })
    }
    if (!(timeoutSeconds >= 0 && timeoutSeconds <= this.options.maximumWaitSeconds)) {
      throw new InvalidToolRequest({ reason: "OutOfRange", detail: `timeout_seconds must be 0 to ${this.options.maximumWaitSeconds}` })
    }
    const operations = ids.map((id) => this.known(id))
    let cancelTimer: (() => void) | undefined
    await Promise.race([
      Promise.all(operations.map((operation) => operation.done)),
      new Promise<void>((resolve) => {
        cancelTimer = this.options.clock.schedule(timeoutSeconds * 1000, resolve)
      })
    ])
    cancelTimer?.()
    const finished: Array<FinishedInvocation> = []
    const running: Array<string> = []
    for (const operation of operations) {
      if (operation.outcome === undefined) running.push(operation.id)
      else {
        finished.push(operation.outcome)
        this.operations.delete(operation.id)
      }
    }
    return { finished, running }
  }

  /** Cancels a queued or running invocation; cancelling a finished or cancelled one just reports its status. */
  cancel(id: string): { readonly invocation_id: string; readonly status: string } {
    const operation = this.known(id)
    if (operation.state === "queued") {
      this.queue.splice(this.queue.indexOf(operation), 1)
      operation.controller.abort()
      this.settle(operation, {
        invocation_id: id,
        tool_name: operation.name,
        status: "cancelled",
        error: { error_type: "ToolCancelled", message: `invocation ${id} was cancelled before it started` }
      })
    } else if (operation.state === "running") {
      operation.controller.abort()
    }
    return { invocation_id: id, status: operation.outcome?.status ?? "cancelled" }
  }

  /** Cancels everything and forgets every result (the harness was released). */
  release(): void {
    this.queue.length = 0
    for (const operation of this.operations.values()) operation.controller.abort()
    this.operations.clear()
  }

  /** The handlers of the three model-facing tools, by name. */
  handlers(): Record<string, (args: any) => unknown> {
    return {
      start_invocation: (args: { name: string; arguments?: unknown }) => this.start(args.name, args.arguments ?? {}),
      await_invocations: async (args: { invocation_ids: ReadonlyArray<string>; timeout_seconds?: number }) =>
        budgeted(await this.await(args.invocation_ids, args.timeout_seconds ?? 0)),
      cancel_invocation: (args: { invocation_id: string }) => this.cancel(args.invocation_id)
    }
  }
}

/** The model-facing definitions, offered when the policy allows async operations. @since 0.1.0 @category constants */
export const tools: ReadonlyArray<{ readonly name: string; readonly description: string; readonly parameters: JsonSchema }> = [
  {
    name: "start_invocation",
    description: "Start a tool call in the background; returns invocation_id at once. Past the concurrency bound it queues.",
    parameters: {
      type: "object",
      properties: { name: { type: "string" }, arguments: { type: "object" } },
      required: ["name"]
    }
  },
  {
    name: "await_invocations",
    description:
      "Wait up to timeout_seconds for 1-16 started invocations. Returns finished ones (each result is returned once) and the ids still running.",
    parameters: {
      type: "object",
      properties: {
        invocation_ids: { type: "array", items: { type: "string" }, minItems: 1, maxItems: 16 },
        timeout_seconds: { type: "number", minimum: 0, maximum: 224 }
      },
      required: ["invocation_ids"]
    }
  },
  {
    name: "cancel_invocation",
    description: "Cancel a started invocation; safe to repeat.",
    parameters: { type: "object", properties: { invocation_id: { type: "string" } }, required: ["invocation_id"] }
  }
]

/**
 * An await answer within the response budget: results that do not fit are cut to a JSON prefix
 * marked `result_truncated` (the application API returns them whole).
 *
 * @since 0.1.0
 * @category rendering
 */
export const budgeted = (answer: AwaitResult): unknown => {
  if (ResponseBudget.fits(answer)) return answer
  const share = Math.floor((ResponseBudget.maxChars - ResponseBudget.measure({ ...answer, finished: [] })) / Math.max(1, answer.finished.length)) - 200
  return {
    ...answer,
    finished: answer.finished.map((item) => {
      if (ResponseBudget.fits(item) && ResponseBudget.measure(item) <= share) return item
      const json = JSON.stringify(item.result ?? item.error) ?? "null"
      const { result: _, error: __, ...rest } = item
      return { ...rest, result_json: CodePoints.slice(json, 0, Math.max(0, share)), result_truncated: true }
    })
  }
}
