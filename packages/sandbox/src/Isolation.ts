/**
 * The isolation a sandboxed child gets on this host: which layers are active, detected once and
 * reported as data. A limit that is silently absent is a bug: every runner reads the same detected
 * `Isolation`, and `describeIsolation()` tells an application (and the README) exactly what a child
 * gets here. (Named `Isolation`, not `…Layers`, so it is not mistaken for an Effect `Layer`.)
 *
 * Detection runs a few short probes once per configuration (`prlimit … true`, `bwrap … true`,
 * `python3 -c …`) and caches the answer.
 *
 * @since 0.1.0
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Seccomp from "./internal/seccomp.js"
import * as SandboxConfig from "./SandboxConfig.js"

/** @since 0.1.0 @category models */
export interface PythonInfo {
  readonly path: string
  readonly version: string
  /** `sys.implementation.cache_tag`, e.g. `cpython-311`, to ship a precompiled runner. */
  readonly cacheTag: string
}

/** @since 0.1.0 @category models */
export interface MonoInfo {
  readonly path: string
  /** The compiler assembly (`mcs.exe`) the host runs under `path`. */
  readonly mcs: string
  readonly version: string
}

/** One directory of the host root as bubblewrap recreates it. @since 0.1.0 @category models */
export type RootEntry =
  | { readonly _tag: "Bind"; readonly path: string }
  | { readonly _tag: "Symlink"; readonly path: string; readonly target: string }

/** What this host can enforce for a given configuration. @since 0.1.0 @category models */
export interface Isolation {
  /** `--permission` (Node ≥ 22.13) or `--experimental-permission` (Node 20), undefined if the node binary has neither. */
  readonly permissionFlag: "--permission" | "--experimental-permission" | undefined
  readonly nodeFlags: ReadonlyArray<string>
  readonly prlimit: string | undefined
  readonly bwrap: string | undefined
  readonly bwrapDetail: string
  readonly rootEntries: ReadonlyArray<RootEntry>
  /** The seccomp programs load (bubblewrap is usable and the host is x86_64). */
  readonly seccomp: boolean
  readonly python: PythonInfo | undefined
  readonly pythonDetail: string
  readonly bash: string | undefined
  readonly mono: MonoInfo | undefined
  readonly monoDetail: string
  readonly runAs: { readonly uid: number; readonly gid: number } | undefined
}

/** @since 0.1.0 @category models */
export interface LayerReport {
  readonly layer: string
  readonly active: boolean
  readonly detail: string
}

const cache = new Map<string, Isolation>()

/** @since 0.1.0 @category constructors */
export const detect = (config: SandboxConfig.SandboxConfig): Isolation => {
  const key = JSON.stringify([
    config.bubblewrap,
    config.runAs,
    config.nodePath,
    config.pythonPath,
    config.bashPath,
    config.monoPath,
    config.mcsPath,
    config.tmpDir
  ])
  const cached = cache.get(key)
  if (cached !== undefined) return cached
  const isolation = probe(config)
  cache.set(key, isolation)
  return isolation
}

/**
 * Every layer, active or not, with what it does or why it is missing.
 *
 * @since 0.1.0 @category reporting
 */
export const describeIsolation = (options?: SandboxConfig.SandboxOptions): Array<LayerReport> =>
  report(SandboxConfig.make(options), detect(SandboxConfig.make(options)))

