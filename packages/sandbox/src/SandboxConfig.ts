/**
 * Options of the sandboxed runners and their defaults. Every child gets exactly the environment
 * built here: nothing of the host's environment leaks unless it is named in `env`. `make` throws
 * core's `ConfigError` for an option out of range (D-16), at construction.
 *
 * @since 0.1.0
 */
import { HarnessError, type JitPolicy } from "@jitbox/core"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/** Resource limits applied to every child with `prlimit` (per process). @since 0.1.0 @category models */
export interface SandboxLimits {
  /** Heap / address-space budget. Node gets `--max-old-space-size=memoryMiB` and RLIMIT_AS of memoryMiB + 1024 (V8 reserves ~768 MiB to start); Python and Bash get RLIMIT_AS of memoryMiB; Mono gets a heap of memoryMiB (`MONO_GC_PARAMS=max-heap-size`) and RLIMIT_AS of memoryMiB + 256. */
  readonly memoryMiB: number
  /** RLIMIT_CPU in seconds (SIGXCPU at the soft limit, SIGKILL one second later). Counts the child's lifetime, so a warm child that used half of it is retired when idle. */
  readonly cpuSeconds: number
  /** RLIMIT_NOFILE. */
  readonly openFiles: number
  /** RLIMIT_NPROC: processes and threads of the child's uid. Only enforced when the child does not run as root (see `runAs`). */
  readonly processes: number
  /** RLIMIT_FSIZE in MiB: the largest file a child may write. */
  readonly fileSizeMiB: number
  /** Size of the private `/tmp` tmpfs inside bubblewrap; `/dev/shm` (POSIX shared memory) is a link into it. */
  readonly tmpfsMiB: number
  /**
   * Size of each child's working directory (its HOME), a tmpfs inside bubblewrap. Without
   * bubblewrap the working directory is a host directory, bounded only per file by `fileSizeMiB`.
   */
  readonly workDirMiB: number
}

/** @since 0.1.0 @category models */
export interface SandboxOptions {
  /**
   * Wall-clock limit of one invocation (D-22), waiting for a child included. Default 1,800 s: 003's
   * invocationTimeoutSeconds, the only bound on a sandboxed call without a policy (D-21). A call's
   * own `deadline` (its `CallContext`, set by a harness policy) bounds it too: whichever comes first.
   */
  readonly shortTimeoutSeconds?: number | undefined
  /** Wall-clock limit of activation (spawn + import + metadata). Default: `shortTimeoutSeconds`. */
  readonly activationTimeoutSeconds?: number | undefined
  /**
   * 003 `maximumRuntimeEnvironments` (1–16, default 2): the default of `warmChildren` (children kept
   * across every activation) and of `childrenPerActivation` (children running one activation's
   * top-level invocations at once; a nested invocation may start one more; see `WarmPool`).
   */
  readonly maximumRuntimeEnvironments?: number | undefined
  /**
   * Children the runner keeps alive across every activation and language (default:
   * `maximumRuntimeEnvironments`). Starting a child when it has this many first evicts the least
   * recently used idle one; a busy child is never killed, so a burst may run more, and the surplus
   * is retired as they become idle.
   */
  readonly warmChildren?: number | undefined
  /** The same bound for the children of one language (default: `warmChildren`, no bound of its own). */
  readonly warmChildrenPerLanguage?: number | undefined
  /**
   * Children running one activation's top-level invocations at once (default:
   * `maximumRuntimeEnvironments`); one more waits for one of them. Nested invocations never wait.
   */
  readonly childrenPerActivation?: number | undefined
  /** Idle children one activation keeps; one more becoming idle retires its least recently used (default: `childrenPerActivation`). */
  readonly idleChildrenPerActivation?: number | undefined
  readonly limits?: Partial<SandboxLimits> | undefined
  /** Extra environment variables for every child, passed explicitly. Nothing else is inherited. */
  readonly env?: Readonly<Record<string, string>> | undefined
  /** Use bubblewrap when it is usable (default true). */
  readonly bubblewrap?: boolean | undefined
  /** The uid/gid children run as. Default: 65534 (nobody) when the host runs as root, else the host's own. */
  readonly runAs?: { readonly uid: number; readonly gid: number } | "host" | undefined
  /** Absolute interpreter paths. Defaults: `process.execPath`, `/usr/bin/python3` (checked to be ≥ 3.10), `/bin/bash`, `/usr/bin/mono`. */
  readonly nodePath?: string | undefined
  readonly pythonPath?: string | undefined
  readonly bashPath?: string | undefined
  readonly monoPath?: string | undefined
  /** The Mono C# compiler assembly that compiles C# tools (default `/usr/lib/mono/4.5/mcs.exe`, Debian's mono-mcs). */
  readonly mcsPath?: string | undefined
  /** Let Python import site-packages (drops `-S`). Default false. */
  readonly pythonSite?: boolean | undefined
  /**
   * Where per-version and per-child directories are created. Default `os.tmpdir()`, unless
   * children run as another uid (`runAs`) and that directory (or one above it) is closed to other
   * users, as a private `TMPDIR` made by `mkdtemp` is: then `/tmp`.
   */
  readonly tmpDir?: string | undefined
  /** Receives what tools print (stdout/stderr are redirected into the protocol). Default: dropped. */
  readonly onLog?: ((entry: LogEntry) => void) | undefined
  /**
   * Printed bytes one child may emit during one invocation, or while it is idle between two, before
   * it is killed with `OutputTooLarge`. Default 1 MiB.
   */
  readonly maxLogBytes?: number | undefined
  /** Nested calls (`harness.callTool`) one invocation may make in all; past it the child is killed (`LimitExceeded`). Default 10,000. */
  readonly maxNestedCalls?: number | undefined
  /** Nested calls one invocation may have unanswered at once; one more is refused to the tool (`SandboxError`, `LimitExceeded`). Default 64. */
  readonly maxNestedCallsInFlight?: number | undefined
  /**
   * The clock a call's `deadline` (epoch milliseconds by the harness's clock) is read against.
   * Default: the wall clock. Give the harness's clock (core's `HarnessClock`) when it is not the
   * wall clock, e.g. Effect's `TestClock`, so a deadline means the same here as there.
   */
  readonly clock?: { readonly now: () => number } | undefined
}

