/**
 * Stores a session's toolbox after a change, before the change is acknowledged, without ever
 * holding the change lock: a change made inside a change (an example that calls a management
 * tool) waits here while its parent change is still running, so waiting for the lock would
 * deadlock.
 *
 * `persist()` resolves once a save that *started after the call* has finished: the snapshot is
 * taken when a save starts, so that save holds every change completed before `persist()` was
 * called. At most one save runs at a time; callers who arrive while one runs share the next one,
 * so a burst of changes costs two saves, not one per change.
 */
const ignore = () => undefined

export class Persister {
  private saving: Promise<void> | undefined
  private next: Promise<void> | undefined

  /** `save` takes the snapshot synchronously when it is called, then writes it. */
  constructor(private readonly save: () => Promise<void>) {}

  persist(): Promise<void> {
    if (this.next !== undefined) return this.next
    const saving = this.saving
    if (saving === undefined) return this.start()
    const next = saving.then(ignore, ignore).then(() => {
      this.next = undefined
      return this.start()
    })
    this.next = next
    return next
  }

  private start(): Promise<void> {
    let saving: Promise<void>
    try {
      saving = this.save()
    } catch (error) {
      saving = Promise.reject(error)
    }
    this.saving = saving
    const done = () => {
      if (this.saving === saving) this.saving = undefined
    }
    saving.then(done, done)
    return saving
  }
}
