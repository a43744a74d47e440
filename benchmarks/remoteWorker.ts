/**
 * A worker process for benchmarks/remote.ts: connects to BENCH_SERVER, serves namespace
 * BENCH_NAMESPACE with one `Worker` per entry of BENCH_POOLS (JSON: pool, concurrency, backlog,
 * the sandbox's maximumRuntimeEnvironments, requireAdmission), as `jitbox worker` runs one, prints
 * `ready` once all serve, and on SIGTERM closes its scope (each worker drains and kills its sandbox
 * children) and exits.
 */
import { Ids, Subject, Worker } from "@jitbox/runtime"
import { NatsConnection, NatsTransport } from "@jitbox/nats"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"

export interface PoolSpec {
  readonly pool: string
  readonly concurrency: number
  readonly backlog: number
  readonly maximumRuntimeEnvironments: number
  /** Whether requests must carry a lease the coordinator confirms (the worker's default: true). */
  readonly requireAdmission?: boolean
}

const pools = JSON.parse(process.env.BENCH_POOLS!) as ReadonlyArray<PoolSpec>

const main = Effect.gen(function*() {
  const scope = yield* Scope.make()
  const transport = yield* Layer.buildWithScope(NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer({ servers: process.env.BENCH_SERVER!, name: "bench-worker" }))), scope)
  for (const spec of pools) {
    yield* Worker.make({
      prefix: Subject.prefix(Ids.namespace(process.env.BENCH_NAMESPACE!)),
      pool: spec.pool,
      languages: ["javascript", "typescript"],
      concurrency: spec.concurrency,
      backlog: spec.backlog,
      graceMs: 1_000,
      sandbox: { maximumRuntimeEnvironments: spec.maximumRuntimeEnvironments },
      ...(spec.requireAdmission === undefined ? {} : { requireAdmission: spec.requireAdmission })
    }).pipe(Effect.provide(transport), Scope.extend(scope))
  }
  process.stdout.write("ready\n")
  yield* Effect.async<void>((resume) => {
    process.once("SIGTERM", () => resume(Effect.void))
  })
  yield* Scope.close(scope, Exit.void)
})

Effect.runPromise(main).then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${String(error)}\n`)
    process.exit(1)
  }
)
