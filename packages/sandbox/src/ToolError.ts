/**
 * What a sandboxed tool threw, as the host rethrows it: an `Error` whose `name` is the type the
 * value had in the child (`ValueError`, `TypeError`, `QuotaError`; `NonZeroExit` for a Bash script
 * that exited non-zero) and whose `message` is its message. It carries no `_tag`, so every reader
 * of a thrown value agrees with core's `ThrownValue` (the profile record, events, the error cache)
 * and with a printer that reads `_tag` first and `name` otherwise (the agent): both say
 * `ValueError: bad value`, as they would had the tool run in process.
 *
 * A child names its own error types: a name the host keeps for its own errors (`ToolCancelled`,
 * `ToolTimeout`, `SandboxError`, …) is not taken at its word (`fromChild`).
 *
 * @since 0.1.0
 */
import { HarnessError } from "@jitbox/core"

/** @since 0.1.0 @category errors */
export class ToolError extends Error {
  readonly toolName: string
  /** The child-side type name; also the error's `name`. */
  readonly errorType: string

  constructor(options: { readonly toolName: string; readonly errorType: string; readonly message: string }) {
    super(options.message)
    this.toolName = options.toolName
    this.errorType = options.errorType
    Object.defineProperty(this, "name", { value: options.errorType, writable: true, configurable: true, enumerable: false })
    // the host-side frames say nothing about where the tool failed
    this.stack = `${options.errorType}: ${options.message}\n    in the sandboxed tool '${options.toolName}'`
  }
}

// A classifier that falls back to the constructor's name for an error named "Error" (core's
// `ThrownValue` does, to tell `class QuotaError extends Error {}` from `Error`) must read "Error"
// for a tool that threw a plain `Error`, not this class's name.
Object.defineProperty(ToolError, "name", { value: "Error" })

/** @since 0.1.0 @category refinements */
export const isToolError = (u: unknown): u is ToolError => u instanceof ToolError

/** Error names of the host's own besides the harness's tags. */
const hostErrorNames = new Set(["SandboxError", "ToolFailure", "TransportError", "ProtocolError", "RemoteExecutionError", "OwnershipError", "ToolError"])

/**
 * The error a child reported, as its own: a type name the host keeps for its own errors becomes
 * `ToolError` with the claimed name in the message, so a tool cannot pass its failure off as a
 * cancellation, a timeout or a sandbox failure.
 *
 * @since 0.1.0 @category constructors
 */
export const fromChild = (toolName: string, reported: { readonly type: string; readonly message: string }): ToolError =>
  HarnessError.isHarnessErrorTag(reported.type) || hostErrorNames.has(reported.type)
    ? new ToolError({
      toolName,
      errorType: "ToolError",
      message: `the tool raised an error named ${reported.type}, a name the host keeps for its own errors: ${reported.message}`
    })
    : new ToolError({ toolName, errorType: reported.type, message: reported.message })