/** The layers every child gets, and the Node and rlimit ones where the host has them. */
const processLayers = (config: SandboxConfig.SandboxConfig, iso: Isolation): Array<LayerReport> => {
  const l = config.limits
  const bwrap = iso.bwrap !== undefined
  return [
    {
      layer: "scrubbed-environment",
      active: true,
      detail: "children get only PATH, HOME, TMPDIR, LANG, LC_ALL, a marker variable, the variables named in options.env (and PWD from bubblewrap)"
    },
    {
      layer: "inherited-descriptors",
      active: true,
      detail: "descriptors the host process holds without close-on-exec (prlimit and bubblewrap pass them on) are closed in each child before its tool's code runs: of the host's descriptors a child keeps only its protocol's stdin, stdout and stderr"
    },
    {
      layer: "private-working-directory",
      active: true,
      detail: bwrap
        ? `each child's working directory (its HOME) is its own ${l.workDirMiB} MiB tmpfs at /mnt/work, gone with the child, with no host directory behind it; the package directory is separate and read-only`
        : "each child runs in its own host directory, removed when the child ends; the package directory is separate and read-only"
    },
    {
      layer: "process-group",
      active: true,
      detail: "each child leads its own process group (detached); timeout, cancel and close SIGKILL the whole group"
    },
    {
      layer: "node-permission-model",
      active: iso.permissionFlag !== undefined,
      detail: iso.permissionFlag !== undefined
        ? `${iso.permissionFlag} with --allow-fs-read of the version directory only: no fs writes, no child processes, no workers, no addons`
        : `${config.nodePath} has no permission model: JS/TS children are not restricted by Node`
    },
    {
      layer: "rlimits",
      active: iso.prlimit !== undefined,
      detail: iso.prlimit !== undefined
        ? `${iso.prlimit}: address space (Node ${l.memoryMiB + NodeAddressSpaceExtraMiB} MiB with --max-old-space-size=${l.memoryMiB}, others ${l.memoryMiB} MiB), CPU ${l.cpuSeconds} s, ${l.openFiles} open files, ${l.processes} processes${iso.runAs === undefined && isRoot() ? " (not enforced: children run as root)" : ""}, files ≤ ${l.fileSizeMiB} MiB, no core dumps`
        : "prlimit (util-linux) not found: children run without address-space, CPU, open-file or process limits"
    }
  ]
}

/** The layers of bubblewrap (its namespaces, bounded storage, seccomp), the child's uid and the Python and Bash interpreters. */
const containmentLayers = (config: SandboxConfig.SandboxConfig, iso: Isolation): Array<LayerReport> => {
  const l = config.limits
  const bwrap = iso.bwrap !== undefined
  return [
    {
      layer: "bubblewrap",
      active: bwrap,
      detail: iso.bwrapDetail
    },
    {
      layer: "bounded-storage",
      active: bwrap,
      detail: bwrap
        ? `/tmp (${l.tmpfsMiB} MiB, with /dev/shm a link into it) and the working directory (${l.workDirMiB} MiB) are sized tmpfs; /, /mnt and /dev (the devices ${DeviceNodes.join(", ")} and the fd links only) are read-only${
          iso.seccomp ? "; no System V shared memory, message queues or semaphores" : ""
        }; anonymous files (memfd) are bounded by ${l.openFiles} open files of ≤ ${l.fileSizeMiB} MiB. a Bash child writes its output into two host files bound in on their own (≤ ${l.fileSizeMiB} MiB each, emptied after every call) and can create no file beside them. Tmpfs pages are host memory, not counted in the child's address space`
        : `without bubblewrap a child's working directory is a host directory bounded only per file (RLIMIT_FSIZE ${l.fileSizeMiB} MiB), not in total, and Python and Bash children can write wherever their uid may (e.g. the host's /tmp)`
    },
    {
      layer: "seccomp",
      active: iso.seccomp,
      detail: iso.seccomp
        ? `every child: ${Seccomp.Refused.join(", ")} and clone with a CLONE_NEW* flag fail with EPERM (no new namespaces, no io_uring, no perf events, no ptrace), clone3 with ENOSYS (glibc falls back to clone); Node, Python and C# children (and the C# compiler) also cannot create processes (fork, vfork and clone without CLONE_THREAD fail with EPERM), Bash children can, inside their namespaces`
        : !bwrap
        ? "needs bubblewrap"
        : "the seccomp program is written for x86_64 only"
    },
    {
      layer: "unprivileged-uid",
      active: iso.runAs !== undefined,
      detail: iso.runAs !== undefined
        ? `children run as uid ${iso.runAs.uid} gid ${iso.runAs.gid}`
        : isRoot()
        ? "children run as root (runAs: \"host\")"
        : `the host is not root; children run as the host's uid ${process.getuid?.()}`
    },
    {
      layer: "python",
      active: iso.python !== undefined,
      detail: iso.pythonDetail
    },
    {
      layer: "bash",
      active: iso.bash !== undefined,
      detail: iso.bash !== undefined ? `${iso.bash} --norc --noprofile` : `${config.bashPath} not found`
    },
    monoLayer(config, iso)
  ]
}

