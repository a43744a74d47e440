/**
 * What the KV client's rejections mean, for the KV stores of this package.
 */

/** The message of what the client threw. */
export const detail = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** The server refused a write whose expected revision is not the key's last one. */
export const isConflict = (error: unknown): boolean => {
  const code = (error as { code?: unknown; api_error?: { err_code?: unknown } })?.api_error?.err_code
  return code === 10071 || /wrong last sequence|key exists/i.test(detail(error))
}
