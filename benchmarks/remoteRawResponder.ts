/**
 * The raw floor's responder for benchmarks/remote.ts, in its own process: a nats.js subscription
 * on BENCH_RAW_SUBJECT hands each request, as one JSON line with an id, to one warm raw child over
 * its stdin pipe and answers the request with the line the child writes back. No jitbox code is on
 * the path: the connection is nats.js's `connect` with the options jitbox's transport passes
 * (`NatsConnection.make`), and the child is a JSON-lines echo loop launched as the sandbox
 * launches a JavaScript tool's child. The child and the responder are @jitbox/bench's (`RawEcho`,
 * `RawFloor.respond`), the same `jitbox bench` measures its remote raw floor with; only the process
 * differs (the responder runs here, away from the benchmark's own process).
 *
 * With BENCH_EXCLUSIVE_SUBJECT it also answers there through BENCH_EXCLUSIVE_CHILDREN more raw
 * children, each given one request at a time (`ExclusiveChildren`): the floor for jitbox's
 * isolation, one invocation per sandboxed child at a time.
 *
 * Prints `ready` once a first round trip through the child worked; on SIGTERM kills the child's
 * group, drains the connection and exits.
 */
import { ExclusiveChildren, RawEcho, RawFloor } from "@jitbox/bench"
import { NatsConnection } from "@jitbox/nats"
import * as Effect from "effect/Effect"

const main = Effect.scoped(Effect.gen(function*() {
  const echo = yield* RawEcho.make
  const { nc } = yield* NatsConnection.make({ servers: process.env.BENCH_SERVER!, name: "bench-raw-responder" })
  yield* RawFloor.respond(nc, process.env.BENCH_RAW_SUBJECT!, echo)
  const exclusiveSubject = process.env.BENCH_EXCLUSIVE_SUBJECT
  if (exclusiveSubject !== undefined) {
    const children = yield* ExclusiveChildren.make(Number(process.env.BENCH_EXCLUSIVE_CHILDREN ?? 1))
    yield* RawFloor.respond(nc, exclusiveSubject, children)
  }
  process.stdout.write("ready\n")
  yield* Effect.async<void>((resume) => {
    process.once("SIGTERM", () => resume(Effect.void))
  })
}))

Effect.runPromise(main).then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${String(error)}\n`)
    process.exit(1)
  }
)
