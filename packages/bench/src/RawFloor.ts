/**
 * The raw-transport floor: the call's arguments as JSON text, carried the way a code tool's call is
 * carried on the target, with no jitbox code on the path, to a warm raw child (`RawEcho`, launched
 * like the sandbox's JavaScript children) that echoes them back:
 *
 * - embedded (in-memory transport: function calls in this process): the pipe round trip to the
 *   child, which is what the sandbox hop costs at least;
 * - remote: a nats.js request from one connection to a responder on another connection of this
 *   process (through the nats-server), which pipes it to the child and answers with its line. The
 *   responder is the one `benchmarks/remote.ts` runs in a process of its own.
 *
 * A plain harness has no transport: it has no raw floor.
 *
 * @since 0.1.0
 */
import { NatsConnection } from "@jitbox/nats"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { BenchSetupError, describe } from "./BenchError.js"
import * as RawEcho from "./RawEcho.js"

/** @since 0.1.0 @category models */
export interface RawFloor {
  readonly description: string
  /** One round trip of `args` (JSON text). */
  readonly call: (args: string) => Promise<unknown>
}

/**
 * The embedded raw floor: the pipe round trip to a warm raw child.
 *
 * @since 0.1.0
 * @category constructors
 */
export const pipe: Effect.Effect<RawFloor, BenchSetupError, Scope.Scope> = Effect.map(RawEcho.make, (echo) => ({
  description: "a JSON-lines round trip over a pipe to a warm raw Node child launched like the sandbox's (no jitbox code)",
  call: echo.roundTrip
}))

/**
 * Answers requests on `subject` through `echo` on `connection` (until the scope closes).
 *
 * @since 0.1.0
 * @category constructors
 */
export const respond = (
  connection: NatsConnection.NatsConnectionShape["nc"],
  subject: string,
  echo: RawEcho.RawEcho
): Effect.Effect<void, BenchSetupError, Scope.Scope> =>
  Effect.gen(function*() {
    const decoder = new TextDecoder()
    yield* Effect.acquireRelease(
      Effect.sync(() =>
        connection.subscribe(subject, {
          callback: (error, msg) => {
            if (error !== null) return
            echo.roundTrip(decoder.decode(msg.data)).then((line) => msg.respond(line), () => undefined)
          }
        })
      ),
      (subscription) => Effect.sync(() => subscription.unsubscribe())
    )
    yield* Effect.tryPromise({
      try: () => connection.flush(),
      catch: (error) => new BenchSetupError({ step: "subscribing the raw responder", detail: describe(error) })
    })
  })

let floors = 0

/**
 * The remote raw floor: a nats.js request through the server to a responder of this process that
 * pipes it to a warm raw child.
 *
 * @since 0.1.0
 * @category constructors
 */
export const nats = (options: NatsConnection.NatsConnectionOptions): Effect.Effect<RawFloor, BenchSetupError, Scope.Scope> =>
  Effect.gen(function*() {
    const connect = (name: string) =>
      NatsConnection.make({ ...options, name }).pipe(
        Effect.map(({ nc }) => nc),
        Effect.mapError((error) => new BenchSetupError({ step: "connecting the raw floor to NATS", detail: describe(error) }))
      )
    const echo = yield* RawEcho.make
    const responder = yield* connect("jitbox-bench-raw-responder")
    const caller = yield* connect("jitbox-bench-raw-caller")
    const subject = `jitbox_bench_raw.${process.pid}.${++floors}`
    yield* respond(responder, subject, echo)
    const encoder = new TextEncoder()
    return {
      description: "a nats.js request through the server to a responder (its own connection, no jitbox code) that pipes it to a warm raw Node child launched like the sandbox's",
      call: (args) => caller.request(subject, encoder.encode(args), { timeout: 30_000 })
    }
  })
