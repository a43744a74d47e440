/**
 * Bundles the built `jitbox` command (dist/bin.js and everything it imports) into dist/bundle/,
 * which bin/jitbox.js runs: one file to parse instead of about 800 modules to resolve and load,
 * so a command starts in a fraction of the time. The modules it imports on demand (OpenTelemetry,
 * the MCP server, the benchmark) become chunks loaded when a command asks for them.
 * esbuild stays outside: it runs its own native binary, found from its installed package.
 *
 *   node scripts/bundle.mjs [OUTDIR]   (default dist/bundle; a test bundles elsewhere)
 */
import * as esbuild from "esbuild"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"

const cli = fileURLToPath(new URL("..", import.meta.url))
const outdir = process.argv[2] ?? `${cli}dist/bundle`

fs.rmSync(outdir, { recursive: true, force: true })
await esbuild.build({
  entryPoints: { jitbox: `${cli}dist/bin.js` },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  outExtension: { ".js": ".mjs" },
  external: ["esbuild"],
  // CommonJS dependencies bundled into an ES module still call require (for node: built-ins).
  banner: { js: `import { createRequire as __jitboxCreateRequire } from "node:module"; const require = __jitboxCreateRequire(import.meta.url);` },
  logLevel: "warning"
})