/** How C# children differ from the others under the same layers. */
const monoLayer = (config: SandboxConfig.SandboxConfig, iso: Isolation): LayerReport => {
  const memory = config.limits.memoryMiB
  return {
    layer: "csharp",
    active: iso.mono !== undefined,
    detail: iso.mono === undefined
      ? iso.monoDetail
      : `${iso.mono.path} ${iso.mono.version}: each version is compiled once by ${iso.mono.mcs} in a child with the same layers (its package read-only, only its output directory writable); children run the compiled assembly with a heap of ${memory} MiB (MONO_GC_PARAMS=max-heap-size) inside RLIMIT_AS of ${
        memory + MonoAddressSpaceExtraMiB
      } MiB (Mono maps its code, the JIT's and the runtime's own structures beside the heap), and with the no-fork rule; each child runs ${MonoThreads} threads at rest (main, finalizer, GC), every one counted against RLIMIT_NPROC; the JIT writes and then executes its own pages (W+X mappings), which no layer here refuses (the seccomp program filters system calls, not mprotect), as for Node's JIT`
  }
}

/** What is not isolated, each with what that leaves open here (always inactive). */
const missingLayers = (config: SandboxConfig.SandboxConfig, iso: Isolation): Array<LayerReport> => {
  const l = config.limits
  const bwrap = iso.bwrap !== undefined
  const uid = iso.runAs?.uid ?? process.getuid?.()
  return [
    {
      layer: "separate-kernel",
      active: false,
      detail: iso.seccomp
        ? "not isolated: children share the host kernel; every system call the seccomp layer does not refuse reaches it, so a kernel bug is an escape"
        : "not isolated: children share the host kernel with its whole interface: they can create user namespaces, and io_uring, perf_event_open and ptrace reach the kernel"
    },
    {
      layer: "exec-restriction",
      active: false,
      detail: `not restricted: a child may exec any program ${bwrap ? "of the read-only system (/usr)" : "its uid can read"}; Bash tools exist for that, and a Python or C# tool can replace its own process (os.execv, or execv through P/Invoke: the no-fork rule stops new processes, not exec; the program keeps the child's limits and seccomp filter); only Node's permission model refuses child processes`
    },
    {
      layer: "own-process-budget",
      active: false,
      detail: iso.runAs === undefined && isRoot()
        ? "not enforced: children run as root, which RLIMIT_NPROC does not limit"
        : `not isolated: RLIMIT_NPROC (${l.processes}) counts every process and thread of uid ${uid}, across every child of every runner that uses it${
          iso.runAs === undefined ? " and the host's own" : ""
        }: one tool's threads or processes can keep the other children of that uid from starting threads or being created; give each runner its own runAs uid to separate them`
    },
    {
      layer: "cgroups",
      active: false,
      detail: `not used: no memory, CPU or pids cgroup; every limit is a per-process rlimit, so a Bash tool's processes each get the address-space limit, and a child's tmpfs${
        bwrap ? ` (up to ${l.tmpfsMiB + l.workDirMiB} MiB)` : ""
      } and the kernel memory it causes (pipes, sockets, page tables) are outside it`
    },
    {
      layer: "hidden-host-paths",
      active: false,
      detail: bwrap
        ? `not hidden: /proc/self/mountinfo shows the host path of each directory bound into the sandbox (the package directory in ${config.tmpDir}/jitbox-sandbox-…; for Bash also its io and out directories), not their content`
        : `not hidden: children run at host paths (${config.tmpDir}/jitbox-sandbox-…) and see the host's mount table`
    }
  ]
}

/** @since 0.1.0 @category reporting */
export const report = (config: SandboxConfig.SandboxConfig, iso: Isolation): Array<LayerReport> => [
  ...processLayers(config, iso),
  ...containmentLayers(config, iso),
  ...missingLayers(config, iso)
]

/** Mono's address space beyond its heap: its code and the JIT's, metadata, thread stacks (a child starts in about 64 MiB). @since 0.1.0 @category constants */
export const MonoAddressSpaceExtraMiB = 256

