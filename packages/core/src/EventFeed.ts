/**
 * Fan-out of a harness's events to any number of subscribers. Dispatch never waits for a
 * subscriber: each has a bounded buffer, and what overflows is counted and reported in-band
 * (`jit_events_dropped`), never dropped silently. With no subscriber, emitting costs one check.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { JitToolEvent } from "./JitToolEvent.js"

/** @since 0.1.0 @category models */
export interface SubscribeOptions {
  /** Events buffered for a slow consumer before the oldest are dropped. Default 4,096. */
  readonly bufferSize?: number | undefined
}

/** @since 0.1.0 @category models */
export interface Subscription extends AsyncIterable<JitToolEvent> {
  /** Events dropped so far because the buffer was full. */
  readonly dropped: number
  readonly close: () => void
}

class Subscriber implements Subscription {
  private readonly buffer: Array<JitToolEvent> = []
  private waiting: ((result: IteratorResult<JitToolEvent>) => void) | undefined
  private unreported = 0
  dropped = 0
  closed = false

  constructor(
    private readonly sessionId: string,
    private readonly capacity: number,
    private readonly detach: (subscriber: Subscriber) => void
  ) {}

  push(event: JitToolEvent): void {
    const waiting = this.waiting
    if (waiting !== undefined && this.unreported === 0) {
      this.waiting = undefined
      waiting({ value: event, done: false })
      return
    }
    if (this.buffer.length >= this.capacity) {
      this.buffer.shift()
      this.dropped++
      this.unreported++
    }
    this.buffer.push(event)
    this.flush()
  }

  private next(): JitToolEvent | undefined {
    if (this.unreported > 0) {
      const dropped = this.unreported
      this.unreported = 0
      return { type: "CUSTOM", name: "jit_events_dropped", payload: { session_id: this.sessionId, dropped } }
    }
    return this.buffer.shift()
  }

  private flush(): void {
    const waiting = this.waiting
    if (waiting === undefined) return
    const event = this.next()
    if (event !== undefined) {
      this.waiting = undefined
      waiting({ value: event, done: false })
    }
  }

  close = (): void => {
    if (this.closed) return
    this.closed = true
    this.detach(this)
    const waiting = this.waiting
    this.waiting = undefined
    waiting?.({ value: undefined, done: true })
  }

  [Symbol.asyncIterator](): AsyncIterator<JitToolEvent> {
    return {
      next: () => {
        const event = this.next()
        if (event !== undefined) return Promise.resolve({ value: event, done: false })
        if (this.closed) return Promise.resolve({ value: undefined, done: true })
        return new Promise((resolve) => {
          this.waiting = resolve
        })
      },
      return: () => {
        this.close()
        return Promise.resolve({ value: undefined, done: true })
      }
    }
  }
}

/** @since 0.1.0 @category models */
export class EventFeed {
  private readonly subscribers = new Set<Subscriber>()
  private readonly listeners = new Set<(event: JitToolEvent) => void>()
  /** True when at least one subscriber listens; dispatch checks it before building an event. */
  active = false

  constructor(readonly sessionId: string) {}

  emit(event: JitToolEvent): void {
    for (const subscriber of this.subscribers) subscriber.push(event)
    for (const listener of this.listeners) {
      try {
        listener(event)
      } catch {
        // A listener's failure is its own; dispatch goes on.
      }
    }
  }

  /**
   * The cheapest way to follow events: `listener` runs synchronously inside dispatch, so it must be
   * quick and must not block. Returns the function that removes it.
   */
  listen(listener: (event: JitToolEvent) => void): () => void {
    this.listeners.add(listener)
    this.active = true
    return () => {
      this.listeners.delete(listener)
      this.refresh()
    }
  }

  private refresh(): void {
    this.active = this.subscribers.size > 0 || this.listeners.size > 0
  }

  subscribe(options: SubscribeOptions = {}): Subscription {
    const subscriber = new Subscriber(this.sessionId, options.bufferSize ?? 4_096, (s) => {
      this.subscribers.delete(s)
      this.refresh()
    })
    this.subscribers.add(subscriber)
    this.active = true
    return subscriber
  }

  /** The feed as an Effect `Stream`; the subscription ends with the stream's scope. */
  stream(options: SubscribeOptions = {}): Stream.Stream<JitToolEvent> {
    return Stream.unwrapScoped(
      Effect.acquireRelease(Effect.sync(() => this.subscribe(options)), (subscription) =>
        Effect.sync(subscription.close)).pipe(
          Effect.map((subscription) => Stream.fromAsyncIterable(subscription, (cause) => cause as never))
        )
    )
  }

  /** Ends every subscription (the harness was released). */
  closeAll(): void {
    for (const subscriber of Array.from(this.subscribers)) subscriber.close()
    this.listeners.clear()
    this.refresh()
  }
}
