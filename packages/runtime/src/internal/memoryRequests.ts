/**
 * Request/reply on the in-memory transport: the request goes to the receivers of its subject with
 * a `respond` callback, and settles once, with the first reply, `NoResponders` at once when
 * nothing listens, `Timeout` after `timeoutMs`, or `Closed` when the transport closes first
 * (`pending` holds how to fail each request still waiting).
 */
import type { Headers, Message } from "../Transport.js"
import { TransportError } from "../TransportError.js"
import { closedError, copy, type MemoryRoutes } from "./memoryRoutes.js"

export const request = (
  routes: MemoryRoutes,
  pending: Set<() => void>,
  subject: string,
  data: Uint8Array,
  headers: Headers | undefined,
  timeoutMs: number
): Promise<Message> =>
  new Promise<Message>((resolve, reject) => {
    let settled = false
    const settle = () => {
      settled = true
      clearTimeout(timer)
      pending.delete(failClosed)
    }
    const fail = (error: TransportError) => {
      if (settled) return
      settle()
      reject(error)
    }
    const failClosed = () => fail(closedError(subject))
    const timer = setTimeout(
      () => fail(new TransportError({ reason: "Timeout", subject, detail: `no reply within ${timeoutMs} ms` })),
      timeoutMs
    )
    pending.add(failClosed)
    const respond = (reply: Uint8Array, replyHeaders: Headers | undefined) => {
      if (settled) return
      settle()
      resolve({ subject: `_INBOX.${subject}`, data: reply.slice(), headers: copy(replyHeaders), dropped: 0 })
    }
    if (routes.route({ subject, data: data.slice(), headers: copy(headers), respond }) === 0) {
      fail(new TransportError({ reason: "NoResponders", subject, detail: "no subscription matches the subject" }))
    }
  })
