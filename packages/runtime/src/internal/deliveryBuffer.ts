/**
 * The bounded buffer between a subscription's callback and the `Stream` its subscriber reads.
 * Policy: sliding. When the buffer is full, the oldest message is dropped to make room, and the
 * next message the subscriber reads carries in `dropped` how many were lost just before it. A slow
 * subscriber therefore costs a bounded amount of memory, always sees the most recent messages, and
 * learns where and how much it missed.
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { Message } from "../Transport.js"
import type { TransportError } from "../TransportError.js"

export class DeliveryBuffer {
  private items: Array<Message> = []
  private head = 0
  private droppedBefore = 0
  private waiter: (() => void) | undefined
  private ended = false
  private failure: TransportError | undefined

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.items.length - this.head
  }

  offer(message: Message): void {
    if (this.ended) return
    if (this.size >= this.capacity) {
      this.head++
      this.droppedBefore++
      if (this.head > 1024 && this.head * 2 > this.items.length) {
        this.items = this.items.slice(this.head)
        this.head = 0
      }
    }
    this.items.push(message)
    this.wake()
  }

  /** Ends the stream: normally when `failure` is undefined; messages already buffered are still read. */
  end(failure: TransportError | undefined): void {
    if (this.ended) return
    this.ended = true
    this.failure = failure
    this.wake()
  }

  private wake(): void {
    const waiter = this.waiter
    if (waiter !== undefined) {
      this.waiter = undefined
      waiter()
    }
  }

  private takeAll(): Array<Message> | undefined {
    if (this.size === 0) return undefined
    const batch = this.head === 0 ? this.items : this.items.slice(this.head)
    this.items = []
    this.head = 0
    if (this.droppedBefore > 0) {
      batch[0] = { ...batch[0]!, dropped: batch[0]!.dropped + this.droppedBefore }
      this.droppedBefore = 0
    }
    return batch
  }

  private readonly pull: Effect.Effect<Chunk.Chunk<Message>, Option.Option<TransportError>> = Effect.suspend(() => {
    const batch = this.takeAll()
    if (batch !== undefined) return Effect.succeed(Chunk.unsafeFromArray(batch))
    if (this.ended) return Effect.fail(this.failure === undefined ? Option.none() : Option.some(this.failure))
    return Effect.async<Chunk.Chunk<Message>, Option.Option<TransportError>>((resume) => {
      this.waiter = () => resume(this.pull)
      return Effect.sync(() => {
        this.waiter = undefined
      })
    })
  })

  readonly stream: Stream.Stream<Message, TransportError> = Stream.repeatEffectChunkOption(this.pull)
}
