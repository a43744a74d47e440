#!/usr/bin/env node
// The `jitbox` executable: runs the built command (dist/bin.js). It is a file of its own, committed,
// so that `pnpm install` links the bin before anything is built; dist/bin.js is made by `pnpm build`.
import { existsSync } from "node:fs"

const entry = new URL("../dist/bin.js", import.meta.url)
if (!existsSync(entry)) {
  console.error("jitbox: the command is not built yet (no dist/bin.js): run pnpm build")
  process.exit(1)
}
await import(entry.href)
