/**
 * What a session is doing, for passivation: how many calls and requests run now, and when the
 * last one began or ended, by the clock the host was given (Effect's `Clock`, so `TestClock`
 * drives idleness in tests). Only inbound work counts.
 */
export class Activity {
  inflight = 0
  lastActive: number
  /** Whether any work began since the session activated (an activation nobody uses is passivated sooner). */
  used = false

  constructor(private readonly now: () => number) {
    this.lastActive = now()
  }

  readonly begin = (): void => {
    this.inflight++
    this.used = true
    this.lastActive = this.now()
  }

  readonly end = (): void => {
    this.inflight--
    this.lastActive = this.now()
  }

  /** Milliseconds without work at `now`; 0 while something runs. */
  idleFor(now: number): number {
    return this.inflight > 0 ? 0 : now - this.lastActive
  }
}
