/**
 * Concurrency slots with a first-come queue: at most `limit()` holders at once, later callers wait
 * in order, and a waiter whose signal aborts leaves the queue and rejects with the signal's
 * reason. The limit is read on every grant, so an owner whose limit grows (a lease renewed with
 * more slots) calls `pump` to hand the new slots out. Core's local `Admission` and the runtime's
 * leased one share it.
 *
 * @since 0.1.0
 */

/** Gives a slot back; calling it again does nothing. @since 0.1.0 @category models */
export type Release = () => void

/** @since 0.1.0 @category models */
export interface Slots {
  readonly acquire: (signal: AbortSignal | undefined) => Promise<Release>
  /** Grants slots to waiters, first come first served, while fewer than `limit()` are held. */
  readonly pump: () => void
  /** Drops every waiter without settling it (its owner is closing). */
  readonly clear: () => void
  readonly running: () => number
  readonly waiting: () => number
}

interface Waiter {
  readonly grant: (release: Release) => void
  readonly signal: AbortSignal | undefined
  readonly onAbort: (() => void) | undefined
}

/**
 * `onWait` is told each time a caller starts waiting (a leased admission asks for more slots then).
 *
 * @since 0.1.0 @category constructors
 */
export const make = (limit: () => number, onWait?: () => void): Slots => {
  let running = 0
  const waiting: Array<Waiter> = []

  const slot = (): Release => {
    let released = false
    return () => {
      if (released) return
      released = true
      running--
      pump()
    }
  }

  const forget = (waiter: Waiter) => {
    if (waiter.onAbort !== undefined) waiter.signal!.removeEventListener("abort", waiter.onAbort)
  }

  const pump = () => {
    while (waiting.length > 0 && running < limit()) {
      const next = waiting.shift()!
      forget(next)
      running++
      next.grant(slot())
    }
  }

  return {
    acquire: (signal) => {
      if (signal?.aborted === true) return Promise.reject(signal.reason)
      if (waiting.length === 0 && running < limit()) {
        running++
        return Promise.resolve(slot())
      }
      return new Promise<Release>((resolve, reject) => {
        const onAbort = signal === undefined ? undefined : () => {
          const index = waiting.indexOf(waiter)
          if (index !== -1) waiting.splice(index, 1)
          reject(signal.reason)
        }
        const waiter: Waiter = { grant: resolve, signal, onAbort }
        waiting.push(waiter)
        if (onAbort !== undefined) signal!.addEventListener("abort", onAbort, { once: true })
        onWait?.()
      })
    },
    pump,
    clear: () => {
      for (const waiter of waiting.splice(0)) forget(waiter)
    },
    running: () => running,
    waiting: () => waiting.length
  }
}
