/**
 * Where the benchmark scripts write: `benchmarks/results/` (made if missing, ignored by git, so a
 * run never rewrites the committed figures by accident). The reference figures the README cites are
 * in `benchmarks/reference/`, committed; to update them, copy a run's files there on purpose.
 * Scripts that keep a history of runs (remote, sandbox) start from the reference's when this
 * checkout has no results of its own yet.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))

/** benchmarks/results/, created. */
export const resultsDir = (): string => {
  const dir = path.join(here, "results")
  fs.mkdirSync(dir, { recursive: true })
  return dir
}

/** benchmarks/reference/. */
export const referenceDir = path.join(here, "reference")

/** The path of `name` in the results. */
export const resultFile = (name: string): string => path.join(resultsDir(), name)

/** The text of `name` from the results, else from the reference, else undefined. */
export const previous = (name: string): string | undefined => {
  for (const dir of [path.join(here, "results"), referenceDir]) {
    try {
      return fs.readFileSync(path.join(dir, name), "utf8")
    } catch {
      // not there
    }
  }
  return undefined
}
