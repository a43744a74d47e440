/**
 * The `jitbox` command as a user runs it, measured as part of benchmarks/remote.ts: against the
 * benchmark's nats-server, in a namespace of its own, a `jitbox coordinator` (one profile), two
 * `jitbox worker`s with their default flags (only `--health-port 0` added, to read what they
 * report) and a `jitbox sessions` host, each the built command (packages/cli/bin/jitbox.js) in its
 * own process. A `RemoteSession` of this process creates three JavaScript tools composing at
 * depths 0, 1 and 2 (`cli0` echoes; `cli1` calls `cli0`; `cli2` calls `cli1`) and calls them one at
 * a time, the depths rotating sample by sample, after a warm-up.
 *
 * - p50 per depth, and depth 2 over depth 0;
 * - sandbox children started per warm call: the workers' `childrenStarted` (their /readyz JSON)
 *   before and after the timed calls, over the outer calls made;
 * - the sandbox user's tasks (processes and threads) against its RLIMIT_NPROC, read from /proc:
 *   children of every worker of the machine run as that one uid, so their tasks share one limit.
 */
import { NatsConnection, NatsTransport } from "@jitbox/nats"
import { Ids, RemoteSession, Subject, Worker } from "@jitbox/runtime"
import { Measure, ProcessCpu } from "@jitbox/bench"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type Started, startCommand, stopProcess } from "./processes.js"

const { quantile, round } = Measure
const { descendants } = ProcessCpu

const bin = new URL("../packages/cli/bin/jitbox.js", import.meta.url).pathname

const profile = { name: "bench", policy: { allowedLanguages: ["JavaScript"], maximumInvocations: 6_400 } }

const tools = [
  { name: "cli0", source: `export const cli0 = tool({ description: "Echo the arguments.", guidelines: "Use in benchmarks." }, (args) => args)\n` },
  {
    name: "cli1",
    source: `export const cli1 = tool({ description: "Calls cli0.", guidelines: "Use in benchmarks." }, async (args) => await harness.callTool("cli0", args))\n`
  },
  {
    name: "cli2",
    source: `export const cli2 = tool({ description: "Calls cli1.", guidelines: "Use in benchmarks." }, async (args) => await harness.callTool("cli1", args))\n`
  }
] as const

export interface CliResult {
  readonly cli_depth2_over_depth0: number
  readonly cli_spawns_per_call_warm: number
  readonly depths: Record<string, { readonly p50_us: number; readonly p90_us: number; readonly samples: number }>
  readonly children_started: { readonly before_warmup: number; readonly before_timed: number; readonly after_timed: number; readonly timed_calls: number }
  readonly sandbox_tasks: SandboxTasks
  readonly commands: ReadonlyArray<string>
}

/**
 * The sandbox user's processes and tasks (processes and threads): below the two workers, and on the
 * whole machine (every sandbox of every jitbox there runs as that uid); and its RLIMIT_NPROC.
 */
export interface SandboxTasks {
  readonly uid: number | null
  readonly workers_processes: number
  readonly workers_tasks: number
  readonly machine_processes: number
  readonly machine_tasks: number
  readonly limit: number | null
  /** Tasks per warm child (the workers' tasks over the children they started, none retired while warm). */
  readonly tasks_per_child: number | null
  /** Tasks of two workers with their default warm pools full (`Worker.defaults.concurrency × chainLevels` children each). */
  readonly two_default_pools_full_tasks: number | null
}

const ReadyReport = Schema.Struct({ serves: Schema.Struct({ childrenStarted: Schema.Number }) })

/** A started worker's health address, from the `health http://…` line it writes to stderr. */
const healthUrl = (started: Started): string => {
  const url = /^health (http:\/\/\S+)$/m.exec(started.stderr())?.[1]
  if (url === undefined) throw new Error(`a worker printed no health address; stderr:\n${started.stderr()}`)
  return url
}

const childrenStarted = async (urls: ReadonlyArray<string>): Promise<number> => {
  let total = 0
  for (const url of urls) {
    const response = await fetch(`${url}/readyz`)
    total += Schema.decodeUnknownSync(ReadyReport)(await response.json()).serves.childrenStarted
  }
  return total
}

/** The fields of /proc/<pid>/status as a map (`Uid`, `Threads`, …). */
const status = (pid: number): Map<string, string> => {
  try {
    return new Map(fs.readFileSync(`/proc/${pid}/status`, "utf8").split("\n").map((line) => {
      const at = line.indexOf(":")
      return [line.slice(0, at), line.slice(at + 1).trim()] as const
    }))
  } catch {
    return new Map()
  }
}

const processLimit = (pid: number): number | null => {
  try {
    const line = fs.readFileSync(`/proc/${pid}/limits`, "utf8").split("\n").find((l) => l.startsWith("Max processes"))
    const soft = line?.slice("Max processes".length).trim().split(/\s+/)[0]
    return soft === undefined || soft === "unlimited" ? null : Number(soft)
  } catch {
    return null
  }
}

