/**
 * The distributed runtime against its floor, over a real nats-server, in one run:
 *
 * - **raw floor**: a nats.js request from this process to a responder in another process
 *   (benchmarks/remoteRawResponder.ts) that hands the request over a pipe to one warm raw child,
 *   launched as the sandbox launches a JavaScript tool's child (prlimit, bubblewrap, seccomp,
 *   permission flags, uid, scrubbed environment), running a JSON-lines echo loop, and replies with
 *   the child's answer: NATS and a subprocess, no jitbox code. At 64 in flight this floor pipelines
 *   every request into its one child.
 * - **raw floor with jitbox's isolation**: the same responder process answering on another subject
 *   through as many raw children as the echo pool keeps warm (2), each given one request at a time
 *   (`ExclusiveChildren`), as a worker runs one invocation per sandboxed child at a time.
 * - **jitbox**: a session hosted here (`Sessions` + `RemoteCodeRunner` over `NatsTransport`, with
 *   each session admitted through `Sessions`' `admission` (a `LeasedAdmission` lease from a
 *   `Coordinator` on a JetStream KV ledger) and a `StreamPublisher`) calls a
 *   trivial JavaScript echo tool, sandboxed on a warm worker in another process
 *   (benchmarks/remoteWorker.ts, checking each session's lease with the coordinator): admission
 *   lease, dispatch, profiling record, events, worker, sandbox and back.
 *
 * Cases: latency with 1 call in flight (raw and jitbox samples interleaved one by one, the order
 * alternating); throughput with 64 calls in flight (both floors and jitbox take turns in timed
 * rounds, the order rotating);
 * composition (a code tool calling a code tool calling a base tool: NATS requests per outer call,
 * counted on a `>` subscription, and µs per nesting level, depths 0, 1 and 2 interleaved); scale-out
 * (a tool burning about 10 ms of CPU, one worker process against two, rounds alternating). Each
 * round opens a new jitbox session (a fresh lease: a policy allows at most 6,400 invocations per
 * session) and warms it up before it is timed. Last, the `jitbox` command itself with default flags
 * (benchmarks/remoteCli.ts): a coordinator, two workers and a session host as processes, tools
 * composing at depths 0, 1, 2, and the sandbox children its workers start per warm call.
 *
 * Each case also reads, from /proc, the CPU time and the read / write system calls of every process
 * (this one, nats-server, the workers and their sandbox children, the raw responder and its
 * child), per call; and the whole system's CPU per call at 64 in flight: this process and every
 * process below it, reaped children included (`ProcessCpu`). Scale-out is set beside the machine's
 * own: the same loop in one and in two threads, no jitbox, interleaved with the workers' rounds (the
 * machine is shared); its target is a share of the machine's ratio.
 *
 * The lease grants the coordinator's default number of invocations at a time (BENCH_GRANT sets
 * another: with 64, an earlier default, a lease ran dry at 64 calls in flight and calls were refused
 * `BudgetExhausted` until the renewal landed).
 *
 * Writes benchmarks/results/remote.json and remote.md (generated tables, then the notes kept below
 * the marker line; not committed: the runs and notes start from benchmarks/reference/ when there
 * are no results yet). `--quick` is a short smoke run that writes nothing; so does a run of some phases.
 *
 * Run: pnpm bench:remote   (BENCH_ROUNDS, BENCH_LATENCY_PAIRS, BENCH_THROUGHPUT_MS,
 * BENCH_COMPOSITION, BENCH_SCALE_MS, BENCH_CLI_SAMPLES, BENCH_PHASES=latency,throughput,composition,scale,cli, BENCH_LABEL,
 * BENCH_CODE, BENCH_GRANT; BENCH_DEBUG=1 prints per-call CPU and system calls of each round.
 * For finding where the time goes: BENCH_PHASES=parts times the echo call with and without the lease
 * and the stream publisher, interleaved (BENCH_PROFILE_IN_FLIGHT calls in flight, default 1);
 * BENCH_PHASES=profile only makes jitbox calls, for `node --cpu-prof`; BENCH_CPU_PROF=<dir> starts
 * the worker processes with --cpu-prof into <dir>.)
 */
import { tool } from "@jitbox/core"
import { KvLedger, NatsConnection, NatsTransport } from "@jitbox/nats"
import {
  Coordinator,
  ExecutionProfile,
  Ids,
  RemoteCodeRunner,
  Sessions,
  SnapshotStore,
  StreamPublisher,
  Subject,
  Transport
} from "@jitbox/runtime"
import { NatsServer } from "@jitbox/testing"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { type ChildProcess, execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Worker as Thread } from "node:worker_threads"
import type { PoolSpec } from "./remoteWorker.js"
import { Measure, ProcessCpu } from "@jitbox/bench"
import { previous, resultsDir } from "./output.js"
import { killAll, startProcess, stopProcess } from "./processes.js"
import { type CliResult, runCli } from "./remoteCli.js"

const { median, quantile, round } = Measure
const { descendants } = ProcessCpu

