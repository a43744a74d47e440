/**
 * A plain-text table: a header row and rows, each column as wide as its widest cell, columns two
 * spaces apart, no trailing spaces. Cells are cut to `maxCell` characters and never hold a line
 * break or an escape character, so a value from the wire cannot move the cursor or break a row.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 @category constants */
export const maxCell = 48

/**
 * A cell's text: control characters become spaces, and it is cut to `max` characters.
 *
 * @since 0.1.0
 * @category formatting
 */
export const cell = (value: unknown, max: number = maxCell): string => {
  const text = (value === undefined || value === null ? "-" : String(value)).replace(/[\x00-\x1f\x7f]/g, " ")
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

/**
 * The lines of the table, header first; `indent` goes before each line.
 *
 * @since 0.1.0
 * @category formatting
 */
export const render = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<unknown>>, indent = ""): Array<string> => {
  const cells = [headers.map((header) => cell(header)), ...rows.map((row) => headers.map((_, index) => cell(row[index])))]
  const widths = headers.map((_, index) => Math.max(...cells.map((row) => row[index]!.length)))
  return cells.map((row) => (indent + row.map((text, index) => index === row.length - 1 ? text : text.padEnd(widths[index]!)).join("  ")).trimEnd())
}

/**
 * A span of milliseconds as people read it: `850ms`, `12.5s`, `4m05s`, `2h10m`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const span = (ms: number): string => {
  if (!Number.isFinite(ms)) return "-"
  const sign = ms < 0 ? "-" : ""
  const abs = Math.abs(ms)
  if (abs < 1_000) return `${sign}${Math.round(abs)}ms`
  if (abs < 60_000) return `${sign}${(abs / 1_000).toFixed(1)}s`
  if (abs < 3_600_000) return `${sign}${Math.floor(abs / 60_000)}m${String(Math.floor(abs / 1_000) % 60).padStart(2, "0")}s`
  return `${sign}${Math.floor(abs / 3_600_000)}h${String(Math.floor(abs / 60_000) % 60).padStart(2, "0")}m`
}
