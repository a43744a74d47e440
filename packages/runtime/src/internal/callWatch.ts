/**
 * The client side of a session host's failover: the calls a `RemoteSession` has in flight, and the
 * question it asks about those it has waited on for `afterMs` (every `everyMs`, while there are
 * any): which of them run (`session.<sid>.call` `running`)?
 *
 * - Answered: a call not among them is lost. The question waits in the same queue as the calls,
 *   so each call sent before it has started there, or answered, by the time it is answered; a
 *   call the answering host does not run was running on a host that died (the one answering took
 *   the session over), and it will never answer. It is failed at once (`lose`).
 * - Nobody serves the session: its host died (or is draining). Nothing is failed; the client asks
 *   the hosts to activate the session (`activate`), and once another host serves it the next
 *   question tells which calls are lost. A host that drains answers its running calls first.
 * - No answer in time: nothing is concluded.
 *
 * Plain Promise code with one timer, started while calls are watched and unreferenced (it never
 * keeps a process alive).
 */
import { runningLimit } from "../SessionProtocol.js"

/** What the question found: the ids running, nobody serving the session, or nothing known. */
export type Probe = ReadonlyArray<string> | "unserved" | undefined

export interface CallWatchOptions {
  readonly probe: (callIds: ReadonlyArray<string>) => Promise<Probe>
  readonly activate: () => void
  readonly now: () => number
  readonly afterMs: number
  readonly everyMs: number
}

interface Watched {
  readonly since: number
  readonly lose: () => void
}

export class CallWatch {
  private readonly watched = new Map<string, Watched>()
  private timer: ReturnType<typeof setInterval> | undefined
  private asking = false

  constructor(private readonly options: CallWatchOptions) {}

  /** Watches the call `callId` until the returned function is called; `lose` fails it. */
  watch(callId: string, lose: () => void): () => void {
    const entry = { since: this.options.now(), lose }
    this.watched.set(callId, entry)
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.tick(), this.options.everyMs)
      this.timer.unref?.()
    }
    return () => {
      if (this.watched.get(callId) === entry) this.watched.delete(callId)
      if (this.watched.size === 0 && this.timer !== undefined) {
        clearInterval(this.timer)
        this.timer = undefined
      }
    }
  }

  /** Calls watched now. */
  size(): number {
    return this.watched.size
  }

  private tick(): void {
    if (this.asking) return
    const oldest = this.options.now() - this.options.afterMs
    const ids: Array<string> = []
    for (const [id, entry] of this.watched) {
      if (entry.since <= oldest) ids.push(id)
      if (ids.length === runningLimit) break
    }
    if (ids.length === 0) return
    this.asking = true
    this.options.probe(ids).then((found) => {
      if (found === "unserved") return this.options.activate()
      if (found === undefined) return
      const running = new Set(found)
      for (const id of ids) if (!running.has(id)) this.watched.get(id)?.lose()
    }, () => undefined).finally(() => {
      this.asking = false
    })
  }
}