/** @since 0.1.0 @category models */
export interface LogEntry {
  readonly toolName: string
  readonly versionId: string
  readonly line: string
}

/** @since 0.1.0 @category models */
export interface SandboxConfig {
  readonly shortTimeoutMs: number
  readonly activationTimeoutMs: number
  readonly maximumRuntimeEnvironments: number
  readonly warmChildren: number
  readonly warmChildrenPerLanguage: number
  readonly childrenPerActivation: number
  readonly idleChildrenPerActivation: number
  readonly limits: SandboxLimits
  readonly env: Readonly<Record<string, string>>
  readonly bubblewrap: boolean
  readonly runAs: { readonly uid: number; readonly gid: number } | undefined
  readonly nodePath: string
  readonly pythonPath: string
  readonly bashPath: string
  readonly monoPath: string
  readonly mcsPath: string
  readonly pythonSite: boolean
  readonly tmpDir: string
  readonly onLog: ((entry: LogEntry) => void) | undefined
  readonly maxLogBytes: number
  readonly maxNestedCalls: number
  readonly maxNestedCallsInFlight: number
  readonly clock: { readonly now: () => number }
}

/** @since 0.1.0 @category constants */
export const defaultLimits: SandboxLimits = {
  memoryMiB: 512,
  cpuSeconds: 300,
  openFiles: 64,
  processes: 256,
  fileSizeMiB: 16,
  tmpfsMiB: 64,
  workDirMiB: 64
}

/** @since 0.1.0 @category constants */
export const NobodyId = 65534

/** The most warm children `maximumRuntimeEnvironments` may ask for. @since 0.1.0 @category constants */
export const MaximumRuntimeEnvironments = 16