const quick = process.argv.includes("--quick")
const env = (name: string, full: number, short: number) => Number(process.env[name] ?? (quick ? short : full))
const rounds = env("BENCH_ROUNDS", 6, 2)
const latencyPairs = env("BENCH_LATENCY_PAIRS", 300, 30)
const throughputMs = env("BENCH_THROUGHPUT_MS", 1_500, 300)
const compositionSamples = env("BENCH_COMPOSITION", 100, 10)
const scaleMs = env("BENCH_SCALE_MS", 2_000, 500)
const cliSamples = env("BENCH_CLI_SAMPLES", 200, 20)
const allPhases = ["latency", "throughput", "composition", "scale", "cli"]
const phases = (process.env.BENCH_PHASES ?? allPhases.join(",")).split(",")
const label = process.env.BENCH_LABEL ?? ""
const cpuProfDir = process.env.BENCH_CPU_PROF
const workerNodeFlags = cpuProfDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${cpuProfDir}`]
const inFlight = 64
const scaleInFlight = 8
const burnTargetMs = 10
const debug = (line: string) => {
  if (process.env.BENCH_DEBUG !== undefined) console.log(`[${(performance.now() / 1000).toFixed(1)} s] ${line}`)
}

const namespace = Ids.namespace(`bench_${process.pid}`)
const prefix = Subject.prefix(namespace)
const rawSubject = `bench.raw.${process.pid}.echo`
const exclusiveSubject = `bench.exclusive.${process.pid}.echo`

/**
 * Worker pools: `default` for the echo cases (the sandbox's default of 2 warm children); `compose`
 * for composition (three tools of a session and a nested invocation need 4 warm children, else
 * they evict each other's); `solo` (one process) and `pair` (two) for scale-out, one invocation at
 * a time each: one core's worth.
 */
const pools = {
  default: { pool: "default", concurrency: 8, backlog: 64, maximumRuntimeEnvironments: 2 },
  compose: { pool: "compose", concurrency: 8, backlog: 64, maximumRuntimeEnvironments: 4 },
  solo: { pool: "solo", concurrency: 1, backlog: 16, maximumRuntimeEnvironments: 1 },
  pair: { pool: "pair", concurrency: 1, backlog: 16, maximumRuntimeEnvironments: 1 },
  /** `default` without lease checks, for sessions hosted without admission (`BENCH_PHASES=parts`). */
  open: { pool: "open", concurrency: 8, backlog: 64, maximumRuntimeEnvironments: 2, requireAdmission: false }
} satisfies Record<string, PoolSpec>

/** The ceiling and the request are the same: the most a policy allows per session. */
const policy = {
  allowedLanguages: ["JavaScript"] as Array<"JavaScript">,
  maximumInvocations: 6_400,
  maximumConcurrentInvocations: 8,
  maximumTools: 16
}
const profiles = ExecutionProfile.all([{ name: "bench", policy }])
/** Invocations one lease grant adds (BENCH_GRANT; else the coordinator's default). */
const invocationsPerGrant = process.env.BENCH_GRANT === undefined ? undefined : Number(process.env.BENCH_GRANT)

const add = tool({
  name: "add",
  description: "Add two integers.",
  guidelines: "Use for integer addition.",
  parameters: { type: "object", properties: { left: { type: "integer" }, right: { type: "integer" } }, required: ["left", "right"] }
}, ({ left, right }: { left: number; right: number }) => left + right)

const sources = {
  echo: `export const echo = tool({ description: "Echo the arguments.", guidelines: "Use in benchmarks." }, (args) => args)\n`,
  nest1: `export const nest1 = tool({ description: "Adds 1 with add.", guidelines: "Use in benchmarks." },
  async (args) => await harness.callTool("add", { left: args.i, right: 1 }))\n`,
  nest2: `export const nest2 = tool({ description: "Calls nest1.", guidelines: "Use in benchmarks." },
  async (args) => await harness.callTool("nest1", args))\n`,
  burn: `export const burn = tool({ description: "Burns CPU.", guidelines: "Use in benchmarks." }, ({ n }) => {
  let x = 1
  for (let i = 0; i < n; i++) x = (Math.imul(x, 1103515245) + 12345) | 0
  return x
})\n`
} as const
type ToolName = keyof typeof sources

// ---------------------------------------------------------------------------------------------
// statistics

const sum = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0)

interface Latency {
  readonly p50_us: number
  readonly p90_us: number
  readonly p99_us: number
  readonly samples: number
}

/** `samples` in ms. */
const latency = (samples: ReadonlyArray<number>): Latency => ({
  p50_us: round(quantile(samples, 0.5) * 1000),
  p90_us: round(quantile(samples, 0.9) * 1000),
  p99_us: round(quantile(samples, 0.99) * 1000),
  samples: samples.length
})

interface PairedRatio {
  /** Median over all pairs of (jitbox sample / the raw sample of the same iteration). */
  readonly median: number
  readonly p25: number
  readonly p75: number
  readonly round_medians: ReadonlyArray<number>
}

const paired = (jitbox: ReadonlyArray<ReadonlyArray<number>>, raw: ReadonlyArray<ReadonlyArray<number>>): PairedRatio => {
  const perRound = jitbox.map((samples, r) => samples.map((x, i) => x / raw[r]![i]!))
  const all = perRound.flat()
  return {
    median: round(median(all), 3),
    p25: round(quantile(all, 0.25), 3),
    p75: round(quantile(all, 0.75), 3),
    round_medians: perRound.map((samples) => round(median(samples), 3))
  }
}

const now = () => performance.now()
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Milliseconds one awaited call took. */
const time = async (call: () => Promise<unknown>): Promise<number> => {
  const start = now()
  await call()
  return now() - start
}

interface Saturated {
  readonly calls: number
  readonly seconds: number
  readonly errors: number
  readonly firstError: string | undefined
  /** What each group of processes used in the window. */
  readonly usage: Record<string, Usage>
  /** CPU of every process of the benchmark (this one and all below it, reaped children included) in the window, ms. */
  readonly treeCpuMs: number
}

// ---------------------------------------------------------------------------------------------
// CPU and system calls: user + system time (clock ticks) and read/write system calls of each
// process, from /proc

interface Usage {
  /** User + system CPU, ms. */
  readonly cpu_ms: number
  /** read-like and write-like system calls (/proc/<pid>/io syscr, syscw). */
  readonly reads: number
  readonly writes: number
}

const msPerTick = 1000 / 100

const usageOf = (pid: number): Usage => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const io = fs.readFileSync(`/proc/${pid}/io`, "utf8")
    return {
      cpu_ms: (Number(fields[11]) + Number(fields[12])) * msPerTick,
      reads: Number(/syscr: (\d+)/.exec(io)?.[1] ?? 0),
      writes: Number(/syscw: (\d+)/.exec(io)?.[1] ?? 0)
    }
  } catch {
    return { cpu_ms: 0, reads: 0, writes: 0 }
  }
}

/** The processes of the benchmark by role, found again at each reading (sandbox children come and go). */
let roles: () => Record<string, ReadonlyArray<number>> = () => ({ bench: [process.pid] })

/**
 * Starts a reading; the function it returns gives what each role used since. This process is read
 * after listing the others at the start and before at the end, so their listing is not counted.
 */
const usageSince = (): (() => Record<string, Usage>) => {
  const before = new Map<number, Usage>()
  for (const pids of Object.values(roles())) for (const pid of pids) if (pid !== process.pid) before.set(pid, usageOf(pid))
  before.set(process.pid, usageOf(process.pid))
  return () => {
    const self = usageOf(process.pid)
    return Object.fromEntries(Object.entries(roles()).map(([role, pids]) => {
      let cpu = 0
      let reads = 0
      let writes = 0
      for (const pid of pids) {
        const now = pid === process.pid ? self : usageOf(pid)
        const then = before.get(pid) ?? { cpu_ms: 0, reads: 0, writes: 0 }
        cpu += now.cpu_ms - then.cpu_ms
        reads += now.reads - then.reads
        writes += now.writes - then.writes
      }
      return [role, { cpu_ms: cpu, reads, writes }]
    }))
  }
}

const usageTotal = (readings: ReadonlyArray<Record<string, Usage>>): Record<string, Usage> => {
  const total: Record<string, Usage> = {}
  for (const reading of readings) {
    for (const [role, u] of Object.entries(reading)) {
      const before = total[role] ?? { cpu_ms: 0, reads: 0, writes: 0 }
      total[role] = { cpu_ms: before.cpu_ms + u.cpu_ms, reads: before.reads + u.reads, writes: before.writes + u.writes }
    }
  }
  return total
}

type PerCall = Record<string, { cpu_us: number; reads: number; writes: number }>

/** Per call: CPU µs, reads and writes of each role that did anything. */
const perCall = (usage: Record<string, Usage>, calls: number): PerCall =>
  Object.fromEntries(
    Object.entries(usage)
      .filter(([, u]) => u.cpu_ms > 0 || u.writes > 0)
      .map(([role, u]) => [role, { cpu_us: round(u.cpu_ms * 1000 / calls), reads: round(u.reads / calls, 2), writes: round(u.writes / calls, 2) }])
  )

const showPerCall = (usage: Record<string, Usage>, calls: number) =>
  Object.entries(perCall(usage, calls)).map(([role, u]) => `${role} ${u.cpu_us} µs ${u.reads}r/${u.writes}w`).join(", ")

/**
 * `inFlight` loops each calling back to back: a discarded ramp-up of `warmMs`, then the calls
 * that complete within `ms` are counted. A failed call is counted and its loop pauses 1 ms.
 */
/**
 * Calls `call` with `inFlight` always in flight: `warmMs` unmeasured, then `ms` measured, or less
 * once `budget` calls (warm ones included) have ended, so that a session's invocation budget
 * (6,400 at most) never runs out inside the window and turns the rest of it into refusals.
 */
const saturate = async (call: () => Promise<unknown>, options: { inFlight: number; ms: number; warmMs: number; budget?: number }): Promise<Saturated> => {
  let done = 0
  let errors = 0
  let firstError: string | undefined
  let stop = false
  const loop = async () => {
    while (!stop) {
      try {
        await call()
        done++
      } catch (error) {
        errors++
        firstError ??= String(error)
        await sleep(1)
      }
    }
  }
  const loops = Array.from({ length: options.inFlight }, loop)
  await sleep(options.warmMs)
  const start = now()
  const before = done
  const errorsBefore = errors
  const usage = usageSince()
  const tree = ProcessCpu.since([process.pid])
  const budget = (options.budget ?? Infinity) - options.inFlight
  while (now() - start < options.ms && done + errors < budget) await sleep(Math.min(10, options.ms))
  const calls = done - before
  const seconds = (now() - start) / 1000
  const failed = errors - errorsBefore
  const treeCpuMs = tree()
  const used = usage()
  stop = true
  await Promise.all(loops)
  return { calls, seconds, errors: failed, firstError, usage: used, treeCpuMs }
}

// ---------------------------------------------------------------------------------------------
// the jitbox side: one connection, a coordinator, and a session host per round

type NatsClient = NatsConnection.NatsConnectionShape["nc"]

interface Bench {
  readonly root: Scope.CloseableScope
  readonly transport: Context.Context<Transport.Transport>
  readonly rawConnection: NatsClient
  readonly observer: NatsClient
  readonly runners: Record<string, Context.Context<never>>
}

let sessions = 0

interface OpenSession {
  readonly call: (name: ToolName, args: unknown) => Promise<unknown>
  readonly close: () => Promise<void>
}

/**
 * A new session, admitted under the `bench` profile (its own lease), hosted here with events and
 * records published, its code running on `pool`, with `tools` created.
 */
const openSession = async (
  bench: Bench,
  pool: keyof typeof pools,
  tools: ReadonlyArray<ToolName>,
  parts: { readonly lease: boolean; readonly streams: boolean } = { lease: true, streams: true }
): Promise<OpenSession> => {
  const sessionId = Ids.sessionId(`s${++sessions}`)
  const opened = now()
  const scope = await Effect.runPromise(Scope.fork(bench.root, ExecutionStrategy.sequential))
  try {
    const seams = await Effect.runPromise(
      Layer.buildWithScope(
        Layer.merge(parts.streams ? StreamPublisher.layer({ prefix }) : Layer.empty, SnapshotStore.layerMemory()),
        scope
      ).pipe(Effect.provide(bench.transport))
    )
    const host = await Effect.runPromise(
      Sessions.make({
        prefix,
        harness: { tools: [add] },
        idleTimeout: "1 hour",
        activation: false,
        ...(parts.lease ? { admission: { profile: "bench", policy, deploymentConsent: true } } : {})
      }).pipe(
        Effect.provide(Context.merge(Context.merge(bench.transport, bench.runners[parts.lease ? pool : "open"]!), seams)),
        Scope.extend(scope)
      )
    )
    const session = host.get(sessionId)
    const t0 = now()
    for (const name of tools) await session.createTool({ entrypoint: name, language: "javascript", source: sources[name] })
    debug(`session ${sessionId} on ${pool}: admitted and hosted in ${round(t0 - opened)} ms, tools created in ${round(now() - t0)} ms`)
    return {
      call: (name, args) => session.callTool(name, args),
      close: async () => {
        const t = now()
        await Effect.runPromise(Scope.close(scope, Exit.void))
        debug(`session ${sessionId} closed in ${round(now() - t)} ms`)
      }
    }
  } catch (error) {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw error
  }
}

/** A call of the raw floor: the pipelining one (`rawSubject`) or the one isolating calls as jitbox does (`exclusiveSubject`). */
const rawCall = (bench: Bench, subject = rawSubject) => {
  const encoder = new TextEncoder()
  return (i: number) => bench.rawConnection.request(subject, encoder.encode(`{"i":${i}}`), { timeout: 10_000 })
}

// ---------------------------------------------------------------------------------------------
// cases

interface LatencyCollected {
  raw: Array<Array<number>>
  jitbox: Array<Array<number>>
  /** What each role used over each round's timed pairs (one raw and one jitbox call each). */
  usage: Array<Record<string, Usage>>
}

const latencyRound = async (bench: Bench, into: LatencyCollected) => {
  const session = await openSession(bench, "default", ["echo"])
  const raw = rawCall(bench)
  try {
    const rawSamples: Array<number> = []
    const jitboxSamples: Array<number> = []
    const warmup = Math.max(20, Math.ceil(latencyPairs / 5))
    let usage: (() => Record<string, Usage>) | undefined
    for (let i = 0; i < warmup + latencyPairs; i++) {
      if (i === warmup) usage = usageSince()
      let a: number
      let b: number
      if (i % 2 === 0) {
        a = await time(() => raw(i))
        b = await time(() => session.call("echo", { i }))
      } else {
        b = await time(() => session.call("echo", { i }))
        a = await time(() => raw(i))
      }
      if (i >= warmup) {
        rawSamples.push(a)
        jitboxSamples.push(b)
      }
    }
    into.raw.push(rawSamples)
    into.jitbox.push(jitboxSamples)
    into.usage.push(usage!())
  } finally {
    await session.close()
  }
}

interface ThroughputCollected {
  raw: Array<Saturated>
  /** The raw floor with one call per child at a time, over as many children as the echo pool keeps. */
  exclusive: Array<Saturated>
  jitbox: Array<Saturated>
}

const throughputRound = async (bench: Bench, r: number, into: ThroughputCollected) => {
  const session = await openSession(bench, "default", ["echo"])
  const raw = rawCall(bench)
  const exclusive = rawCall(bench, exclusiveSubject)
  try {
    let i = 0
    const sides = [
      async () => into.raw.push(await saturate(() => raw(++i), { inFlight, ms: throughputMs, warmMs: 300 })),
      async () => into.exclusive.push(await saturate(() => exclusive(++i), { inFlight, ms: throughputMs, warmMs: 300 })),
      async () => into.jitbox.push(await saturate(() => session.call("echo", { i: ++i }), { inFlight, ms: throughputMs, warmMs: 600, budget: policy.maximumInvocations }))
    ]
    // each side first once in three rounds, the order reversed every other round
    const rotated = [...sides.slice(r % 3), ...sides.slice(0, r % 3)]
    for (const side of r % 2 === 0 ? rotated : rotated.reverse()) await side()
  } finally {
    await session.close()
  }
}

const depths = ["echo", "nest1", "nest2"] as const

interface CompositionCollected {
  samples: Array<Array<Array<number>>>
}

const compositionRound = async (bench: Bench, into: CompositionCollected) => {
  const session = await openSession(bench, "compose", ["echo", "nest1", "nest2"])
  try {
    const samples: Array<Array<number>> = depths.map(() => [])
    const warmup = Math.max(10, Math.ceil(compositionSamples / 5))
    for (let i = 0; i < warmup + compositionSamples; i++) {
      for (let k = 0; k < depths.length; k++) {
        const d = (k + i) % depths.length
        const ms = await time(() => session.call(depths[d]!, { i }))
        if (i >= warmup) samples[d]!.push(ms)
      }
    }
    into.samples.push(samples)
  } finally {
    await session.close()
  }
}

/** What one call of each depth sends, counted on a `>` subscription of a separate connection. */
const countMessages = async (bench: Bench, calls: number) => {
  const session = await openSession(bench, "compose", ["echo", "nest1", "nest2"])
  const counted: Record<string, Record<string, number>> = {}
  let current: Record<string, number> | undefined
  const subscription = bench.observer.subscribe(">", {
    callback: (error, msg) => {
      if (error !== null || current === undefined) return
      const s = msg.subject
      const kind = s.startsWith("_INBOX.")
        ? "replies"
        : s.endsWith(".invoke")
        ? "worker_invoke_requests"
        : s.endsWith(".nested")
        ? "nested_requests"
        : s.endsWith(".package")
        ? "package_requests"
        : s.includes(".coordinator.")
        ? "coordinator_requests"
        : s.includes(".events.")
        ? "event_messages"
        : s.includes(".profile.")
        ? "profile_records"
        : s.endsWith(".heartbeat")
        ? "heartbeats"
        : "other"
      current[kind] = (current[kind] ?? 0) + 1
      if (msg.reply !== undefined && msg.reply !== "") current.requests = (current.requests ?? 0) + 1
    }
  })
  try {
    await bench.observer.flush()
    for (let i = 0; i < 5; i++) for (const depth of depths) await session.call(depth, { i })
    await sleep(100)
    for (const [d, depth] of depths.entries()) {
      current = {}
      for (let i = 0; i < calls; i++) await session.call(depth, { i })
      await sleep(100)
      counted[d] = current
      current = undefined
    }
    current = {}
    for (let i = 0; i < calls; i++) await rawCall(bench)(i)
    await sleep(100)
    counted.raw = current
    current = undefined
  } finally {
    subscription.unsubscribe()
    await session.close()
  }
  return Object.fromEntries(Object.entries(counted).map(([key, counts]) => [
    key,
    Object.fromEntries(Object.entries(counts).sort().map(([kind, n]) => [kind, round(n / calls, 2)]))
  ]))
}

interface ScaleCollected {
  one: Array<Saturated>
  two: Array<Saturated>
  /** The machine's own scale-out: the same burn loop in one and in two threads of this process, no jitbox, no NATS. */
  threadsOne: Array<Saturated>
  threadsTwo: Array<Saturated>
}

const burnThread = `const { workerData } = require("node:worker_threads")
const counts = new Int32Array(workerData.counts)
const burn = (n) => {
  let x = 1
  for (let i = 0; i < n; i++) x = (Math.imul(x, 1103515245) + 12345) | 0
  return x
}
while (Atomics.load(counts, 0) === 0) {
  burn(workerData.n)
  Atomics.add(counts, 1 + workerData.index, 1)
}
`

/** Burns of `n` iterations completed in `ms` by `threads` threads looping on them (after `warmMs`). */
const burnThreads = async (threads: number, n: number, options: { ms: number; warmMs: number }): Promise<Saturated> => {
  const counts = new Int32Array(new SharedArrayBuffer(4 * (1 + threads)))
  const total = () => sum([...counts.subarray(1)])
  const workers = Array.from({ length: threads }, (_, index) => new Thread(burnThread, { eval: true, workerData: { counts: counts.buffer, index, n } }))
  try {
    await sleep(options.warmMs)
    const before = total()
    const start = now()
    const usage = usageSince()
    const tree = ProcessCpu.since([process.pid])
    await sleep(options.ms)
    return { calls: total() - before, seconds: (now() - start) / 1000, errors: 0, firstError: undefined, treeCpuMs: tree(), usage: usage() }
  } finally {
    Atomics.store(counts, 0, 1)
    await Promise.all(workers.map((worker) => worker.terminate()))
  }
}

const scaleRound = async (bench: Bench, r: number, burnN: number, into: ScaleCollected) => {
  const sides = [
    async () => {
      const session = await openSession(bench, "solo", ["burn"])
      try {
        into.one.push(await saturate(() => session.call("burn", { n: burnN }), { inFlight: scaleInFlight, ms: scaleMs, warmMs: 500 }))
      } finally {
        await session.close()
      }
    },
    async () => {
      const session = await openSession(bench, "pair", ["burn"])
      try {
        into.two.push(await saturate(() => session.call("burn", { n: burnN }), { inFlight: scaleInFlight, ms: scaleMs, warmMs: 500 }))
      } finally {
        await session.close()
      }
    }
    ,
    async () => {
      into.threadsOne.push(await burnThreads(1, burnN, { ms: scaleMs, warmMs: 300 }))
    },
    async () => {
      into.threadsTwo.push(await burnThreads(2, burnN, { ms: scaleMs, warmMs: 300 }))
    }
  ]
  for (const side of r % 2 === 0 ? sides : [...sides].reverse()) await side()
}

/** Iterations of the burn loop that take about `burnTargetMs` here (the fastest of several tries). */
const calibrateBurn = (): number => {
  const burn = (n: number) => {
    let x = 1
    for (let i = 0; i < n; i++) x = (Math.imul(x, 1103515245) + 12345) | 0
    return x
  }
  const n = 1_000_000
  let best = Infinity
  for (let k = 0; k < 15; k++) {
    const start = now()
    burn(n)
    best = Math.min(best, now() - start)
  }
  return Math.round(n * burnTargetMs / best)
}

// ---------------------------------------------------------------------------------------------
// report

const targets = {
  latency_ratio: 1.3,
  throughput_ratio_64: 0.5,
  throughput_ratio_64_isolated: 0.8,
  cpu_per_call_ratio: 1.5,
  /** scale_out_ratio over the machine's own two-threads-over-one, measured beside it. */
  scale_out_vs_machine: 0.9,
  cli_depth2_over_depth0: 3,
  cli_spawns_per_call_warm: 0
} as const

/** Whole-system CPU per call (every process of the benchmark, reaped children included), µs. */
const cpuPerCallUs = (windows: ReadonlyArray<Saturated>): number | null =>
  windows.length === 0 ? null : round(sum(windows.map((w) => w.treeCpuMs)) * 1000 / sum(windows.map((w) => w.calls)))

const ratioOf = (a: number | null | undefined, b: number | null | undefined): number | null =>
  a === null || a === undefined || b === null || b === undefined ? null : round(a / b, 3)

const commit = (): string => {
  if (process.env.BENCH_CODE !== undefined) return process.env.BENCH_CODE
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim()
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no", "--", "packages", "benchmarks/remote.ts"], { encoding: "utf8" })
      .trim()
    return dirty.length > 0 ? `${head}+` : head
  } catch {
    return "unknown"
  }
}

const throughputOf = (rounds: ReadonlyArray<Saturated>) => ({
  calls_per_s: round(sum(rounds.map((r) => r.calls)) / sum(rounds.map((r) => r.seconds)), 0),
  calls: sum(rounds.map((r) => r.calls)),
  seconds: round(sum(rounds.map((r) => r.seconds)), 2),
  errors: sum(rounds.map((r) => r.errors)),
  ...(rounds.some((r) => r.firstError !== undefined) ? { first_error: rounds.find((r) => r.firstError !== undefined)!.firstError } : {}),
  round_calls_per_s: rounds.map((r) => round(r.calls / r.seconds, 0))
})

const roundRatios = (a: ReadonlyArray<Saturated>, b: ReadonlyArray<Saturated>) =>
  a.map((x, i) => round((x.calls / x.seconds) / (b[i]!.calls / b[i]!.seconds), 3))

const NotesMarker = "<!-- Notes below this line are kept when the benchmark rewrites this file. -->"

interface RunLine {
  readonly date: string
  readonly commit: string
  readonly label: string
  readonly loadavg: ReadonlyArray<number>
  readonly latency_ratio: number | null
  readonly latency_paired: ReadonlyArray<number> | null
  readonly raw_p50_us: number | null
  readonly jitbox_p50_us: number | null
  readonly throughput_ratio_64: number | null
  readonly raw_calls_per_s: number | null
  readonly jitbox_calls_per_s: number | null
  readonly scale_out_ratio: number | null
  readonly throughput_ratio_64_isolated?: number | null
  readonly cpu_per_call_ratio?: number | null
  readonly scale_out_machine_ratio?: number | null
  readonly cli_depth2_over_depth0?: number | null
  readonly cli_spawns_per_call_warm?: number | null
}

const check = (value: number | null, target: number, atMost: boolean) =>
  value === null ? "–" : `${value.toFixed(2)} ${(atMost ? value <= target : value >= target) ? "✓" : "✗"}`

const main = async () => {
  const loadBefore = os.loadavg()
  const date = new Date().toISOString()
  const server = await NatsServer.start()
  const processes: Array<ChildProcess> = []
  const root = await Effect.runPromise(Scope.make())
  try {
    const workerEnv = (specs: ReadonlyArray<PoolSpec>) => ({
      BENCH_SERVER: server.url,
      BENCH_NAMESPACE: namespace,
      BENCH_POOLS: JSON.stringify(specs)
    })
    // process A: the echo pool, the single worker of scale-out and one of the pair; process B: the other of the pair
    const starting = [
      startProcess("remoteWorker.ts", workerEnv([pools.default, pools.compose, pools.solo, pools.pair, pools.open]), workerNodeFlags),
      startProcess("remoteWorker.ts", workerEnv([pools.pair]), workerNodeFlags),
      startProcess("remoteRawResponder.ts", {
        BENCH_SERVER: server.url,
        BENCH_RAW_SUBJECT: rawSubject,
        BENCH_EXCLUSIVE_SUBJECT: exclusiveSubject,
        BENCH_EXCLUSIVE_CHILDREN: String(pools.default.maximumRuntimeEnvironments)
      })
    ]
    const settled = await Promise.allSettled(starting)
    for (const s of settled) if (s.status === "fulfilled") processes.push(s.value)
    for (const s of settled) if (s.status === "rejected") throw s.reason
    const [workerA, workerB, responder] = processes as [ChildProcess, ChildProcess, ChildProcess]
    const natsPid = descendants(process.pid).find((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "nats-server"
      } catch {
        return false
      }
    })
    roles = () => ({
      bench: [process.pid],
      "nats-server": natsPid === undefined ? [] : [natsPid],
      "worker A": [workerA.pid!],
      "worker A sandbox": descendants(workerA.pid!),
      "worker B": [workerB.pid!],
      "worker B sandbox": descendants(workerB.pid!),
      "raw responder": [responder.pid!],
      "raw child": descendants(responder.pid!)
    })

    const connect = (name: string) => Effect.runPromise(NatsConnection.make({ servers: server.url, name }).pipe(Effect.map(({ nc }) => nc), Scope.extend(root)))
    const jitboxSide = await Effect.runPromise(
      Layer.buildWithScope(
        Layer.merge(NatsTransport.layer, KvLedger.layer({ bucket: KvLedger.bucketOf(namespace) })).pipe(
          Layer.provide(NatsConnection.layer({ servers: server.url, name: "bench-sessions" }))
        ),
        root
      )
    )
    const transport = Context.pick(Transport.Transport)(jitboxSide)
    await Effect.runPromise(Coordinator.make({ namespace, profiles, ...(invocationsPerGrant === undefined ? {} : { invocationsPerGrant }) }).pipe(Effect.provide(jitboxSide), Scope.extend(root)))
    const runners: Record<string, Context.Context<never>> = {}
    for (const pool of Object.keys(pools)) {
      runners[pool] = await Effect.runPromise(
        Layer.buildWithScope(RemoteCodeRunner.layer({ prefix, pool, languages: ["javascript", "typescript"] }), root).pipe(Effect.provide(transport))
      ) as Context.Context<never>
    }
    const bench: Bench = { root, transport, rawConnection: await connect("bench-raw-requester"), observer: await connect("bench-observer"), runners }

    const lat: LatencyCollected = { raw: [], jitbox: [], usage: [] }
    const thr: ThroughputCollected = { raw: [], exclusive: [], jitbox: [] }
    const comp: CompositionCollected = { samples: [] }
    const scale: ScaleCollected = { one: [], two: [], threadsOne: [], threadsTwo: [] }
    let messages: Record<string, Record<string, number>> | undefined
    const burnN = calibrateBurn()

    for (let r = 0; r < rounds; r++) {
      if (phases.includes("latency")) {
        await latencyRound(bench, lat)
        const p = paired(lat.jitbox.slice(-1), lat.raw.slice(-1)).median
        debug(`  per pair: ${showPerCall(lat.usage.at(-1)!, latencyPairs)}`)
        console.log(`round ${r + 1}/${rounds} latency: raw p50 ${latency(lat.raw.at(-1)!).p50_us} µs, jitbox p50 ${latency(lat.jitbox.at(-1)!).p50_us} µs, paired ${p}`)
      }
      if (phases.includes("throughput")) {
        await throughputRound(bench, r, thr)
        const [a, b] = [thr.raw.at(-1)!, thr.jitbox.at(-1)!]
        debug(`  per call: raw: ${showPerCall(a.usage, a.calls)}\n  jitbox: ${showPerCall(b.usage, b.calls)}`)
        console.log(`round ${r + 1}/${rounds} throughput (${inFlight} in flight): raw ${round(a.calls / a.seconds, 0)}/s, jitbox ${round(b.calls / b.seconds, 0)}/s (${b.errors} errors${b.firstError === undefined ? "" : `: ${b.firstError}`})`)
      }
      if (phases.includes("composition")) {
        await compositionRound(bench, comp)
        const last = comp.samples.at(-1)!.map((s) => round(median(s) * 1000))
        console.log(`round ${r + 1}/${rounds} composition: depth 0/1/2 p50 ${last.join(" / ")} µs`)
      }
      if (phases.includes("scale")) {
        await scaleRound(bench, r, burnN, scale)
        const rate = (x: Saturated) => round(x.calls / x.seconds, 1)
        const [a, b, c, d] = [scale.one.at(-1)!, scale.two.at(-1)!, scale.threadsOne.at(-1)!, scale.threadsTwo.at(-1)!]
        debug(`  per call, one worker: ${showPerCall(a.usage, a.calls)}\n  two workers: ${showPerCall(b.usage, b.calls)}`)
        console.log(`round ${r + 1}/${rounds} scale-out: one worker ${rate(a)}/s, two ${rate(b)}/s; the machine: one thread ${rate(c)}/s, two ${rate(d)}/s`)
      }
    }
    if (phases.includes("composition")) messages = await countMessages(bench, quick ? 10 : 50)
    let cli: CliResult | undefined
    if (phases.includes("cli")) {
      cli = await runCli({ server: server.url, samples: cliSamples, warmup: Math.max(10, Math.ceil(cliSamples / 5)) })
      console.log(`cli: depth 0/1/2 p50 ${Object.values(cli.depths).map((d) => d.p50_us).join(" / ")} µs; children started per warm call ${cli.cli_spawns_per_call_warm} (${JSON.stringify(cli.children_started)}); sandbox user ${JSON.stringify(cli.sandbox_tasks)}`)
    }
    if (phases.includes("profile")) {
      // for --cpu-prof: only jitbox calls, BENCH_PROFILE_IN_FLIGHT in flight, for BENCH_THROUGHPUT_MS
      const session = await openSession(bench, "default", ["echo"])
      const n = env("BENCH_PROFILE_IN_FLIGHT", inFlight, inFlight)
      const x = await saturate(() => session.call("echo", {}), { inFlight: n, ms: throughputMs, warmMs: 500, budget: policy.maximumInvocations })
      await session.close()
      console.log(`profile: ${n} in flight, ${round(x.calls / x.seconds, 0)} calls/s, ${x.errors} errors; per call: ${showPerCall(x.usage, x.calls)}`)
    }
    if (phases.includes("parts")) {
      // what the lease and the stream publisher cost: the same calls without them, variants interleaved in rounds
      const n = env("BENCH_PROFILE_IN_FLIGHT", 1, 1)
      const variants = [
        { name: "raw", lease: false, streams: false },
        { name: "full", lease: true, streams: true },
        { name: "no streams", lease: true, streams: false },
        { name: "no lease", lease: false, streams: true },
        { name: "neither", lease: false, streams: false }
      ]
      const results = new Map<string, Array<Saturated>>(variants.map((v) => [v.name, []]))
      for (let r = 0; r < Math.max(rounds, 1); r++) {
        for (const variant of r % 2 === 0 ? variants : [...variants].reverse()) {
          if (variant.name === "raw") {
            const raw = rawCall(bench)
            results.get(variant.name)!.push(await saturate(() => raw(0), { inFlight: n, ms: throughputMs, warmMs: 300 }))
            continue
          }
          const session = await openSession(bench, "default", ["echo"], variant)
          try {
            results.get(variant.name)!.push(await saturate(() => session.call("echo", {}), { inFlight: n, ms: throughputMs, warmMs: 300 }))
          } finally {
            await session.close()
          }
        }
      }
      for (const [name, xs] of results) {
        const calls = sum(xs.map((x) => x.calls))
        const usage = usageTotal(xs.map((x) => x.usage))
        console.log(`${name.padEnd(10)} ${n} in flight: ${round(calls / sum(xs.map((x) => x.seconds)), 0)} calls/s (rounds ${xs.map((x) => round(x.calls / x.seconds, 0)).join(", ")}); per call: ${showPerCall(usage, calls)}`)
      }
    }

    // ---- summary
    const rawLatency = lat.raw.length > 0 ? latency(lat.raw.flat()) : undefined
    const jitboxLatency = lat.jitbox.length > 0 ? latency(lat.jitbox.flat()) : undefined
    const latencyRatio = rawLatency !== undefined && jitboxLatency !== undefined ? round(jitboxLatency.p50_us / rawLatency.p50_us, 3) : null
    const rawThroughput = thr.raw.length > 0 ? throughputOf(thr.raw) : undefined
    const jitboxThroughput = thr.jitbox.length > 0 ? throughputOf(thr.jitbox) : undefined
    const throughputRatio = rawThroughput !== undefined && jitboxThroughput !== undefined
      ? round(jitboxThroughput.calls_per_s / rawThroughput.calls_per_s, 3)
      : null
    const one = scale.one.length > 0 ? throughputOf(scale.one) : undefined
    const two = scale.two.length > 0 ? throughputOf(scale.two) : undefined
    const scaleRatio = one !== undefined && two !== undefined ? round(two.calls_per_s / one.calls_per_s, 3) : null
    const threadsOne = scale.threadsOne.length > 0 ? throughputOf(scale.threadsOne) : undefined
    const threadsTwo = scale.threadsTwo.length > 0 ? throughputOf(scale.threadsTwo) : undefined
    const machineRatio = threadsOne !== undefined && threadsTwo !== undefined ? round(threadsTwo.calls_per_s / threadsOne.calls_per_s, 3) : null
    const scaleVsMachine = ratioOf(scaleRatio, machineRatio)
    const exclusiveThroughput = thr.exclusive.length > 0 ? throughputOf(thr.exclusive) : undefined
    const isolatedRatio = ratioOf(jitboxThroughput?.calls_per_s, exclusiveThroughput?.calls_per_s)
    const cpuUs = { raw: cpuPerCallUs(thr.raw), exclusive: cpuPerCallUs(thr.exclusive), jitbox: cpuPerCallUs(thr.jitbox) }
    const cpuRatio = ratioOf(cpuUs.jitbox, cpuUs.exclusive)
    const composition = comp.samples.length > 0
      ? (() => {
        const byDepth = depths.map((_, d) => comp.samples.map((round) => round[d]!).flat())
        const p50 = byDepth.map((s) => median(s) * 1000)
        return {
          tools: { 0: "echo (no nested call)", 1: "nest1 → add (base tool)", 2: "nest2 → nest1 (code tool) → add (base tool)" },
          depths: Object.fromEntries(byDepth.map((s, d) => [d, { ...latency(s), ...(messages?.[d] === undefined ? {} : { messages_per_call: messages[d] }) }])),
          raw_messages_per_call: messages?.raw,
          us_per_level: [round(p50[1]! - p50[0]!), round(p50[2]! - p50[1]!)]
        }
      })()
      : undefined
    const loadAfter = os.loadavg()

    const host = {
      node: process.version,
      platform: `${os.type()} ${os.release()} ${os.arch()}`,
      cpus: os.cpus().length,
      loadavg_before: loadBefore.map((l) => round(l, 2)),
      loadavg_after: loadAfter.map((l) => round(l, 2))
    }
    const head = commit()
    const run: RunLine = {
      date,
      commit: head,
      label,
      loadavg: host.loadavg_before,
      latency_ratio: latencyRatio,
      latency_paired: lat.raw.length > 0 ? (({ median, p25, p75 }) => [median, p25, p75])(paired(lat.jitbox, lat.raw)) : null,
      raw_p50_us: rawLatency?.p50_us ?? null,
      jitbox_p50_us: jitboxLatency?.p50_us ?? null,
      throughput_ratio_64: throughputRatio,
      raw_calls_per_s: rawThroughput?.calls_per_s ?? null,
      jitbox_calls_per_s: jitboxThroughput?.calls_per_s ?? null,
      scale_out_ratio: scaleRatio,
      throughput_ratio_64_isolated: isolatedRatio,
      cpu_per_call_ratio: cpuRatio,
      scale_out_machine_ratio: machineRatio,
      cli_depth2_over_depth0: cli?.cli_depth2_over_depth0 ?? null,
      cli_spawns_per_call_warm: cli?.cli_spawns_per_call_warm ?? null
    }
    const report = {
      benchmark: "remote",
      date,
      commit: head,
      label,
      host,
      targets,
      latency_ratio: latencyRatio,
      throughput_ratio_64: throughputRatio,
      throughput_ratio_64_isolated: isolatedRatio,
      cpu_per_call_ratio: cpuRatio,
      scale_out_ratio: scaleRatio,
      scale_out_machine_ratio: machineRatio,
      scale_out_vs_machine: scaleVsMachine,
      cli_depth2_over_depth0: cli?.cli_depth2_over_depth0 ?? null,
      cli_spawns_per_call_warm: cli?.cli_spawns_per_call_warm ?? null,
      latency: lat.raw.length > 0
        ? {
          raw: rawLatency,
          jitbox: jitboxLatency,
          paired_ratio: paired(lat.jitbox, lat.raw),
          per_pair: perCall(usageTotal(lat.usage), lat.raw.length * latencyPairs)
        }
        : undefined,
      throughput_64: thr.raw.length > 0
        ? {
          in_flight: inFlight,
          raw: rawThroughput,
          exclusive: exclusiveThroughput,
          jitbox: jitboxThroughput,
          round_ratios: roundRatios(thr.jitbox, thr.raw),
          round_ratios_isolated: roundRatios(thr.jitbox, thr.exclusive),
          exclusive_children: pools.default.maximumRuntimeEnvironments,
          whole_system_cpu_per_call_us: cpuUs,
          raw_per_call: perCall(usageTotal(thr.raw.map((x) => x.usage)), sum(thr.raw.map((x) => x.calls))),
          exclusive_per_call: perCall(usageTotal(thr.exclusive.map((x) => x.usage)), sum(thr.exclusive.map((x) => x.calls))),
          jitbox_per_call: perCall(usageTotal(thr.jitbox.map((x) => x.usage)), sum(thr.jitbox.map((x) => x.calls)))
        }
        : undefined,
      composition,
      scale_out: scale.one.length > 0
        ? {
          in_flight: scaleInFlight,
          burn_iterations: burnN,
          burn_ms_here: burnTargetMs,
          one_worker: one,
          two_workers: two,
          round_ratios: roundRatios(scale.two, scale.one),
          one_worker_per_call: perCall(usageTotal(scale.one.map((x) => x.usage)), sum(scale.one.map((x) => x.calls))),
          two_workers_per_call: perCall(usageTotal(scale.two.map((x) => x.usage)), sum(scale.two.map((x) => x.calls))),
          machine: { one_thread: threadsOne, two_threads: threadsTwo, scale_out_ratio: machineRatio, round_ratios: roundRatios(scale.threadsTwo, scale.threadsOne) }
        }
        : undefined,
      cli,
      method: {
        rounds,
        latency_pairs_per_round: latencyPairs,
        throughput_ms_per_round: throughputMs,
        composition_samples_per_round: compositionSamples,
        scale_ms_per_round: scaleMs,
        interleaving:
          "latency: raw and jitbox samples alternate one by one, the order alternating; throughput and scale-out: the two sides alternate in timed rounds, the order alternating; composition: depths 0, 1, 2 rotate sample by sample",
        sessions: "each round opens a new session with its own lease (profile 'bench': JavaScript, 6,400 invocations, 8 concurrent), warmed up before it is timed",
        invocations_per_grant: invocationsPerGrant ?? "the coordinator's default",
        pools,
        processes:
          "this process: raw requester, sessions, coordinator (KV ledger); worker A: pools default, compose, solo, pair; worker B: pool pair; raw responder: one pipelining raw child and the exclusive floor's children (one call per child at a time, as many as pool default keeps); cli: the jitbox command's coordinator, two workers with default flags and a session host",
        whole_system_cpu:
          "utime + stime + cutime + cstime of this process and every process below it (reaped children included, /proc/<pid>/stat), over each timed window, per call: both sides' processes are below this one, other work on the machine is not",
        usage: "CPU (user + system) and read/write system calls (/proc/<pid>/stat, /proc/<pid>/io) of each process over the timed part, per call",
        not_pinned: "no taskset: the processes share the machine's CPUs with each other and with whatever else runs"
      },
      runs: [] as Array<RunLine>
    }

    console.log(`\nlatency_ratio ${check(latencyRatio, targets.latency_ratio, true)} (raw p50 ${rawLatency?.p50_us} µs, jitbox p50 ${jitboxLatency?.p50_us} µs)`)
    console.log(`throughput_ratio_64 ${check(throughputRatio, targets.throughput_ratio_64, false)} (raw ${rawThroughput?.calls_per_s}/s, jitbox ${jitboxThroughput?.calls_per_s}/s)`)
    console.log(`throughput_ratio_64_isolated ${check(isolatedRatio, targets.throughput_ratio_64_isolated, false)} (exclusive floor ${exclusiveThroughput?.calls_per_s}/s)`)
    console.log(`cpu_per_call_ratio ${check(cpuRatio, targets.cpu_per_call_ratio, true)} (whole-system CPU per call: raw ${cpuUs.raw} µs, exclusive ${cpuUs.exclusive} µs, jitbox ${cpuUs.jitbox} µs)`)
    console.log(`scale_out_ratio ${scaleRatio?.toFixed(2) ?? "–"}, the machine's ${machineRatio}: ${check(scaleVsMachine, targets.scale_out_vs_machine, false)} of it (one ${one?.calls_per_s}/s, two ${two?.calls_per_s}/s)`)
    console.log(`cli_depth2_over_depth0 ${check(cli?.cli_depth2_over_depth0 ?? null, targets.cli_depth2_over_depth0, true)}, cli_spawns_per_call_warm ${check(cli?.cli_spawns_per_call_warm ?? null, targets.cli_spawns_per_call_warm, true)}`)
    if (composition !== undefined) console.log(`composition: µs per level ${composition.us_per_level.join(", ")}; messages ${JSON.stringify(messages)}`)
    console.log(`cpus ${host.cpus}, load ${host.loadavg_before.join(" ")} → ${host.loadavg_after.join(" ")}`)

    if (quick || !allPhases.every((phase) => phases.includes(phase))) {
      console.log("(a quick or partial run: results not written)")
      return
    }
    const dir = resultsDir()
    const jsonFile = path.join(dir, "remote.json")
    const mdFile = path.join(dir, "remote.md")
    try {
      report.runs = (JSON.parse(previous("remote.json") ?? "{}") as { runs?: Array<RunLine> }).runs ?? []
    } catch {
      // first run
    }
    report.runs = [...report.runs, run].slice(-24)
    let notes = ""
    try {
      const md = previous("remote.md") ?? ""
      const at = md.indexOf(NotesMarker)
      if (at !== -1) notes = md.slice(at + NotesMarker.length).replace(/^\n/, "")
    } catch {
      // first run
    }
    fs.writeFileSync(jsonFile, JSON.stringify(report, null, 2) + "\n")
    fs.writeFileSync(mdFile, markdown(report, notes))
  } finally {
    debug("closing the sessions' connection, the coordinator and the observers")
    await Effect.runPromise(Scope.close(root, Exit.void)).catch(() => undefined)
    debug("stopping the processes")
    await Promise.all(processes.map(stopProcess))
    killAll()
    debug("stopping nats-server")
    await server.close()
    debug("done")
  }
}

