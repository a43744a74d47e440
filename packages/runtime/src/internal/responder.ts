/**
 * The serving side of request/reply, shared by every layer: at most `concurrency` handlers run at
 * once, at most `backlog` requests wait for a slot, and a request beyond that is answered `Busy`
 * at once (the callback that delivers messages never blocks and never queues without bound).
 *
 * Closing drains: no new request is taken (the driver has stopped delivering), what waits and what
 * runs finishes, up to `graceMs`. Past the grace, running handlers see their signal abort and every
 * unanswered request is answered `Closed`, so no caller waits for a responder that is gone.
 */
import type { DriverMessage, Handler, Headers, Reply } from "../Transport.js"
import type { TransportErrorReason } from "../TransportError.js"
import * as Status from "./status.js"

interface Pending {
  readonly message: DriverMessage
  answered: boolean
  controller: AbortController | undefined
}

export interface ResponderOptions {
  readonly subject: string
  readonly concurrency: number
  readonly backlog: number
  readonly maxPayload: () => number
  readonly handler: Handler
}

type Outcome =
  | { readonly _tag: "Replied"; readonly reply: Reply }
  | { readonly _tag: "Failed"; readonly error: unknown }

const encoder = new TextEncoder()

const isPayload = (u: unknown): u is string | Uint8Array => typeof u === "string" || u instanceof Uint8Array

const replyParts = (reply: unknown): { readonly payload: string | Uint8Array; readonly headers: Headers | undefined } | undefined => {
  if (isPayload(reply)) return { payload: reply, headers: undefined }
  if (typeof reply !== "object" || reply === null) return undefined
  const { payload, headers } = reply as { readonly payload?: unknown; readonly headers?: unknown }
  if (!isPayload(payload)) return undefined
  if (headers !== undefined && (typeof headers !== "object" || headers === null)) return undefined
  return { payload, headers: headers as Headers | undefined }
}

export class Responder {
  private readonly waiting: Array<Pending> = []
  private readonly running = new Set<Pending>()
  private closing = false
  private idle: (() => void) | undefined

  constructor(private readonly options: ResponderOptions) {}

  /** The driver's callback: never blocks. */
  readonly deliver = (message: DriverMessage): void => {
    const pending: Pending = { message, answered: false, controller: undefined }
    if (this.closing) return this.answerStatus(pending, "Closed", "the responder is closing")
    if (this.running.size < this.options.concurrency) return this.start(pending)
    if (this.waiting.length < this.options.backlog) {
      this.waiting.push(pending)
      return
    }
    this.answerStatus(pending, "Busy", `${this.options.concurrency} requests run and ${this.options.backlog} wait`)
  }

  private start(pending: Pending): void {
    const controller = new AbortController()
    pending.controller = controller
    this.running.add(pending)
    const { message } = pending
    let result: Reply | PromiseLike<Reply>
    try {
      result = this.options.handler({ subject: message.subject, data: message.data, headers: message.headers, signal: controller.signal })
    } catch (error) {
      this.finish(pending, { _tag: "Failed", error })
      return
    }
    if (typeof result === "object" && result !== null && typeof (result as PromiseLike<Reply>).then === "function") {
      ;(result as PromiseLike<Reply>).then(
        (reply) => this.finish(pending, { _tag: "Replied", reply }),
        (error: unknown) => this.finish(pending, { _tag: "Failed", error })
      )
    } else {
      this.finish(pending, { _tag: "Replied", reply: result as Reply })
    }
  }

  private finish(pending: Pending, outcome: Outcome): void {
    this.running.delete(pending)
    if (outcome._tag === "Failed") {
      this.answerStatus(pending, "ResponderFailed", `the handler failed: ${describe(outcome.error)}`)
    } else {
      this.answer(pending, outcome.reply)
    }
    const next = this.waiting.shift()
    if (next !== undefined) this.start(next)
    else if (this.closing && this.running.size === 0) this.idle?.()
  }

  private answer(pending: Pending, reply: Reply): void {
    if (pending.answered) return
    const respond = pending.message.respond
    if (respond === undefined) {
      pending.answered = true
      return
    }
    const parts = replyParts(reply)
    if (parts === undefined) return this.answerStatus(pending, "ResponderFailed", "the handler's reply is not a string, a Uint8Array or { payload, headers }")
    const { payload, headers } = parts
    const data = typeof payload === "string" ? encoder.encode(payload) : payload
    const size = Status.payloadSize(data, headers)
    if (size > this.options.maxPayload()) {
      return this.answerStatus(
        pending,
        "PayloadTooLarge",
        `the reply is ${size} bytes; the server's max_payload is ${this.options.maxPayload()}`
      )
    }
    const bad = headers === undefined ? undefined : Status.checkHeaders(headers)
    if (bad !== undefined) return this.answerStatus(pending, "ResponderFailed", `the handler's reply has ${bad}`)
    pending.answered = true
    try {
      respond(data, headers)
    } catch {
      // The connection is gone: the requester's own timeout or close ends its wait.
    }
  }

  private answerStatus(pending: Pending, reason: TransportErrorReason, detail: string): void {
    if (pending.answered) return
    pending.answered = true
    const respond = pending.message.respond
    if (respond === undefined) return
    try {
      respond(new Uint8Array(0), Status.headers(reason, detail))
    } catch {
      // As above.
    }
  }

  /** Stops taking requests and waits for those taken, up to `graceMs`; then answers the rest `Closed`. */
  close(graceMs: number): Promise<void> {
    this.closing = true
    if (this.running.size === 0 && this.waiting.length === 0) return Promise.resolve()
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.idle = undefined
        for (const pending of [...this.running, ...this.waiting.splice(0)]) {
          pending.controller?.abort(new Error("the responder closed"))
          this.answerStatus(pending, "Closed", `the responder closed before the handler finished (grace ${graceMs} ms)`)
        }
        resolve()
      }, graceMs)
      this.idle = () => {
        clearTimeout(timer)
        resolve()
      }
    })
  }
}

const describe = (error: unknown): string => {
  if (error instanceof Error) return `${error.name}: ${error.message}`
  try {
    return String(error)
  } catch {
    return "an unprintable value"
  }
}