/** The uid the workers' children run as (the first below them that is not this process's), its tasks on the machine and its limit. */
const sandboxTasks = (workers: ReadonlyArray<number>, children: number): SandboxTasks => {
  const uidOf = (fields: Map<string, string>) => Number(fields.get("Uid")?.split(/\s+/)[0] ?? -1)
  const own = process.getuid?.() ?? 0
  const below = workers.flatMap(descendants)
  const child = below.find((pid) => uidOf(status(pid)) !== own)
  const uid = child === undefined ? null : uidOf(status(child))
  const count = (pids: ReadonlyArray<number>) => {
    const mine = pids.map(status).filter((fields) => uidOf(fields) === uid)
    return { processes: mine.length, tasks: mine.reduce((n, fields) => n + Number(fields.get("Threads") ?? 1), 0) }
  }
  const onWorkers = count(below)
  const onMachine = count(fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).map(Number))
  return {
    uid,
    workers_processes: onWorkers.processes,
    workers_tasks: onWorkers.tasks,
    machine_processes: onMachine.processes,
    machine_tasks: onMachine.tasks,
    limit: child === undefined ? null : processLimit(child),
    tasks_per_child: children === 0 ? null : round(onWorkers.tasks / children, 2),
    two_default_pools_full_tasks: children === 0 ? null : Math.round(onWorkers.tasks / children * 2 * Worker.defaults.concurrency * Worker.defaults.chainLevels)
  }
}

/** Starts the namespace's commands; resolves with them and the workers' health addresses once every one serves. */
const startCommands = async (server: string, namespace: string, directory: string) => {
  const profiles = path.join(directory, "profiles.json")
  fs.writeFileSync(profiles, JSON.stringify({ profiles: [profile] }))
  const env = { JITBOX_SERVER: server, JITBOX_NAMESPACE: namespace }
  const commands = [
    ["coordinator", "--profiles", profiles],
    ["worker", "--health-port", "0"],
    ["worker", "--health-port", "0"],
    ["sessions", "--profile", profile.name, "--deployment-consent"]
  ]
  const start = (args: ReadonlyArray<string>) => startCommand([bin, ...args], env, /^ready /m)
  // the coordinator first: the session host checks its profile with it
  const settled = [await Promise.allSettled([start(commands[0]!)]), await Promise.allSettled(commands.slice(1).map(start))].flat()
  const started = settled.flatMap((s) => s.status === "fulfilled" ? [s.value] : [])
  const failed = settled.find((s) => s.status === "rejected")
  if (failed !== undefined) {
    await Promise.all(started.map(({ child }) => stopProcess(child)))
    throw (failed as PromiseRejectedResult).reason
  }
  const workers = [started[1]!, started[2]!]
  const shown = commands.map((args) => `jitbox ${args.join(" ").replace(profiles, "profiles.json")}`)
  return { started, commands: shown, workers, health: workers.map(healthUrl) }
}

/** Calls `cli0`, `cli1`, `cli2` in turn (the first depth rotating), `warmup + samples` times each; the timed samples by depth, ms. */
const callDepths = async (session: RemoteSession.RemoteSession, samples: number, warmup: number, onTimed: () => Promise<void>) => {
  const byDepth: Array<Array<number>> = tools.map(() => [])
  for (let i = 0; i < warmup + samples; i++) {
    if (i === warmup) await onTimed()
    for (let k = 0; k < tools.length; k++) {
      const d = (k + i) % tools.length
      const start = performance.now()
      await session.callTool(tools[d]!.name, { i })
      if (i >= warmup) byDepth[d]!.push(performance.now() - start)
    }
  }
  return byDepth
}

/** Runs the CLI case against `server`: `samples` timed calls per depth after `warmup` of each. */
export const runCli = async (options: { readonly server: string; readonly samples: number; readonly warmup: number }): Promise<CliResult> => {
  const namespace = `benchcli_${process.pid}`
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-bench-cli-"))
  const scope = Effect.runSync(Scope.make())
  const running = await startCommands(options.server, namespace, directory)
  try {
    const transport = await Effect.runPromise(Effect.map(NatsConnection.make({ servers: options.server, name: "bench-cli-caller" }), NatsTransport.fromConnection).pipe(Scope.extend(scope)))
    const session = new RemoteSession.RemoteSession(transport, "cli1", { prefix: Subject.prefix(Ids.namespace(namespace)), timeoutMs: 60_000 })
    for (const tool of tools) await session.createTool({ entrypoint: tool.name, language: "javascript", source: tool.source })
    const beforeWarmup = await childrenStarted(running.health)
    let beforeTimed = 0
    const byDepth = await callDepths(session, options.samples, options.warmup, async () => {
      beforeTimed = await childrenStarted(running.health)
    })
    const afterTimed = await childrenStarted(running.health)
    const tasks = sandboxTasks(running.workers.map(({ child }) => child.pid!), afterTimed)
    const p50 = byDepth.map((s) => quantile(s, 0.5) * 1000)
    const timedCalls = options.samples * tools.length
    return {
      cli_depth2_over_depth0: round(p50[2]! / p50[0]!, 3),
      cli_spawns_per_call_warm: round((afterTimed - beforeTimed) / timedCalls, 3),
      depths: Object.fromEntries(byDepth.map((s, d) => [d, { p50_us: round(p50[d]!), p90_us: round(quantile(s, 0.9) * 1000), samples: s.length }])),
      children_started: { before_warmup: beforeWarmup, before_timed: beforeTimed, after_timed: afterTimed, timed_calls: timedCalls },
      sandbox_tasks: tasks,
      commands: running.commands
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await Promise.all([...running.started].reverse().map(({ child }) => stopProcess(child)))
    fs.rmSync(directory, { recursive: true, force: true })
  }
}