/** Rows: processes; columns: CPU µs, reads, writes of each named reading. */
const usageTable = (readings: Record<string, PerCall>): string => {
  const names = Object.keys(readings)
  const roles = [...new Set(names.flatMap((name) => Object.keys(readings[name]!)))]
  const cell = (u: PerCall[string] | undefined) => u === undefined ? "– | – | –" : `${u.cpu_us} | ${u.reads} | ${u.writes}`
  return [
    `| process | ${names.map((name) => `${name}: CPU µs | reads | writes`).join(" | ")} |`,
    `|---|${names.map(() => "---:|---:|---:").join("|")}|`,
    ...roles.map((role) => `| ${role} | ${names.map((name) => cell(readings[name]![role])).join(" | ")} |`)
  ].join("\n")
}

interface Figures {
  readonly latency_ratio: number | null
  readonly throughput_ratio_64: number | null
  readonly throughput_ratio_64_isolated: number | null
  readonly cpu_per_call_ratio: number | null
  readonly scale_out_ratio: number | null
  readonly scale_out_machine_ratio: number | null
  readonly scale_out_vs_machine: number | null
  readonly cli_depth2_over_depth0: number | null
  readonly cli_spawns_per_call_warm: number | null
}

/** The table of figures: each with its floor and its target. */
const figureRows = (f: Figures): Array<string> => {
  const machine = f.scale_out_machine_ratio
  return [
    "| figure | floor | value | target |",
    "|---|---|---:|---:|",
    `| latency_ratio (p50, 1 in flight) | the pipelining raw floor | ${check(f.latency_ratio, targets.latency_ratio, true)} | ≤ ${targets.latency_ratio} |`,
    `| throughput_ratio_64 (calls/s, 64 in flight) | the pipelining raw floor | ${check(f.throughput_ratio_64, targets.throughput_ratio_64, false)} | ≥ ${targets.throughput_ratio_64} |`,
    `| throughput_ratio_64_isolated (calls/s, 64 in flight) | the raw floor with one call per child | ${
      check(f.throughput_ratio_64_isolated, targets.throughput_ratio_64_isolated, false)
    } | ≥ ${targets.throughput_ratio_64_isolated} |`,
    `| cpu_per_call_ratio (whole-system CPU per call, 64 in flight) | the raw floor with one call per child | ${check(f.cpu_per_call_ratio, targets.cpu_per_call_ratio, true)} | ≤ ${targets.cpu_per_call_ratio} |`,
    `| scale_out_ratio (two workers / one, ~10 ms CPU a call) | the machine's two threads / one: ${machine ?? "–"} | ${f.scale_out_ratio?.toFixed(2) ?? "–"} (${
      check(f.scale_out_vs_machine, targets.scale_out_vs_machine, false)
    } of the machine's) | ≥ ${targets.scale_out_vs_machine} × ${machine ?? "the machine's"}${machine === null ? "" : ` = ${(targets.scale_out_vs_machine * machine).toFixed(2)}`} |`,
    `| cli_depth2_over_depth0 (jitbox command, default flags, p50) | depth 0 of the same | ${check(f.cli_depth2_over_depth0, targets.cli_depth2_over_depth0, true)} | ≤ ${targets.cli_depth2_over_depth0} |`,
    `| cli_spawns_per_call_warm (sandbox children started per warm call) | none | ${check(f.cli_spawns_per_call_warm, targets.cli_spawns_per_call_warm, true)} | ${targets.cli_spawns_per_call_warm} |`
  ]
}