/** Threads a C# child runs before a tool starts any (main, finalizer, GC worker). @since 0.1.0 @category constants */
export const MonoThreads = 3

/**
 * How every Mono process is launched, the sandbox's children, its compiler and the benchmarks'
 * raw ones alike: the heap bound, the address space around it, no fork.
 *
 * @since 0.1.0
 * @category constructors
 */
export const monoCommand = (mono: MonoInfo, config: SandboxConfig.SandboxConfig, args: ReadonlyArray<string>) =>
  ({
    command: mono.path,
    args,
    env: { MONO_GC_PARAMS: `max-heap-size=${config.limits.memoryMiB}m` },
    addressSpaceMiB: config.limits.memoryMiB + MonoAddressSpaceExtraMiB,
    noFork: true
  }) as const

/** Node reserves about 768 MiB of address space just to start (measured on Node 20). @since 0.1.0 @category constants */
export const NodeAddressSpaceExtraMiB = 1024

/**
 * The environment of every Node child beyond the sandbox's own: one libuv pool thread instead of
 * four. Every thread of every child counts against the children's shared process limit (RLIMIT_NPROC
 * of their uid), so with `--v8-pool-size=1` a child runs 4 threads instead of 10.
 *
 * @since 0.1.0
 * @category constants
 */
export const NodeEnvironment: Readonly<Record<string, string>> = { UV_THREADPOOL_SIZE: "1" }

/**
 * How every Node child is launched, the sandbox's and the benchmarks' raw ones alike: the
 * interpreter, its permission and thread flags, its heap and address space, and its environment,
 * running `script` of the package mounted at `packageInside`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const nodeCommand = (
  iso: Isolation,
  config: SandboxConfig.SandboxConfig,
  packageInside: string,
  script: string
) => {
  const memory = config.limits.memoryMiB
  const permission = iso.permissionFlag !== undefined ? [iso.permissionFlag, `--allow-fs-read=${packageInside}`] : []
  return {
    command: config.nodePath,
    args: [...permission, ...iso.nodeFlags, `--max-old-space-size=${memory}`, `${packageInside}/${script}`],
    env: NodeEnvironment,
    addressSpaceMiB: memory + NodeAddressSpaceExtraMiB,
    noFork: true
  } as const
}

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0

type RunAs = { readonly uid: number; readonly gid: number } | undefined

/** Runs `bwrap … /bin/true` with the sandbox's layout (and with `withSeccomp`, the seccomp program on fd 3). */
const tryBwrap = (
  bwrapPath: string,
  config: SandboxConfig.SandboxConfig,
  rootEntries: ReadonlyArray<RootEntry>,
  runAs: RunAs,
  withSeccomp: boolean
) => {
  // the probe passes the program in a file it removes at once; children get it through a pipe
  const file = withSeccomp ? writeSeccompProgram(config.tmpDir) : undefined
  const fd = file !== undefined ? fs.openSync(file, "r") : undefined
  try {
    const args = [
      ...bwrapArgs(rootEntries, {
        tmpfsMiB: config.limits.tmpfsMiB,
        workDirMiB: config.limits.workDirMiB,
        mounts: [],
        workDir: { inside: "/mnt/work", host: undefined },
        seccomp: fd !== undefined
      }),
      "/bin/true"
    ]
    return spawnSync(bwrapPath, args, {
      env: {},
      stdio: fd !== undefined ? ["ignore", "ignore", "pipe", fd] : ["ignore", "ignore", "pipe"],
      timeout: 10_000,
      ...(runAs ?? {})
    })
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
    if (file !== undefined) fs.rmSync(path.dirname(file), { recursive: true, force: true })
  }
}

