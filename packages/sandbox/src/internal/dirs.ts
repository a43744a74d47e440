/**
 * Directories of one runner: `<root>/v<n>` per version (read-only for children) and `<root>/c<n>`
 * per child (a writable working directory, removed when the child ends).
 */
import * as fs from "node:fs"
import * as path from "node:path"

export class Directories {
  private counter = 0
  private readonly removed = new Set<string>()

  constructor(
    readonly root: string,
    readonly owner: { readonly uid: number; readonly gid: number } | undefined
  ) {}

  static make(tmpDir: string, owner: { readonly uid: number; readonly gid: number } | undefined): Directories {
    const root = fs.mkdtempSync(path.join(tmpDir, "jitbox-sandbox-"))
    fs.chmodSync(root, 0o755)
    return new Directories(root, owner)
  }

  /** A directory the host writes and children only read. */
  readOnly(prefix: string): string {
    const dir = path.join(this.root, `${prefix}${++this.counter}`)
    fs.mkdirSync(dir)
    fs.chmodSync(dir, 0o755)
    return dir
  }

  /** A directory owned by the child's uid, private to it. */
  private(parent: string, name: string): string {
    const dir = path.join(parent, name)
    fs.mkdirSync(dir)
    fs.chmodSync(dir, 0o700)
    if (this.owner !== undefined) fs.chownSync(dir, this.owner.uid, this.owner.gid)
    return dir
  }

  /** Writes package files below `dir`, creating sub-folders; paths were validated by core (D-08). */
  writeFiles(dir: string, files: Readonly<Record<string, string>>): void {
    for (const [relative, content] of Object.entries(files)) {
      const target = path.join(dir, relative)
      if (!target.startsWith(dir + path.sep)) throw new Error(`package path escapes its directory: ${relative}`)
      const parent = path.dirname(target)
      if (parent !== dir && !fs.existsSync(parent)) {
        fs.mkdirSync(parent, { recursive: true })
        for (let d = parent; d !== dir; d = path.dirname(d)) fs.chmodSync(d, 0o755)
      }
      fs.writeFileSync(target, content)
      fs.chmodSync(target, 0o644)
    }
  }

  remove(dir: string): void {
    if (this.removed.has(dir)) return
    this.removed.add(dir)
    fs.rm(dir, { recursive: true, force: true, maxRetries: 3 }, () => {})
  }

  removeSync(dir: string): void {
    this.removed.add(dir)
    try {
      fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 })
    } catch {
      // best effort at exit
    }
  }
}