const cliSection = (cli: CliResult | undefined): Array<string> =>
  cli === undefined ? [] : [
    "## The jitbox command, default flags",
    "",
    `Against the same nats-server, in a namespace of its own: ${cli.commands.map((c) => `\`${c}\``).join(", ")}. A RemoteSession here`,
    "creates `cli0` (echo), `cli1` (calls `cli0`) and `cli2` (calls `cli1`), all JavaScript, and calls them one at a time, depths rotating.",
    "",
    "| depth | p50 µs | p90 µs | samples |",
    "|---|---:|---:|---:|",
    ...Object.entries(cli.depths).map(([d, x]) => `| ${d} | ${x.p50_us} | ${x.p90_us} | ${x.samples} |`),
    "",
    `Sandbox children the two workers started (their /readyz \`childrenStarted\`): ${cli.children_started.before_warmup} before the warm-up, ${cli.children_started.before_timed} after it, ${cli.children_started.after_timed} after ${cli.children_started.timed_calls} timed calls.`,
    `The sandbox user (uid ${cli.sandbox_tasks.uid ?? "–"}) then had ${cli.sandbox_tasks.workers_processes} processes and ${cli.sandbox_tasks.workers_tasks} tasks (processes and threads) below the two workers,`,
    `${cli.sandbox_tasks.machine_processes} processes and ${cli.sandbox_tasks.machine_tasks} tasks on the whole machine, against its RLIMIT_NPROC of ${cli.sandbox_tasks.limit ?? "unlimited"}`,
    `(a limit of the uid, shared by every sandbox on the machine). ${cli.sandbox_tasks.tasks_per_child ?? "–"} tasks a warm child: two workers' default warm pools, full, would hold ${cli.sandbox_tasks.two_default_pools_full_tasks ?? "–"}.`,
    ""
  ]

