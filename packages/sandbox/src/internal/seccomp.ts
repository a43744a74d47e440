/**
 * A classic-BPF seccomp program for x86_64 that makes process creation fail with EPERM while
 * threads keep working: `fork`, `vfork` and `clone` without CLONE_THREAD return EPERM, `clone3`
 * returns ENOSYS (glibc then falls back to `clone` for threads), x32 syscalls return EPERM, and any
 * other architecture is killed. bubblewrap loads it (`--seccomp FD`) just before it execs the child.
 */

const LD_W_ABS = 0x20
const JEQ_K = 0x15
const JGE_K = 0x35
const JSET_K = 0x45
const RET_K = 0x06

const AUDIT_ARCH_X86_64 = 0xc000003e
const X32_SYSCALL_BIT = 0x40000000
const NR_CLONE = 56
const NR_FORK = 57
const NR_VFORK = 58
const NR_CLONE3 = 435
const CLONE_THREAD = 0x00010000

const RET_ALLOW = 0x7fff0000
const RET_EPERM = 0x00050001
const RET_ENOSYS = 0x00050026
const RET_KILL_PROCESS = 0x80000000

const program: ReadonlyArray<readonly [number, number, number, number]> = [
  [LD_W_ABS, 0, 0, 4], //                 0: A = arch
  [JEQ_K, 1, 0, AUDIT_ARCH_X86_64], //    1: x86_64 ? 3 : 2
  [RET_K, 0, 0, RET_KILL_PROCESS], //     2
  [LD_W_ABS, 0, 0, 0], //                 3: A = nr
  [JGE_K, 7, 0, X32_SYSCALL_BIT], //      4: x32 → 12
  [JEQ_K, 6, 0, NR_FORK], //              5: → 12
  [JEQ_K, 5, 0, NR_VFORK], //             6: → 12
  [JEQ_K, 5, 0, NR_CLONE3], //            7: → 13
  [JEQ_K, 0, 2, NR_CLONE], //             8: clone ? 9 : 11
  [LD_W_ABS, 0, 0, 16], //                9: A = low word of args[0] (flags)
  [JSET_K, 0, 1, CLONE_THREAD], //       10: thread ? 11 : 12
  [RET_K, 0, 0, RET_ALLOW], //           11
  [RET_K, 0, 0, RET_EPERM], //           12
  [RET_K, 0, 0, RET_ENOSYS] //           13
]

/** The program as the bytes of `struct sock_filter[]` (little endian). */
export const noForkProgram = (): Buffer => {
  const bytes = Buffer.alloc(program.length * 8)
  program.forEach(([code, jt, jf, k], i) => {
    bytes.writeUInt16LE(code, i * 8)
    bytes.writeUInt8(jt, i * 8 + 2)
    bytes.writeUInt8(jf, i * 8 + 3)
    bytes.writeUInt32LE(k >>> 0, i * 8 + 4)
  })
  return bytes
}

/** The filter is written for x86_64 only. */
export const supported = (): boolean => process.arch === "x64" && process.platform === "linux"