/** Whether bubblewrap is usable here (with seccomp if it loads), and why not or what it gives. */
const probeBwrap = (
  config: SandboxConfig.SandboxConfig,
  rootEntries: ReadonlyArray<RootEntry>,
  runAs: RunAs
): { readonly bwrap: string | undefined; readonly bwrapDetail: string; readonly seccomp: boolean } => {
  let bwrap: string | undefined
  let bwrapDetail: string | undefined
  let seccomp = false
  const bwrapPath = ["/usr/bin/bwrap", "/bin/bwrap"].find(isExecutable)
  if (!config.bubblewrap) {
    bwrapDetail = "disabled by options (bubblewrap: false): no network, pid or mount namespaces"
  } else if (bwrapPath === undefined) {
    bwrapDetail = "bwrap not found: children share the host's network, pids and file system view"
  } else {
    if (Seccomp.supported() && tryBwrap(bwrapPath, config, rootEntries, runAs, true).status === 0) {
      bwrap = bwrapPath
      seccomp = true
    } else {
      const plain = tryBwrap(bwrapPath, config, rootEntries, runAs, false)
      if (plain.status === 0) bwrap = bwrapPath
      else bwrapDetail = `bwrap is installed but unusable here (${String(plain.stderr ?? plain.error).trim()})`
    }
    bwrapDetail ??= "mount, network, pid, ipc, uts and user namespaces; a new session; read-only /, /usr, /etc, /proc (no process can write another's memory through it) and /dev (a few device nodes only), a private /tmp tmpfs and working-directory tmpfs; the package directory read-only under /mnt; nothing else of the host file system (no /root, /home, /work, /var)"
  }
  return { bwrap, bwrapDetail, seccomp }
}

/** Mono and its C# compiler, if both are there and Mono starts. */
const probeMono = (config: SandboxConfig.SandboxConfig): { readonly mono: MonoInfo | undefined; readonly monoDetail: string } => {
  if (!isExecutable(config.monoPath)) {
    return { mono: undefined, monoDetail: `${config.monoPath} not found: C# tools have no runner on this host (install mono-runtime and mono-mcs)` }
  }
  if (!fs.existsSync(config.mcsPath)) {
    return { mono: undefined, monoDetail: `${config.mcsPath} not found: C# tools cannot be compiled on this host (install mono-mcs)` }
  }
  const out = spawnSync(config.monoPath, ["--version"], { env: {}, encoding: "utf8", timeout: 10_000 })
  const version = /version (\S+)/.exec(String(out.stdout ?? ""))?.[1]
  if (out.status !== 0 || version === undefined) {
    return { mono: undefined, monoDetail: `${config.monoPath} did not start: ${String(out.stderr ?? out.error).trim()}` }
  }
  return { mono: { path: config.monoPath, mcs: config.mcsPath, version }, monoDetail: `${config.monoPath} ${version}` }
}

/** The Python interpreter, if it starts and is 3.10 or later, and why not or how it runs. */
const probePython = (config: SandboxConfig.SandboxConfig): { readonly python: PythonInfo | undefined; readonly pythonDetail: string } => {
  if (!isExecutable(config.pythonPath)) {
    return { python: undefined, pythonDetail: `${config.pythonPath} not found: Python tools have no runner on this host` }
  }
  const out = spawnSync(config.pythonPath, [
    "-I",
    "-S",
    "-c",
    "import sys; print(sys.version_info[0], sys.version_info[1], sys.implementation.cache_tag)"
  ], { env: {}, encoding: "utf8", timeout: 10_000 })
  const [major, minor, cacheTag] = String(out.stdout ?? "").trim().split(" ")
  if (out.status !== 0 || major === undefined || minor === undefined || cacheTag === undefined) {
    return { python: undefined, pythonDetail: `${config.pythonPath} did not start: ${String(out.stderr ?? out.error).trim()}` }
  }
  if (Number(major) < 3 || (Number(major) === 3 && Number(minor) < 10)) {
    return { python: undefined, pythonDetail: `${config.pythonPath} is ${major}.${minor}; Python tools need 3.10 or later` }
  }
  return {
    python: { path: config.pythonPath, version: `${major}.${minor}`, cacheTag },
    pythonDetail: `${config.pythonPath} ${major}.${minor} in isolated mode (-I${
      config.pythonSite ? "" : " -S"
    } -B): no user site, no PYTHON* variables, no script directory on sys.path`
  }
}

