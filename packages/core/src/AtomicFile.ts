/**
 * Replacing a file so that no reader ever sees half of it (SNAP-05): the content goes to a
 * temporary file in the same directory, is fsynced, and is renamed over the target; the directory
 * is fsynced too. On any failure the temporary file is removed and the target is untouched.
 *
 * @since 0.1.0
 */
import { randomBytes } from "node:crypto"
import { open, rename, rm } from "node:fs/promises"
import * as Path from "node:path"

/**
 * `content` runs once the temporary file is open, so a failure to produce it also leaves nothing
 * behind. Rejects with the underlying file-system error.
 *
 * @since 0.1.0
 * @category io
 */
export const write = async (path: string, content: () => string): Promise<void> => {
  const target = Path.resolve(path)
  const directory = Path.dirname(target)
  const temporary = Path.join(directory, `.${Path.basename(target)}.${randomBytes(6).toString("hex")}.tmp`)
  try {
    const handle = await open(temporary, "wx", 0o644)
    try {
      await handle.writeFile(content(), "utf8")
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(temporary, target)
    const dir = await open(directory, "r")
    try {
      await dir.sync()
    } finally {
      await dir.close()
    }
  } catch (cause) {
    await rm(temporary, { force: true })
    throw cause
  }
}
