/**
 * The call ids a session took on its `call` subject lately, so that a call captured and sent
 * again runs once: a `call_id` is an idempotency key, used once within the window (the last
 * `capacity` ids, oldest forgotten first). A call sent without a `call_id` is not remembered.
 */
export class SeenCallIds {
  private readonly seen = new Set<string>()
  private readonly order: Array<string | undefined>
  private next = 0

  constructor(private readonly capacity: number) {
    this.order = new Array<string | undefined>(capacity)
  }

  /** Whether `callId` is new here; from now on it is not. */
  admit(callId: string): boolean {
    if (this.seen.has(callId)) return false
    const forgotten = this.order[this.next]
    if (forgotten !== undefined) this.seen.delete(forgotten)
    this.order[this.next] = callId
    this.next = (this.next + 1) % this.capacity
    this.seen.add(callId)
    return true
  }
}