const probe = (config: SandboxConfig.SandboxConfig): Isolation => {
  const runAs = config.runAs !== undefined && isRoot() ? config.runAs : undefined
  const prlimit = findExecutable(["/usr/bin/prlimit", "/bin/prlimit"], ["--nofile=64", "--", "/bin/true"], runAs)
  const permissionFlag = detectPermissionFlag(config.nodePath)
  const nodeFlags = detectNodeFlags(config.nodePath)
  const rootEntries = hostRootEntries([config.nodePath, config.pythonPath, config.bashPath, config.monoPath])
  const { bwrap, bwrapDetail, seccomp } = probeBwrap(config, rootEntries, runAs)
  const { python, pythonDetail } = probePython(config)
  const bash = isExecutable(config.bashPath) ? config.bashPath : undefined
  const { mono, monoDetail } = probeMono(config)
  return {
    permissionFlag,
    nodeFlags,
    prlimit,
    bwrap,
    bwrapDetail,
    rootEntries,
    seccomp: bwrap !== undefined && seccomp,
    python,
    pythonDetail,
    bash,
    mono,
    monoDetail,
    runAs
  }
}

/** A host directory and where a child sees it. @since 0.1.0 @category models */
export interface Mount {
  readonly host: string
  readonly inside: string
  readonly writable: boolean
}

/**
 * A child's writable working directory (also its HOME): inside bubblewrap a tmpfs of
 * `limits.workDirMiB` with no host directory behind it (`host` undefined); without bubblewrap a
 * private host directory.
 *
 * @since 0.1.0 @category models
 */
export interface WorkDir {
  readonly inside: string
  readonly host: string | undefined
}

/** What bubblewrap lays out for one child besides the host root. @since 0.1.0 @category models */
export interface Layout {
  readonly tmpfsMiB: number
  readonly workDirMiB: number
  /** Host directories, bound under the `/mnt` tmpfs (a new top-level directory cannot be created under a read-only `/`). */
  readonly mounts: ReadonlyArray<Mount>
  readonly workDir: WorkDir
  /** Load the seccomp program bubblewrap reads from fd 3. */
  readonly seccomp: boolean
}

/** The device nodes a runtime needs; everything else of the host's `/dev` stays out. @since 0.1.0 @category constants */
export const DeviceNodes: ReadonlyArray<string> = ["null", "zero", "full", "random", "urandom"]

/**
 * The bubblewrap arguments up to (not including) the command. Every writable place has a bound:
 * `/tmp` and the working directory are sized tmpfs, `/dev/shm` links into `/tmp`, and `/`, `/dev`
 * (only `DeviceNodes` and the stdio links) and `/mnt` are remounted read-only once laid out.
 *
 * @since 0.1.0 @category internals
 */
export const bwrapArgs = (rootEntries: ReadonlyArray<RootEntry>, layout: Layout): Array<string> => {
  const args = ["--unshare-all", "--die-with-parent", "--new-session"]
  for (const entry of rootEntries) {
    if (entry._tag === "Bind") args.push("--ro-bind", entry.path, entry.path)
    else args.push("--symlink", entry.target, entry.path)
  }
  args.push("--proc", "/proc", "--remount-ro", "/proc")
  args.push("--size", String(DevTmpfsBytes), "--tmpfs", "/dev")
  for (const node of DeviceNodes) args.push("--dev-bind", `/dev/${node}`, `/dev/${node}`)
  args.push("--symlink", "/proc/self/fd", "/dev/fd")
  for (const [i, name] of ["stdin", "stdout", "stderr"].entries()) args.push("--symlink", `/proc/self/fd/${i}`, `/dev/${name}`)
  args.push("--symlink", "/tmp", "/dev/shm")
  args.push("--remount-ro", "/dev")
  args.push("--size", bytes(layout.tmpfsMiB), "--tmpfs", "/tmp")
  args.push("--size", String(1024 * 1024), "--tmpfs", "/mnt")
  for (const mount of layout.mounts) args.push(mount.writable ? "--bind" : "--ro-bind", mount.host, mount.inside)
  if (layout.workDir.host !== undefined) args.push("--bind", layout.workDir.host, layout.workDir.inside)
  else args.push("--size", bytes(layout.workDirMiB), "--tmpfs", layout.workDir.inside)
  args.push("--remount-ro", "/mnt", "--remount-ro", "/")
  args.push("--chdir", layout.workDir.inside)
  if (layout.seccomp) args.push("--seccomp", "3")
  args.push("--")
  return args
}

