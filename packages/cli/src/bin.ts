#!/usr/bin/env node
/**
 * The `jitbox` executable: `Cli.main` on Node, where SIGTERM and SIGINT interrupt it (closing
 * every scope, so workers drain) and it exits 0; a failure exits 1, bad arguments 2 (`ExitCode`).
 *
 * @since 0.1.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Cli from "./Cli.js"
import * as ExitCode from "./ExitCode.js"

Cli.main(process.argv).pipe(Effect.provide(NodeContext.layer), NodeRuntime.runMain({ disableErrorReporting: true, teardown: ExitCode.teardown }))
