/**
 * Conversation history persisted to files, one JSON file per session in a directory, encoded with
 * the `Message` schema and replaced atomically, so a session survives a restart of the process.
 *
 * @since 0.1.0
 */
import { mkdir, readFile } from "node:fs/promises"
import * as Path from "node:path"
import { AtomicFile } from "@jitbox/core"
import * as Schema from "effect/Schema"
import { AgentError } from "./AgentError.js"
import type { AgentExtension, HistoryStore } from "./AgentExtension.js"
import { Message } from "./ModelProvider.js"

const Conversation = Schema.parseJson(Schema.Array(Message))
const decode = Schema.decodeUnknownSync(Conversation)
const encode = Schema.encodeSync(Conversation)

const fileName = (sessionId: string) => `${encodeURIComponent(sessionId)}.json`

/** @since 0.1.0 @category models */
export class FileMessageStore implements AgentExtension {
  readonly name = "FileMessageStore"

  constructor(readonly directory: string) {}

  readonly history: HistoryStore = {
    load: async (sessionId) => {
      const path = Path.join(this.directory, fileName(sessionId))
      let text: string
      try {
        text = await readFile(path, "utf8")
      } catch (cause) {
        if ((cause as { code?: string }).code === "ENOENT") return []
        throw new AgentError({ reason: "History", detail: `reading ${path}: ${String(cause)}` })
      }
      try {
        return decode(text)
      } catch (cause) {
        throw new AgentError({ reason: "History", detail: `${path} is not a valid conversation: ${String(cause)}` })
      }
    },
    append: async (sessionId, messages) => {
      const all = [...(await this.history.load(sessionId)), ...messages]
      await mkdir(this.directory, { recursive: true })
      const path = Path.join(this.directory, fileName(sessionId))
      try {
        await AtomicFile.write(path, () => encode(all))
      } catch (cause) {
        throw new AgentError({ reason: "History", detail: `writing ${path}: ${String(cause)}` })
      }
    }
  }
}
