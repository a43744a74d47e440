/**
 * The sandbox flags of `jitbox worker`, each with its `JITBOX_*` environment variable: the warm pool
 * (`--warm-children`, `--warm-per-language`, `--children-per-tool`, `--idle-per-tool`), the
 * resource limits of every child (`--memory-mb`, `--cpu-seconds`, `--open-files`, `--processes`,
 * `--file-size-mb`, `--tmpfs-mb`, `--work-dir-mb`) and the interpreters (`--node-path`,
 * `--python-path`, `--bash-path`). What is not given keeps the worker's default: a warm pool sized
 * from `--concurrency` (`Worker.sandboxPool`) and the sandbox's own limits and interpreters.
 *
 * @since 0.1.0
 */
import { HelpDoc, Options } from "@effect/cli"
import type { SandboxConfig } from "@jitbox/sandbox"
import * as Config from "effect/Config"
import * as Option from "effect/Option"
import * as path from "node:path"

const helpOf = (error: unknown) => HelpDoc.p(error instanceof Error ? error.message : String(error))

/** An optional flag, its environment variable `JITBOX_<NAME>` standing in when it is not given; `refusal` says what is wrong with a value. */
const flag = <A>(
  name: string,
  description: string,
  option: (name: string) => Options.Options<A>,
  variable: (name: string) => Config.Config<A>,
  refusal: (value: A) => string | undefined
) => {
  const environment = `JITBOX_${name.toUpperCase().replaceAll("-", "_")}`
  return option(name).pipe(
    Options.withDescription(`${description}; environment variable ${environment}`),
    Options.withFallbackConfig(variable(environment)),
    Options.mapTryCatch((value) => {
      const wrong = refusal(value)
      if (wrong !== undefined) throw new Error(`--${name}: ${wrong}`)
      return value
    }, helpOf),
    Options.optional
  )
}

/** An optional integer ≥ 1. */
const count = (name: string, description: string) =>
  flag(name, description, Options.integer, Config.integer, (value) =>
    Number.isSafeInteger(value) && value >= 1 ? undefined : `expected an integer ≥ 1, got ${value}`)

/** An optional absolute path of an interpreter. */
const interpreter = (name: string, description: string) =>
  flag(name, description, Options.text, Config.string, (value) => path.isAbsolute(value) ? undefined : `expected an absolute path, got '${value}'`)

/**
 * The flags, to spread into a command's options.
 *
 * @since 0.1.0
 * @category options
 */
export const options = {
  warmChildren: count(
    "warm-children",
    "Sandboxed children kept alive across every tool and language; starting one more evicts the least recently used idle one (default: 4 × --concurrency, for --concurrency calls of tools composed three deep)"
  ),
  warmPerLanguage: count("warm-per-language", "Sandboxed children kept alive of one language (default: no bound besides --warm-children)"),
  childrenPerTool: count(
    "children-per-tool",
    "Children running one tool version's top-level calls at once, for one session; one more waits for one of them (default: --concurrency)"
  ),
  idlePerTool: count("idle-per-tool", "Idle children one tool version of one session keeps warm (default: --children-per-tool)"),
  memoryMb: count("memory-mb", "Memory of each child, in MiB (Node: its heap; Python and Bash: their address space; default 512)"),
  cpuSeconds: count("cpu-seconds", "CPU time of each child over its life, in seconds; a warm child that used half is retired (default 300)"),
  openFiles: count("open-files", "Open files of each child (default 64)"),
  processes: count("processes", "Processes and threads of the sandbox's user, RLIMIT_NPROC, when children do not run as root (default 256)"),
  fileSizeMb: count("file-size-mb", "The largest file a child may write, in MiB (default 16)"),
  tmpfsMb: count("tmpfs-mb", "Size of each child's private /tmp under bubblewrap, in MiB (default 64)"),
  workDirMb: count("work-dir-mb", "Size of each child's working directory under bubblewrap, in MiB (default 64)"),
  nodePath: interpreter("node-path", "The Node.js that runs JavaScript and TypeScript tools (default: the one running jitbox)"),
  pythonPath: interpreter("python-path", "The Python (3.10 or later) that runs Python tools (default /usr/bin/python3)"),
  bashPath: interpreter("bash-path", "The Bash that runs Bash tools (default /bin/bash)"),
  monoPath: interpreter("mono-path", "The Mono that compiles and runs C# tools (default /usr/bin/mono)")
}

/** What the flags parse to. @since 0.1.0 @category models */
export type Flags = { readonly [K in keyof typeof options]: Option.Option<K extends `${string}Path` ? string : number> }

/** `record` without its undefined fields. */
const defined = <A extends object>(record: A): { [K in keyof A]?: Exclude<A[K], undefined> } =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as { [K in keyof A]?: Exclude<A[K], undefined> }

/**
 * The worker's sandbox options from the flags: only what was given, so the rest keeps its default.
 *
 * @since 0.1.0
 * @category constructors
 */
export const sandboxOptions = (flags: Flags): SandboxConfig.SandboxOptions => {
  const get = Option.getOrUndefined
  const limits = defined({
    memoryMiB: get(flags.memoryMb),
    cpuSeconds: get(flags.cpuSeconds),
    openFiles: get(flags.openFiles),
    processes: get(flags.processes),
    fileSizeMiB: get(flags.fileSizeMb),
    tmpfsMiB: get(flags.tmpfsMb),
    workDirMiB: get(flags.workDirMb)
  })
  return defined({
    warmChildren: get(flags.warmChildren),
    warmChildrenPerLanguage: get(flags.warmPerLanguage),
    childrenPerActivation: get(flags.childrenPerTool),
    idleChildrenPerActivation: get(flags.idlePerTool),
    limits: Object.keys(limits).length === 0 ? undefined : limits,
    nodePath: get(flags.nodePath),
    pythonPath: get(flags.pythonPath),
    bashPath: get(flags.bashPath),
    monoPath: get(flags.monoPath)
  })
}
