/**
 * Bash tools (JT-CTR-06): `main.sh` reads one JSON value on stdin and writes exactly one JSON value
 * to stdout; anything else is a typed error. Bash tools cannot compose (D-24) and declare no
 * metadata (the request supplies it), so activation reports `metadata: {}`.
 *
 * The child is `bash --norc --noprofile runtime/bash-driver.sh` (never `bash -c` over pipes, which
 * reads ~/.bashrc on Debian). The driver checks that main.sh parses (`CompileError` with its line),
 * then runs each invocation in a pre-forked subshell in its own process group, so the fork is off
 * the invocation's path and whatever the script leaves running is killed when it returns. As for
 * every language, concurrent invocations of a version run in separate warm children.
 *
 * @since 0.1.0
 */
import type { CodeRunner } from "@jitbox/core"
import * as fs from "node:fs"
import * as path from "node:path"
import { BashChild, type BashFiles } from "./internal/bashChild.js"
import type { ChildOwner, RunnerContext } from "./internal/context.js"
import { runtimeFile } from "./internal/runtimeFiles.js"
import { packageError, SandboxedVersion, writeVersion } from "./internal/version.js"

/** @since 0.1.0 @category constants */
export const languages: ReadonlyArray<CodeRunner.CodeSource["language"]> = ["bash"]

/** @since 0.1.0 @category constants */
export const driverFile: URL = runtimeFile("bash-driver.sh")

let driverSource: string | undefined

/**
 * Activates one version: write the package, start the driver, parse-check main.sh.
 *
 * @since 0.1.0 @category running
 */
export const activate = async (ctx: RunnerContext, source: CodeRunner.CodeSource): Promise<SandboxedVersion<BashChild>> => {
  const bash = ctx.iso.bash
  if (bash === undefined) throw packageError(source, "NoRunner", undefined, `${ctx.config.bashPath} not found`)
  driverSource ??= fs.readFileSync(driverFile, "utf8")
  const versionDir = ctx.dirs.readOnly("v")
  writeVersion(ctx, source, versionDir, { "driver.sh": driverSource }, "tool")
  const version = new SandboxedVersion(ctx, source, versionDir, (owner) => spawn(ctx, source, versionDir, bash, owner), undefined)
  await version.activate(version.spawnFirst(), "main.sh")
  return version
}

const spawn = (ctx: RunnerContext, source: CodeRunner.CodeSource, versionDir: string, bash: string, owner: ChildOwner): BashChild => {
  let files: BashFiles | undefined
  return ctx.spawn(source, owner, (childDir, marker) => {
    const pkg = ctx.mount("pkg", versionDir, false)
    const work = ctx.workDir(childDir)
    // `io` and `out` are the host's directories (the child creates nothing in them): the arguments
    // file read-only, the two output files writable, each bound on its own with bubblewrap
    const ioHost = hostDirectory(childDir, "io")
    const outHost = hostDirectory(childDir, "out")
    const io = ctx.mount("io", ioHost, false)
    const out = ctx.mount("out", outHost, false)
    // created before the child starts, so the host's descriptors are on the files it made
    files = {
      input: createFile(path.join(ioHost, "in.json"), 0o644, undefined),
      stdout: createFile(path.join(outHost, "stdout"), 0o600, ctx.dirs.owner),
      stderr: createFile(path.join(outHost, "stderr"), 0o600, ctx.dirs.owner)
    }
    const outputs = ctx.iso.bwrap !== undefined
      ? [ctx.mount("out/stdout", files.stdout, true), ctx.mount("out/stderr", files.stderr, true)]
      : []
    return {
      launch: {
        command: bash,
        args: ["--norc", "--noprofile", `${pkg.inside}/driver.sh`],
        env: {
          JB_PKG: `${pkg.inside}/tool`,
          JB_IO: io.inside,
          JB_OUT: out.inside,
          // the driver is pid 2 of its own pid namespace: it kills what a call leaves with `kill -1`
          ...(ctx.iso.bwrap !== undefined ? { JB_PIDNS: "1" } : {})
        },
        mounts: [pkg, io, ...outputs],
        workDir: work,
        addressSpaceMiB: ctx.config.limits.memoryMiB,
        noFork: false,
        marker,
        inheritedDescriptors: "self"
      },
      wrap: (proc, hooks) => new BashChild(proc, hooks, files!)
    }
  })
}

/** A directory of the host's below the child's directory, which the child may read. */
const hostDirectory = (childDir: string, name: string): string => {
  const dir = path.join(childDir, name)
  fs.mkdirSync(dir)
  fs.chmodSync(dir, 0o755)
  return dir
}

/** Creates an empty file for the child; the mode is fixed only when the umask changed it (metadata updates are journalled). */
const createFile = (file: string, mode: number, owner: { readonly uid: number; readonly gid: number } | undefined): string => {
  const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, mode)
  try {
    if ((fs.fstatSync(fd).mode & 0o777) !== mode) fs.fchmodSync(fd, mode)
    if (owner !== undefined) fs.fchownSync(fd, owner.uid, owner.gid)
  } finally {
    fs.closeSync(fd)
  }
  return file
}
