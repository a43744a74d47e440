/**
 * Starts one child with every active layer: prlimit → bwrap → interpreter, a scrubbed environment,
 * its own process group, the configured uid/gid.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import * as fs from "node:fs"
import type * as SandboxConfig from "../SandboxConfig.js"
import * as Isolation from "../Isolation.js"
import { inheritedDescriptors, InheritedDescriptorsVariable } from "./inheritedDescriptors.js"
import * as Seccomp from "./seccomp.js"

const programs = {
  noFork: Seccomp.program({ noFork: true }),
  processes: Seccomp.program({ noFork: false })
}

export type Mount = Isolation.Mount
export type WorkDir = Isolation.WorkDir

export interface Launch {
  /** Absolute interpreter path; bubblewrap binds interpreters at their host paths. */
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  readonly mounts: ReadonlyArray<Mount>
  readonly workDir: WorkDir
  readonly addressSpaceMiB: number
  /** The child may not create processes (seccomp, when bubblewrap can load it), only threads. */
  readonly noFork: boolean
  /** Value of the marker variable, for process accounting. */
  readonly marker: string
  /**
   * How the child closes the host's descriptors it inherits before its tool's code runs: it lists
   * /proc/self/fd itself (`"self"`), or the host names them in `JITBOX_INHERITED_FDS` (`"named"`,
   * for Node, which may not read /proc).
   */
  readonly inheritedDescriptors: "self" | "named"
}

/** The variable every child (and everything it starts) carries, so leftovers can be found in /proc. */
export const MarkerVariable = "JITBOX_SANDBOX_CHILD"

/** Where a host directory appears inside the child. */
export const mountPoint = (iso: Isolation.Isolation, name: string, host: string): string =>
  iso.bwrap !== undefined ? `/mnt/${name}` : host

export const launch = (
  iso: Isolation.Isolation,
  config: SandboxConfig.SandboxConfig,
  spec: Launch
): ChildProcessWithoutNullStreams => {
  const argv: Array<string> = []
  let file = spec.command
  const limits = config.limits
  if (iso.prlimit !== undefined) {
    file = iso.prlimit
    argv.push(
      `--as=${spec.addressSpaceMiB * 1024 * 1024}`,
      `--cpu=${Math.ceil(limits.cpuSeconds)}:${Math.ceil(limits.cpuSeconds) + 1}`,
      `--nofile=${limits.openFiles}`,
      `--nproc=${limits.processes}`,
      `--fsize=${limits.fileSizeMiB * 1024 * 1024}`,
      "--core=0",
      "--"
    )
  }
  const seccomp = iso.seccomp
  if (iso.bwrap !== undefined) {
    if (file === spec.command) file = iso.bwrap
    else argv.push(iso.bwrap)
    argv.push(...Isolation.bwrapArgs(iso.rootEntries, {
      tmpfsMiB: limits.tmpfsMiB,
      workDirMiB: limits.workDirMiB,
      mounts: spec.mounts,
      workDir: spec.workDir,
      seccomp
    }))
  }
  if (file !== spec.command) argv.push(spec.command)
  argv.push(...spec.args)
  const stdio: Array<"pipe"> = seccomp ? ["pipe", "pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe"]
  const env: Record<string, string> = {
    PATH: "/usr/local/bin:/usr/bin:/bin",
    HOME: spec.workDir.inside,
    TMPDIR: iso.bwrap !== undefined ? "/tmp" : spec.workDir.inside,
    LANG: "C.UTF-8",
    LC_ALL: "C.UTF-8",
    ...config.env,
    ...spec.env,
    [MarkerVariable]: spec.marker
  }
  if (spec.inheritedDescriptors === "named") env[InheritedDescriptorsVariable] = inheritedDescriptors(stdio.length).join(",")
  const child = spawn(file, argv, {
    // inside bubblewrap the working directory exists only in the child's mount namespace
    cwd: spec.workDir.host ?? "/",
    env,
    detached: true,
    stdio,
    ...(iso.runAs ?? {})
  }) as ChildProcessWithoutNullStreams
  if (seccomp) {
    // bubblewrap reads the program from fd 3 until end of file
    const programPipe = child.stdio[3] as NodeJS.WritableStream & { on: (event: "error", listener: () => void) => void }
    programPipe.on("error", () => {})
    programPipe.end(spec.noFork ? programs.noFork : programs.processes)
  }
  return child
}

/**
 * SIGKILL the child's whole process group; with bubblewrap its pid namespace goes with it. Without
 * bubblewrap a descendant may have left the group (a Bash job, `setsid`), so every process that
 * still carries the child's marker variable is killed too, now and once more shortly after.
 */
export const killGroup = (pid: number | undefined, marker: string | undefined): void => {
  if (pid !== undefined) {
    try {
      process.kill(-pid, "SIGKILL")
    } catch {
      try {
        process.kill(pid, "SIGKILL")
      } catch {
        // already gone
      }
    }
  }
  if (marker !== undefined) {
    killMarked(`${marker}\0`)
    setTimeout(() => killMarked(`${marker}\0`), 100).unref()
  }
}

/** Pids of live processes whose environment holds `JITBOX_SANDBOX_CHILD=<value starting with prefix>`. */
export const markedProcesses = (prefix: string): Array<number> => {
  const needle = Buffer.from(`\0${MarkerVariable}=${prefix}`)
  const first = Buffer.from(`${MarkerVariable}=${prefix}`)
  const pids: Array<number> = []
  let entries: Array<string>
  try {
    entries = fs.readdirSync("/proc")
  } catch {
    return pids
  }
  for (const entry of entries) {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || pid === process.pid) continue
    let environ: Buffer
    try {
      environ = fs.readFileSync(`/proc/${pid}/environ`)
    } catch {
      continue
    }
    if (environ.includes(needle) || environ.subarray(0, first.length).equals(first)) pids.push(pid)
  }
  return pids
}

/** SIGKILL every process whose marker value starts with `prefix` (`<marker>\0` for an exact match). */
export const killMarked = (prefix: string): void => {
  for (const pid of markedProcesses(prefix)) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // gone meanwhile
    }
  }
}
