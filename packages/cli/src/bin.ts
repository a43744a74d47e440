#!/usr/bin/env node
/**
 * The `jitbox` executable: `Cli.main` on Node, where SIGTERM and SIGINT interrupt it (closing
 * every scope, so workers drain) and it exits 0; a bad argument (the parser's `ValidationError`)
 * exits 2, any other failure 1.
 *
 * @since 0.1.0
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { ValidationError } from "@effect/cli"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Cli from "./Cli.js"

const exitCode = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)) return 0
  const failure = Cause.failureOption(exit.cause)
  return Option.isSome(failure) && ValidationError.isValidationError(failure.value) ? 2 : 1
}

Cli.main(process.argv).pipe(
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true, teardown: (exit, onExit) => onExit(exitCode(exit)) })
)
