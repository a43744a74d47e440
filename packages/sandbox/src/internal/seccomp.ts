/**
 * Classic-BPF seccomp programs for x86_64, loaded by bubblewrap (`--seccomp FD`) just before it
 * execs a child.
 *
 * Every child: the system calls in `Refused` fail with EPERM (new namespaces, io_uring,
 * perf_event_open, ptrace and cross-process memory access, bpf, userfaultfd, the kernel keyring,
 * System V IPC), and so does `clone` with any CLONE_NEW* flag; `clone3` returns ENOSYS, so glibc
 * falls back to `clone`, whose flags a classic-BPF filter can read (clone3 passes them in memory).
 * A Node or Python child (`noFork`) also cannot create processes: `fork`, `vfork` and `clone`
 * without CLONE_THREAD fail with EPERM while threads keep working. On every program x32 system
 * calls fail with EPERM and any other architecture is killed.
 */

const LD_W_ABS = 0x20
const JEQ_K = 0x15
const JGE_K = 0x35
const JSET_K = 0x45
const RET_K = 0x06

/** Offsets in `struct seccomp_data`. */
const NrOffset = 0
const ArchOffset = 4
/** The low word of args[0] (little endian): `clone` takes its flags there, the kernel reads only 32 bits of them. */
const FirstArgLowOffset = 16

const AUDIT_ARCH_X86_64 = 0xc000003e
const X32_SYSCALL_BIT = 0x40000000
const CLONE_THREAD = 0x00010000
/** CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET. */
const CLONE_NEW_ANY = 0x7e020000

const Nr = {
  shmget: 29,
  clone: 56,
  fork: 57,
  vfork: 58,
  semget: 64,
  msgget: 68,
  ptrace: 101,
  add_key: 248,
  request_key: 249,
  keyctl: 250,
  unshare: 272,
  perf_event_open: 298,
  setns: 308,
  process_vm_readv: 310,
  process_vm_writev: 311,
  bpf: 321,
  userfaultfd: 323,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  clone3: 435
} as const

/** System calls every child is refused (EPERM), by name. */
export const Refused: ReadonlyArray<keyof typeof Nr> = [
  "unshare",
  "setns",
  "io_uring_setup",
  "io_uring_enter",
  "io_uring_register",
  "perf_event_open",
  "ptrace",
  "process_vm_readv",
  "process_vm_writev",
  "bpf",
  "userfaultfd",
  "keyctl",
  "add_key",
  "request_key",
  // System V IPC: a segment or queue outlives the mapping that paid for it in RLIMIT_AS, so it
  // would be memory without a bound
  "shmget",
  "msgget",
  "semget"
]

const RET_ALLOW = 0x7fff0000
const RET_EPERM = 0x00050001
const RET_ENOSYS = 0x00050026
const RET_KILL_PROCESS = 0x80000000

type Label = "allow" | "eperm" | "enosys" | "kill"
/** Where a conditional jump goes: a label further down, or the next instruction. */
type Target = Label | "next"

type Instruction =
  | { readonly _tag: "Load"; readonly offset: number }
  | { readonly _tag: "Jump"; readonly code: number; readonly k: number; readonly then: Target; readonly else: Target }
  | { readonly _tag: "Return"; readonly value: number }
  | { readonly _tag: "Label"; readonly label: Label }

const load = (offset: number): Instruction => ({ _tag: "Load", offset })
const jump = (code: number, k: number, then: Target, otherwise: Target): Instruction => ({ _tag: "Jump", code, k, then, else: otherwise })
const ifEqual = (nr: number, then: Target): Instruction => jump(JEQ_K, nr, then, "next")
const label = (name: Label): Instruction => ({ _tag: "Label", label: name })
const ret = (value: number): Instruction => ({ _tag: "Return", value })

const instructions = (noFork: boolean): Array<Instruction> => [
  load(ArchOffset),
  jump(JEQ_K, AUDIT_ARCH_X86_64, "next", "kill"),
  load(NrOffset),
  jump(JGE_K, X32_SYSCALL_BIT, "eperm", "next"),
  ifEqual(Nr.clone3, "enosys"),
  ...Refused.map((name) => ifEqual(Nr[name], "eperm")),
  ...(noFork ? [ifEqual(Nr.fork, "eperm"), ifEqual(Nr.vfork, "eperm")] : []),
  jump(JEQ_K, Nr.clone, "next", "allow"),
  load(FirstArgLowOffset),
  jump(JSET_K, CLONE_NEW_ANY, "eperm", "next"),
  ...(noFork ? [jump(JSET_K, CLONE_THREAD, "allow", "eperm")] : []),
  label("allow"),
  ret(RET_ALLOW),
  label("eperm"),
  ret(RET_EPERM),
  label("enosys"),
  ret(RET_ENOSYS),
  label("kill"),
  ret(RET_KILL_PROCESS)
]

/**
 * Encodes instructions as `struct sock_filter[]` (little endian). Jump offsets are computed from
 * the labels; classic BPF jumps only forward, at most 255 instructions.
 */
const assemble = (program: ReadonlyArray<Instruction>): Buffer => {
  const at = new Map<Label, number>()
  let count = 0
  for (const instruction of program) {
    if (instruction._tag !== "Label") count++
    else if (at.has(instruction.label)) throw new Error(`seccomp: label '${instruction.label}' defined twice`)
    else at.set(instruction.label, count)
  }
  const bytes = Buffer.alloc(count * 8)
  let index = 0
  const offset = (target: Target): number => {
    if (target === "next") return 0
    const position = at.get(target)
    if (position === undefined) throw new Error(`seccomp: no label '${target}'`)
    const distance = position - index - 1
    if (distance < 0 || distance > 255) throw new Error(`seccomp: label '${target}' is out of reach of instruction ${index}`)
    return distance
  }
  for (const instruction of program) {
    if (instruction._tag === "Label") continue
    const [code, jt, jf, k] = instruction._tag === "Load"
      ? [LD_W_ABS, 0, 0, instruction.offset]
      : instruction._tag === "Return"
      ? [RET_K, 0, 0, instruction.value]
      : [instruction.code, offset(instruction.then), offset(instruction.else), instruction.k]
    bytes.writeUInt16LE(code, index * 8)
    bytes.writeUInt8(jt, index * 8 + 2)
    bytes.writeUInt8(jf, index * 8 + 3)
    bytes.writeUInt32LE(k >>> 0, index * 8 + 4)
    index++
  }
  return bytes
}

/** The program of a child: every child's rules, plus the no-fork rule for a Node or Python child. */
export const program = (options: { readonly noFork: boolean }): Buffer => assemble(instructions(options.noFork))

/** The filter is written for x86_64 only. */
export const supported = (): boolean => process.arch === "x64" && process.platform === "linux"