/** `/dev` holds only links and device nodes, which take no blocks. */
const DevTmpfsBytes = 64 * 1024

const bytes = (mib: number) => String(Math.ceil(mib * 1024 * 1024))

const hostRootEntries = (interpreters: ReadonlyArray<string>): Array<RootEntry> => {
  const entries: Array<RootEntry> = [{ _tag: "Bind", path: "/usr" }, { _tag: "Bind", path: "/etc" }]
  for (const top of ["/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"]) {
    try {
      const stat = fs.lstatSync(top)
      if (stat.isSymbolicLink()) entries.push({ _tag: "Symlink", path: top, target: fs.readlinkSync(top) })
      else if (stat.isDirectory()) entries.push({ _tag: "Bind", path: top })
    } catch {
      // absent on this host
    }
  }
  const covered = (p: string) =>
    entries.some((e) => e._tag === "Bind" && (p === e.path || p.startsWith(e.path + "/")))
  for (const interpreter of interpreters) {
    let real: string
    try {
      real = fs.realpathSync(interpreter)
    } catch {
      continue
    }
    if (covered(real)) continue
    // e.g. ~/.nvm/versions/node/v20/bin/node: bind the installation prefix
    const prefix = path.dirname(path.dirname(real))
    if (!covered(prefix)) entries.push({ _tag: "Bind", path: prefix })
  }
  return entries
}

const detectPermissionFlag = (nodePath: string): Isolation["permissionFlag"] => {
  if (samePath(nodePath, process.execPath)) {
    const flags = process.allowedNodeEnvironmentFlags
    if (flags.has("--permission")) return "--permission"
    if (flags.has("--experimental-permission")) return "--experimental-permission"
    return undefined
  }
  const out = spawnSync(nodePath, ["-p", "process.allowedNodeEnvironmentFlags.has('--permission') ? 'p' : process.allowedNodeEnvironmentFlags.has('--experimental-permission') ? 'e' : 'n'"], { env: {}, encoding: "utf8", timeout: 10_000 })
  const answer = String(out.stdout ?? "").trim()
  return answer === "p" ? "--permission" : answer === "e" ? "--experimental-permission" : undefined
}

const detectNodeFlags = (nodePath: string): Array<string> => {
  const has = samePath(nodePath, process.execPath)
    ? (flag: string) => process.allowedNodeEnvironmentFlags.has(flag)
    : () => false
  const flags: Array<string> = []
  flags.push(has("--disable-warning") ? "--disable-warning=ExperimentalWarning" : "--no-warnings")
  if (has("--no-addons")) flags.push("--no-addons")
  // every thread counts against the children's shared RLIMIT_NPROC (see NodeEnvironment)
  if (has("--v8-pool-size")) flags.push("--v8-pool-size=1")
  return flags
}

const samePath = (a: string, b: string) => {
  try {
    return fs.realpathSync(a) === fs.realpathSync(b)
  } catch {
    return false
  }
}

const isExecutable = (p: string): boolean => {
  try {
    fs.accessSync(p, fs.constants.X_OK)
    return fs.statSync(p).isFile()
  } catch {
    return false
  }
}

const findExecutable = (
  candidates: ReadonlyArray<string>,
  probeArgs: ReadonlyArray<string>,
  runAs: { readonly uid: number; readonly gid: number } | undefined
): string | undefined => {
  for (const candidate of candidates) {
    if (!isExecutable(candidate)) continue
    const out = spawnSync(candidate, probeArgs, { env: {}, stdio: "ignore", timeout: 10_000, ...(runAs ?? {}) })
    if (out.status === 0) return candidate
  }
  return undefined
}

const writeSeccompProgram = (tmpDir: string): string | undefined => {
  let dir: string | undefined
  try {
    dir = fs.mkdtempSync(path.join(tmpDir, "jitbox-seccomp-"))
    const file = path.join(dir, "no-fork.bpf")
    fs.writeFileSync(file, Seccomp.program({ noFork: true }), { mode: 0o600 })
    return file
  } catch {
    if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true })
    return undefined
  }
}
