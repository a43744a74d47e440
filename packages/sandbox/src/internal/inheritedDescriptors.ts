/**
 * The descriptors a child would inherit from this process: those it holds without close-on-exec
 * (its launcher's, or a native addon's: Node opens all of its own with O_CLOEXEC). libuv's spawn
 * only sets the child's stdio slots, and prlimit and bubblewrap pass every other descriptor on, so
 * each child closes them before its tool's code runs. Python and Bash list /proc/self/fd
 * themselves; a Node child may not read /proc under the permission model, so the host names them.
 */
import * as fs from "node:fs"

/** The variable that names them for a Node child: descriptor numbers separated by commas. */
export const InheritedDescriptorsVariable = "JITBOX_INHERITED_FDS"

const CloseOnExec = 0o2000000

/**
 * Descriptors from `stdioSlots` up that this process holds without close-on-exec (the spawn
 * replaces the ones below). Throws if /proc/self/fd cannot be read: then nothing can be promised.
 */
export const inheritedDescriptors = (stdioSlots: number): Array<number> => {
  const inherited: Array<number> = []
  for (const name of fs.readdirSync("/proc/self/fd")) {
    const fd = Number(name)
    if (fd < stdioSlots) continue
    let info: string
    try {
      info = fs.readFileSync(`/proc/self/fdinfo/${name}`, "latin1")
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") continue // closed meanwhile (readdir's own descriptor)
      throw error
    }
    const flags = /^flags:\s*([0-7]+)/m.exec(info)?.[1]
    if (flags === undefined || (parseInt(flags, 8) & CloseOnExec) === 0) inherited.push(fd)
  }
  return inherited
}
