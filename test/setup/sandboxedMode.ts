/**
 * Vitest setup of the "sandboxed" project: the core suites it includes build every harness through
 * `fixtures.makeHarness`, which picks these options up, so the same tests run with each code
 * package in a sandboxed child process instead of in process.
 */
import { afterAll } from "vitest"
import { SandboxRunner } from "@jitbox/sandbox"

const runner = SandboxRunner.make({ shortTimeoutSeconds: 60, maximumRuntimeEnvironments: 4 })
;(globalThis as { __jitboxTestHarnessOptions?: unknown }).__jitboxTestHarnessOptions = {
  codeExecution: "sandboxed",
  runners: [runner]
}
afterAll(() => runner.close())
