/**
 * Progress of a long operation (activating a large snapshot, draining a worker, a benchmark) as one
 * status line on stderr, redrawn in place on a terminal and silent otherwise, so that piped output
 * and logs stay clean:
 *
 *     ⠙ activating snapshot [########------------] 12/30 40% 3.2s square
 *
 * `scoped` draws until its scope closes, then erases the line (the command prints its own result
 * after it). Between updates a timer redraws the line every `intervalMs`, so the spinner and the
 * elapsed time move while nothing else does. The line never wraps: it is cut to the terminal's
 * width. `make` is the same without Effect, for plain Promise code.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/** What the line shows; every field is optional, and an update replaces only the fields it names. @since 0.1.0 @category models */
export interface Status {
  /** What is being done: `activating snapshot`, `draining w1`. */
  readonly label?: string | undefined
  /** Units done so far, of `total` when it is known. */
  readonly done?: number | undefined
  readonly total?: number | undefined
  /** What is being worked on now (a tool's name). */
  readonly detail?: string | undefined
}

/** @since 0.1.0 @category models */
export interface Progress {
  /** Whether anything is drawn (stderr is a terminal). */
  readonly enabled: boolean
  /** Changes the fields of the status it names and redraws. */
  readonly update: (status: Status) => void
  /** Erases the line and stops redrawing; later updates draw nothing. */
  readonly stop: () => void
}

/** A writable terminal stream, as much of it as the line needs. @since 0.1.0 @category models */
export interface Output {
  readonly isTTY?: boolean | undefined
  readonly columns?: number | undefined
  readonly write: (text: string) => unknown
}

/** @since 0.1.0 @category models */
export interface ProgressOptions {
  /** Where the line goes (default `process.stderr`). */
  readonly output?: Output | undefined
  /** Draw or not whatever the stream is (default: when the stream is a terminal and `TERM` is not `dumb`). */
  readonly enabled?: boolean | undefined
  /** How often the line is redrawn without updates (default 100 ms). */
  readonly intervalMs?: number | undefined
  /** The status to start with. */
  readonly status?: Status | undefined
}

/** The escape sequences the line is drawn with. @since 0.1.0 @category constants */
export const ansi = {
  /** Carriage return and erase the whole line. */
  clearLine: "\r\x1b[2K",
  hideCursor: "\x1b[?25l",
  showCursor: "\x1b[?25h"
} as const

const spinner = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"] as const
const barWidth = 20

const seconds = (ms: number): string => ms < 60_000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.floor(ms / 60_000)}m${String(Math.floor(ms / 1000) % 60).padStart(2, "0")}s`

/**
 * The text of the line for `status`, `elapsedMs` into the operation at redraw number `frame`, cut
 * to `columns` characters.
 *
 * @since 0.1.0
 * @category formatting
 */
export const render = (status: Status, elapsedMs: number, frame: number, columns: number): string => {
  const parts: Array<string> = [spinner[frame % spinner.length]!]
  if (status.label !== undefined) parts.push(status.label)
  const { done, total } = status
  if (total !== undefined && total > 0 && done !== undefined) {
    const fraction = Math.min(1, Math.max(0, done / total))
    const filled = Math.round(fraction * barWidth)
    parts.push(`[${"#".repeat(filled)}${"-".repeat(barWidth - filled)}]`, `${done}/${total}`, `${Math.floor(fraction * 100)}%`)
  } else if (done !== undefined) {
    parts.push(String(done))
  }
  parts.push(seconds(elapsedMs))
  if (status.detail !== undefined && status.detail !== "") parts.push(status.detail)
  const line = parts.join(" ").replace(/[\r\n\x1b]/g, " ")
  const width = Math.max(10, columns - 1)
  return line.length > width ? `${line.slice(0, width - 1)}…` : line
}

/**
 * Whether `output` is a terminal worth drawing on.
 *
 * @since 0.1.0
 * @category predicates
 */
export const isTerminal = (output: Output): boolean => output.isTTY === true && process.env.TERM !== "dumb"

/**
 * Starts drawing (when enabled); call `stop` when the operation ends.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: ProgressOptions = {}): Progress => {
  const output = options.output ?? process.stderr
  const enabled = options.enabled ?? isTerminal(output)
  if (!enabled) return { enabled, update: () => undefined, stop: () => undefined }
  const started = Date.now()
  let status: Status = { ...options.status }
  let frame = 0
  let stopped = false
  const draw = () => {
    if (stopped) return
    output.write(`${ansi.clearLine}${render(status, Date.now() - started, frame++, output.columns || 80)}`)
  }
  const timer = setInterval(draw, options.intervalMs ?? 100)
  timer.unref()
  output.write(ansi.hideCursor)
  draw()
  return {
    enabled,
    update: (change) => {
      status = { ...status, ...change }
      draw()
    },
    stop: () => {
      if (stopped) return
      stopped = true
      clearInterval(timer)
      output.write(`${ansi.clearLine}${ansi.showCursor}`)
    }
  }
}

/**
 * A progress line for the life of the scope: erased when the scope closes, however it closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const scoped = (options: ProgressOptions = {}): Effect.Effect<Progress, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.sync(() => make(options)), (progress) => Effect.sync(progress.stop))
