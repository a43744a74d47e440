/**
 * Conversation history kept in memory, per session: what a run adds is appended, and the next run
 * of the same session starts from it.
 *
 * @since 0.1.0
 */
import type { AgentExtension, HistoryStore } from "./AgentExtension.js"
import type { Message } from "./ModelProvider.js"

/** @since 0.1.0 @category models */
export class InMemoryMessageAccumulator implements AgentExtension {
  readonly name = "InMemoryMessageAccumulator"
  private readonly sessions = new Map<string, Array<Message>>()

  readonly history: HistoryStore = {
    load: (sessionId) => Promise.resolve([...(this.sessions.get(sessionId) ?? [])]),
    append: (sessionId, messages) => {
      const list = this.sessions.get(sessionId) ?? []
      list.push(...messages)
      this.sessions.set(sessionId, list)
      return Promise.resolve()
    }
  }

  /** The messages recorded for a session so far. */
  messages(sessionId: string): ReadonlyArray<Message> {
    return this.sessions.get(sessionId) ?? []
  }

  forgetSession(sessionId: string): void {
    this.sessions.delete(sessionId)
  }
}
