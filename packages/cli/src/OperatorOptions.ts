/**
 * Options the operator's commands share (`jitbox status`, `jitbox events tail`, `jitbox snapshot`):
 * `--json` for output a script reads, and durations written `500ms`, `2s`, `5m`, `1h`.
 *
 * @since 0.1.0
 */
import { HelpDoc, Options } from "@effect/cli"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"

/** @since 0.1.0 @category options */
export const json = Options.boolean("json").pipe(
  Options.withDescription("Print JSON instead of a table (one document; for events tail, one object per line)")
)

const units: Record<string, Duration.Unit> = { ms: "millis", s: "seconds", m: "minutes", h: "hours" }

/**
 * Milliseconds of a duration written `500ms`, `30s`, `5m` or `1h`; throws naming `option` otherwise.
 *
 * @since 0.1.0
 * @category constructors
 */
export const parseMillis = (option: string) => (text: string): number => {
  const short = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/.exec(text.trim())
  const decoded = short === null ? Option.none() : Option.some(Duration.decode(`${Number(short[1])} ${units[short[2]!]!}` as Duration.DurationInput))
  if (Option.isNone(decoded) || !Duration.greaterThan(decoded.value, Duration.zero)) {
    throw new Error(`--${option}: expected a duration such as 500ms, 30s, 5m or 1h, got '${text}'`)
  }
  return Duration.toMillis(decoded.value)
}

/**
 * A duration option, in milliseconds.
 *
 * @since 0.1.0
 * @category options
 */
export const duration = (name: string, description: string) =>
  Options.text(name).pipe(
    Options.withDescription(description),
    Options.mapTryCatch(parseMillis(name), (error) => HelpDoc.p(error instanceof Error ? error.message : String(error)))
  )