const markdown = (report: {
  date: string
  commit: string
  host: { cpus: number; node: string; loadavg_before: ReadonlyArray<number>; loadavg_after: ReadonlyArray<number> }
  latency_ratio: number | null
  throughput_ratio_64: number | null
  throughput_ratio_64_isolated: number | null
  cpu_per_call_ratio: number | null
  scale_out_ratio: number | null
  scale_out_machine_ratio: number | null
  scale_out_vs_machine: number | null
  cli_depth2_over_depth0: number | null
  cli_spawns_per_call_warm: number | null
  cli?: CliResult | undefined
  latency?: { raw?: Latency | undefined; jitbox?: Latency | undefined; paired_ratio: PairedRatio; per_pair: PerCall } | undefined
  throughput_64?: {
    raw?: ReturnType<typeof throughputOf> | undefined
    exclusive?: ReturnType<typeof throughputOf> | undefined
    jitbox?: ReturnType<typeof throughputOf> | undefined
    round_ratios: ReadonlyArray<number>
    round_ratios_isolated: ReadonlyArray<number>
    exclusive_children: number
    whole_system_cpu_per_call_us: Record<"raw" | "exclusive" | "jitbox", number | null>
    raw_per_call: PerCall
    exclusive_per_call: PerCall
    jitbox_per_call: PerCall
  } | undefined
  composition?: { depths: Record<string, Latency & { messages_per_call?: Record<string, number> }>; raw_messages_per_call?: Record<string, number> | undefined; us_per_level: ReadonlyArray<number> } | undefined
  scale_out?: {
    one_worker?: ReturnType<typeof throughputOf> | undefined
    two_workers?: ReturnType<typeof throughputOf> | undefined
    round_ratios: ReadonlyArray<number>
    burn_iterations: number
    machine: { one_thread?: ReturnType<typeof throughputOf> | undefined; two_threads?: ReturnType<typeof throughputOf> | undefined; scale_out_ratio: number | null; round_ratios: ReadonlyArray<number> }
  } | undefined
  runs: ReadonlyArray<RunLine>
}, notes: string): string => {
  const l = report.latency!
  const t = report.throughput_64!
  const c = report.composition!
  const s = report.scale_out!
  const range = (xs: ReadonlyArray<number>) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`
  const requests = (m: Record<string, number> | undefined) => m?.requests ?? "–"
  return [
    "# Remote benchmark",
    "",
    "Generated by `pnpm bench:remote` (benchmarks/remote.ts) against a nats-server it starts. Raw floor: a nats.js request to a",
    "responder in another process that pipes it to one warm raw Node child (launched like the sandbox's JavaScript children:",
    "prlimit, bubblewrap with seccomp, permission flags, uid) running a JSON-lines echo loop. jitbox: a session hosted in the",
    "benchmark process (Sessions + RemoteCodeRunner over NatsTransport, a LeasedAdmission lease from a Coordinator on a KV",
    "ledger, a StreamPublisher) calling a sandboxed JavaScript echo tool on a warm worker in another process. Samples of the",
    "compared cases are interleaved (latency one by one, throughput and scale-out in alternating timed rounds); every round",
    "opens a new session with its own lease. Not pinned: all processes share the machine's CPUs with everything else on it.",
    "",
    `Latest run: ${report.date} on ${report.commit}, Node ${report.host.node}, ${report.host.cpus} CPUs, load average ${report.host.loadavg_before.join(" ")} before, ${report.host.loadavg_after.join(" ")} after.`,
    "",
    ...figureRows(report),
    "",
    "## Latency, 1 in flight",
    "",
    "| side | p50 µs | p90 µs | p99 µs | samples |",
    "|---|---:|---:|---:|---:|",
    `| raw | ${l.raw!.p50_us} | ${l.raw!.p90_us} | ${l.raw!.p99_us} | ${l.raw!.samples} |`,
    `| jitbox | ${l.jitbox!.p50_us} | ${l.jitbox!.p90_us} | ${l.jitbox!.p99_us} | ${l.jitbox!.samples} |`,
    "",
    `Paired ratio (each jitbox sample over the raw sample next to it): ${l.paired_ratio.median.toFixed(2)} (p25–p75 ${l.paired_ratio.p25.toFixed(2)}–${l.paired_ratio.p75.toFixed(2)}), rounds ${range(l.paired_ratio.round_medians)}.`,
    "",
    "CPU (user + system, from /proc) and read / write system calls per pair of calls (one raw, one jitbox), by process:",
    "",
    usageTable({ "per pair": l.per_pair }),
    "",
    "## Throughput, 64 in flight",
    "",
    "| side | calls/s | calls | seconds | errors | per round |",
    "|---|---:|---:|---:|---:|---|",
    ...[["raw (pipelining)", t.raw!], [`raw, one call per child (${t.exclusive_children} children)`, t.exclusive!], ["jitbox", t.jitbox!]].map(([name, x]) => {
      const v = x as ReturnType<typeof throughputOf>
      return `| ${name as string} | ${v.calls_per_s} | ${v.calls} | ${v.seconds} | ${v.errors} | ${v.round_calls_per_s.join(", ")} |`
    }),
    "",
    `Per-round ratios, jitbox / pipelining floor: ${t.round_ratios.join(", ")}; jitbox / one-call-per-child floor: ${t.round_ratios_isolated.join(", ")}.${
      t.jitbox!.first_error === undefined ? "" : ` First jitbox error: ${t.jitbox!.first_error}`
    }`,
    "",
    `Whole-system CPU per call (every process of the benchmark, reaped children included): pipelining floor ${t.whole_system_cpu_per_call_us.raw} µs, one-call-per-child floor ${t.whole_system_cpu_per_call_us.exclusive} µs, jitbox ${t.whole_system_cpu_per_call_us.jitbox} µs.`,
    "",
    "Per call, by process:",
    "",
    usageTable({ raw: t.raw_per_call, "one call per child": t.exclusive_per_call, jitbox: t.jitbox_per_call }),
    "",
    "## Composition",
    "",
    "Depth 0: `echo`; depth 1: `nest1` calls the base tool `add` (in the session's process); depth 2: `nest2` calls the code tool",
    "`nest1`, which calls `add`. NATS requests per outer call counted on a `>` subscription of a separate connection (raw: 1).",
    "",
    "| depth | p50 µs | p90 µs | p99 µs | samples | NATS requests per call | all messages per call |",
    "|---|---:|---:|---:|---:|---:|---|",
    ...Object.entries(c.depths).map(([d, x]) =>
      `| ${d} | ${x.p50_us} | ${x.p90_us} | ${x.p99_us} | ${x.samples} | ${requests(x.messages_per_call)} | ${
        Object.entries(x.messages_per_call ?? {}).filter(([k]) => k !== "requests").map(([k, n]) => `${k} ${n}`).join(", ")
      } |`
    ),
    "",
    `µs per nesting level (p50 differences): depth 0 → 1 ${c.us_per_level[0]}, depth 1 → 2 ${c.us_per_level[1]}.`,
    "",
    "## Scale-out",
    "",
    `A tool burning ${s.burn_iterations} loop iterations (about ${burnTargetMs} ms of CPU in this process), ${scaleInFlight} calls in flight; each worker`,
    "runs one invocation at a time (one core's worth): pool `solo` has one worker process, pool `pair` two.",
    "",
    "| workers | calls/s | calls | seconds | errors | per round |",
    "|---|---:|---:|---:|---:|---|",
    `| one | ${s.one_worker!.calls_per_s} | ${s.one_worker!.calls} | ${s.one_worker!.seconds} | ${s.one_worker!.errors} | ${s.one_worker!.round_calls_per_s.join(", ")} |`,
    `| two | ${s.two_workers!.calls_per_s} | ${s.two_workers!.calls} | ${s.two_workers!.seconds} | ${s.two_workers!.errors} | ${s.two_workers!.round_calls_per_s.join(", ")} |`,
    "",
    `| one thread, no jitbox | ${s.machine.one_thread!.calls_per_s} | ${s.machine.one_thread!.calls} | ${s.machine.one_thread!.seconds} | – | ${s.machine.one_thread!.round_calls_per_s.join(", ")} |`,
    `| two threads, no jitbox | ${s.machine.two_threads!.calls_per_s} | ${s.machine.two_threads!.calls} | ${s.machine.two_threads!.seconds} | – | ${s.machine.two_threads!.round_calls_per_s.join(", ")} |`,
    "",
    `Per-round ratios, two workers / one: ${s.round_ratios.join(", ")}. The machine's own ratio (the same loop in two threads of one`,
    `process against one, interleaved with the workers' rounds): ${s.machine.scale_out_ratio} (rounds ${s.machine.round_ratios.join(", ")}).`,
    "",
    ...cliSection(report.cli),
    "## Runs",
    "",
    "| date | commit | label | load | latency ratio | paired (p25–p75) | raw p50 µs | jitbox p50 µs | throughput ratio | raw/s | jitbox/s | scale-out | isolated throughput ratio | CPU per call ratio | machine scale-out | cli depth 2 / 0 | cli spawns per call |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...report.runs.map((r) =>
      `| ${r.date.slice(0, 16).replace("T", " ")} | ${r.commit} | ${r.label} | ${r.loadavg[0]} | ${r.latency_ratio ?? "–"} | ${
        r.latency_paired === null ? "–" : `${r.latency_paired[0]} (${r.latency_paired[1]}–${r.latency_paired[2]})`
      } | ${r.raw_p50_us ?? "–"} | ${r.jitbox_p50_us ?? "–"} | ${r.throughput_ratio_64 ?? "–"} | ${r.raw_calls_per_s ?? "–"} | ${r.jitbox_calls_per_s ?? "–"} | ${
        r.scale_out_ratio ?? "–"
      } | ${r.throughput_ratio_64_isolated ?? "–"} | ${r.cpu_per_call_ratio ?? "–"} | ${r.scale_out_machine_ratio ?? "–"} | ${r.cli_depth2_over_depth0 ?? "–"} | ${r.cli_spawns_per_call_warm ?? "–"} |`
    ),
    "",
    NotesMarker,
    notes
  ].join("\n")
}

await main()
