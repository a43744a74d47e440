/**
 * The files the sandbox's children run, in the `runtime` folder of the installed @jitbox/sandbox.
 * They are found through the package's manifest rather than beside this module, because this
 * module may run bundled into another package's file (the `jitbox` command's bundle).
 */
import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"

const manifest = pathToFileURL(createRequire(import.meta.url).resolve("@jitbox/sandbox/package.json"))

/** The URL of `runtime/<name>` in @jitbox/sandbox. */
export const runtimeFile = (name: string): URL => new URL(`runtime/${name}`, manifest)
