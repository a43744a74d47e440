#!/usr/bin/env node
// The `jitbox` executable. It is a file of its own, committed, so that `pnpm install` links the bin
// before anything is built. It runs the bundle of the built command (dist/bundle/jitbox.mjs, made by
// `pnpm build` and when the package is packed), which starts in a fraction of the time the ~800
// modules of dist/bin.js take to load; dist/bin.js itself when the bundle is missing or older than
// it (a `tsc -b` run since the last bundle), so the command never runs stale code.
import { existsSync, statSync } from "node:fs"

const built = new URL("../dist/bin.js", import.meta.url)
const bundle = new URL("../dist/bundle/jitbox.mjs", import.meta.url)
const bundleIsCurrent = existsSync(bundle) && (!existsSync(built) || statSync(bundle).mtimeMs >= statSync(built).mtimeMs)
if (!bundleIsCurrent && !existsSync(built)) {
  console.error("jitbox: the command is not built yet (no dist/bin.js): run pnpm build")
  process.exit(1)
}
await import((bundleIsCurrent ? bundle : built).href)
