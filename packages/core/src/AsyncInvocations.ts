/**
 * Bounded asynchronous operations (D-19, JT-POL-08): `start_invocation` runs a tool in the
 * background and answers an `invocation_id` at once; `await_invocations` waits (at most the short
 * timeout) for 1–16 of them and returns the finished ones and the ids still running;
 * `cancel_invocation` is idempotent. A finished result is kept until it is read once, or until the
 * harness is released. Every started call goes through the harness's dispatch path.
 *
 * @since 0.1.0
 */
import * as CodePoints from "./CodePoints.js"
import { InvalidToolRequest, PolicyViolation } from "./HarnessError.js"
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
  readonly running: ReadonlyArray<string>
}

interface Operation {
  readonly id: string
  readonly name: string
  readonly controller: AbortController
  readonly done: Promise<void>
  outcome: FinishedInvocation | undefined
}

/** What the operations need of the harness. @since 0.1.0 @category models */
export interface Dispatcher {
  readonly callTool: (name: string, args: unknown, options: { readonly signal: AbortSignal }) => Promise<unknown>
}

/** @since 0.1.0 @category models */
export class AsyncInvocations {
  private readonly operations = new Map<string, Operation>()
  private counter = 0

  constructor(
    private readonly dispatcher: Dispatcher,
    readonly maximumConcurrent: number,
    readonly maximumWaitSeconds: number
  ) {}

  get running(): number {
    let n = 0
    for (const operation of this.operations.values()) if (operation.outcome === undefined) n++
    return n
  }

  start(name: string, args: unknown = {}): { readonly invocation_id: string } {
    if (this.running >= this.maximumConcurrent) {
      throw new PolicyViolation({
        name,
        reason: "ConcurrencyLimit",
        detail: `${this.maximumConcurrent} invocations are already running; await or cancel one first`
      })
    }
    const id = `inv_${(++this.counter).toString(36)}`
    const controller = new AbortController()
    const operation: Operation = {
      id,
      name,
      controller,
      outcome: undefined,
      done: this.dispatcher.callTool(name, args, { signal: controller.signal }).then(
        (result) => {
          operation.outcome = { invocation_id: id, tool_name: name, status: "completed", result }
        },
        (error: unknown) => {
          operation.outcome = {
            invocation_id: id,
            tool_name: name,
            status: controller.signal.aborted ? "cancelled" : "failed",
            error: { error_type: ThrownValue.errorType(error), message: ThrownValue.message(error) }
          }
        }
      )
    }
    this.operations.set(id, operation)
    return { invocation_id: id }
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
    if (!(timeoutSeconds >= 0 && timeoutSeconds <= this.maximumWaitSeconds)) {
      throw new InvalidToolRequest({ reason: "OutOfRange", detail: `timeout_seconds must be 0 to ${this.maximumWaitSeconds}` })
    }
    const operations = ids.map((id) => this.known(id))
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([
      Promise.all(operations.map((operation) => operation.done)),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutSeconds * 1000)
      })
    ])
    clearTimeout(timer)
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

  /** Cancels a running invocation; cancelling a finished or cancelled one just reports its status. */
  cancel(id: string): { readonly invocation_id: string; readonly status: string } {
    const operation = this.known(id)
    if (operation.outcome === undefined) operation.controller.abort()
    return { invocation_id: id, status: operation.outcome?.status ?? "cancelled" }
  }

  /** Cancels everything and forgets every result (the harness was released). */
  release(): void {
    for (const operation of this.operations.values()) operation.controller.abort()
    this.operations.clear()
  }
}

/** The model-facing definitions, offered when the policy allows async operations. @since 0.1.0 @category constants */
export const tools: ReadonlyArray<{ readonly name: string; readonly description: string; readonly parameters: JsonSchema }> = [
  {
    name: "start_invocation",
    description: "Start a tool call in the background; returns invocation_id at once. Bounded concurrency.",
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
