/**
 * What the `jitbox` process exits with, for scripts:
 *
 * | code | meaning |
 * |---|---|
 * | 0 | it did what was asked; a server stopped by SIGTERM or SIGINT; `events tail` stopped by a signal, `--count` or `--timeout` |
 * | 1 | it failed: the typed error is on stderr (`jitbox: <Tag>: <message>`): NATS unreachable, no coordinator answering (`status`), a snapshot that does not decode or would not activate (`snapshot verify`), … |
 * | 2 | bad arguments: the parser's message (and the help) is on stderr |
 * | 3 | `snapshot diff --exit-code`: the two snapshots differ |
 *
 * @since 0.1.0
 */
import { ValidationError } from "@effect/cli"
import * as Cause from "effect/Cause"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/** @since 0.1.0 @category constants */
export const codes = { ok: 0, failure: 1, usage: 2, differ: 3 } as const

/**
 * Not a failure but an answer a script asks for with an exit code (`snapshot diff --exit-code`):
 * the process exits `code` without printing an error.
 *
 * @since 0.1.0
 * @category errors
 */
export class ExitWith extends Schema.TaggedError<ExitWith>()("ExitWith", { code: Schema.Int, detail: Schema.String }) {}

/**
 * The exit code of the program's end.
 *
 * @since 0.1.0
 * @category running
 */
export const of = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)) return codes.ok
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) {
    if (ValidationError.isValidationError(failure.value)) return ValidationError.isHelpRequested(failure.value) ? codes.ok : codes.usage
    if (failure.value instanceof ExitWith) return failure.value.code
  }
  return codes.failure
}

/**
 * `NodeRuntime.runMain`'s `teardown`: exits with `of(exit)`.
 *
 * @since 0.1.0
 * @category running
 */
export const teardown = (exit: Exit.Exit<unknown, unknown>, onExit: (code: number) => void): void => onExit(of(exit))
