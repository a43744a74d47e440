/**
 * `require` for the CommonJS dependencies @jitbox/core loads on first use (ajv, zod-to-json-schema),
 * resolved from the installed @jitbox/core's folder: this module may run bundled into another
 * package's file (the `jitbox` command's bundle), where `import.meta.url` names the bundle and the
 * dependencies of @jitbox/core are not that package's.
 */
import { createRequire } from "node:module"

export const coreRequire: NodeJS.Require = createRequire(createRequire(import.meta.url).resolve("@jitbox/core/package.json"))