/** @since 0.1.0 @category constructors */
export const make = (options: SandboxOptions = {}): SandboxConfig => {
  const shortTimeoutSeconds = positive("shortTimeoutSeconds", options.shortTimeoutSeconds ?? 1_800)
  const activationTimeoutSeconds = positive(
    "activationTimeoutSeconds",
    options.activationTimeoutSeconds ?? shortTimeoutSeconds
  )
  const maximumRuntimeEnvironments = options.maximumRuntimeEnvironments ?? 2
  if (
    !Number.isInteger(maximumRuntimeEnvironments) || maximumRuntimeEnvironments < 1 ||
    maximumRuntimeEnvironments > MaximumRuntimeEnvironments
  ) {
    throw new HarnessError.ConfigError({
      option: "maximumRuntimeEnvironments",
      detail: `must be an integer in 1–${MaximumRuntimeEnvironments}, got ${maximumRuntimeEnvironments}`
    })
  }
  const warmChildren = positiveInteger("warmChildren", options.warmChildren ?? maximumRuntimeEnvironments)
  const childrenPerActivation = positiveInteger("childrenPerActivation", options.childrenPerActivation ?? maximumRuntimeEnvironments)
  const limits = { ...defaultLimits, ...options.limits }
  for (const [key, value] of Object.entries(limits)) positive(`limits.${key}`, value)
  for (const key of ["tmpfsMiB", "workDirMiB"] as const) {
    // bubblewrap takes a tmpfs size as a whole number of bytes
    if (!Number.isSafeInteger(Math.ceil(limits[key] * 1024 * 1024))) {
      throw new HarnessError.ConfigError({ option: `limits.${key}`, detail: `is too large, got ${limits[key]}` })
    }
  }
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0
  const runAs = options.runAs === "host"
    ? undefined
    : options.runAs ?? (isRoot ? { uid: NobodyId, gid: NobodyId } : undefined)
  return {
    shortTimeoutMs: shortTimeoutSeconds * 1000,
    activationTimeoutMs: activationTimeoutSeconds * 1000,
    maximumRuntimeEnvironments,
    warmChildren,
    warmChildrenPerLanguage: positiveInteger("warmChildrenPerLanguage", options.warmChildrenPerLanguage ?? warmChildren),
    childrenPerActivation,
    idleChildrenPerActivation: positiveInteger("idleChildrenPerActivation", options.idleChildrenPerActivation ?? childrenPerActivation),
    limits,
    env: { ...options.env },
    bubblewrap: options.bubblewrap ?? true,
    runAs,
    nodePath: options.nodePath ?? process.execPath,
    pythonPath: options.pythonPath ?? "/usr/bin/python3",
    bashPath: options.bashPath ?? "/bin/bash",
    monoPath: options.monoPath ?? "/usr/bin/mono",
    mcsPath: options.mcsPath ?? "/usr/lib/mono/4.5/mcs.exe",
    pythonSite: options.pythonSite ?? false,
    tmpDir: options.tmpDir ?? defaultTmpDir(runAs),
    onLog: options.onLog,
    maxLogBytes: positive("maxLogBytes", options.maxLogBytes ?? 1024 * 1024),
    maxNestedCalls: positiveInteger("maxNestedCalls", options.maxNestedCalls ?? 10_000),
    maxNestedCallsInFlight: positiveInteger("maxNestedCallsInFlight", options.maxNestedCallsInFlight ?? 64),
    clock: options.clock ?? wallClock
  }
}

const wallClock = { now: Date.now }

const positive = (name: string, value: number): number => {
  if (!(typeof value === "number" && Number.isFinite(value) && value > 0)) {
    throw new HarnessError.ConfigError({ option: name, detail: `must be a positive number, got ${value}` })
  }
  return value
}

const positiveInteger = (name: string, value: number): number => {
  if (!(Number.isInteger(value) && value > 0)) {
    throw new HarnessError.ConfigError({ option: name, detail: `must be a positive integer, got ${value}` })
  }
  return value
}

/**
 * The runner options a harness policy implies: its environment bound, and its long timeout as the
 * runner's outer per-call bound (the harness applies the short one itself).
 *
 * @since 0.1.0
 * @category constructors
 */
export const optionsFromPolicy = (policy: JitPolicy.JitPolicy): SandboxOptions => ({
  maximumRuntimeEnvironments: policy.maximumRuntimeEnvironments,
  shortTimeoutSeconds: policy.invocationTimeoutSeconds
})

/** Whether every directory from `dir` up to `/` lets other users through (the `x` bit for others). */
const traversableByOthers = (dir: string): boolean => {
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    try {
      if ((fs.statSync(current).mode & 0o001) === 0) return false
    } catch {
      return false
    }
    if (path.dirname(current) === current) return true
  }
}

const defaultTmpDir = (runAs: { readonly uid: number } | undefined): string => {
  const tmp = os.tmpdir()
  if (runAs === undefined || traversableByOthers(tmp)) return tmp
  return traversableByOthers("/tmp") ? "/tmp" : tmp
}
