/**
 * A session host's check of its `--profile` and `--policy` at start, against the namespace's
 * coordinator: a profile the coordinator does not have, or a request policy asking for more than
 * the profile allows, fails the command before it says `ready` (a `ConfigError` naming the flag),
 * rather than every session on its first use. When no coordinator answers yet, the host starts and
 * says so on stderr: the first session to activate is checked then.
 *
 * @since 0.1.0
 */
import { HarnessError, type JitPolicy } from "@jitbox/core"
import { CoordinatorClient, ExecutionProfile, type Subject } from "@jitbox/runtime"
import type { Transport } from "@jitbox/runtime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"

/** How long the coordinator may take to answer at start. */
const timeoutMs = 5_000

/**
 * Checks that `profile` exists and that `policy` fits in it, asking the coordinator as `principal`.
 *
 * @since 0.1.0
 * @category checks
 */
export const check = (options: {
  readonly prefix: Subject.Prefix
  readonly principal: string
  readonly profile: string
  readonly policy: JitPolicy.JitPolicyInput | undefined
  readonly deploymentConsent: boolean
}): Effect.Effect<void, HarnessError.ConfigError, Transport.Transport> =>
  Effect.gen(function*() {
    if (!options.deploymentConsent) {
      yield* Console.error(`jitbox: --profile ${options.profile} without --deployment-consent: the coordinator grants these sessions no code, and every code tool is refused ConsentRequired`)
    }
    const client = yield* CoordinatorClient.make({ prefix: options.prefix, principal: options.principal, timeoutMs })
    const ceiling = yield* Effect.either(client.policy(options.profile))
    if (ceiling._tag === "Left") {
      const error = ceiling.left
      if (error._tag === "AdmissionError" && error.reason === "ProfileNotFound") {
        return yield* new HarnessError.ConfigError({ option: "--profile", detail: `the coordinator has no execution profile '${options.profile}' (${error.detail}); add it to the file of the coordinator's --profiles` })
      }
      return yield* Console.error(`jitbox: no coordinator answered (${error.message}); --profile and --policy are checked when the first session activates`)
    }
    yield* Effect.try({
      try: () => ExecutionProfile.effectivePolicy(ExecutionProfile.make({ name: options.profile, policy: ceiling.right }), options.policy),
      catch: (error) =>
        new HarnessError.ConfigError({
          option: "--policy",
          detail: error instanceof HarnessError.ConfigError ? `${error.option}: ${error.detail}` : String(error)
        })
    })
  })
