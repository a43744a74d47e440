/**
 * The raw floor's responder for benchmarks/remote.ts, in its own process: a nats.js subscription
 * on BENCH_RAW_SUBJECT hands each request, as one JSON line with an id, to one warm raw child over
 * its stdin pipe and answers the request with the line the child writes back. No jitbox code is on
 * the path: the connection is nats.js's `connect` with the options jitbox's transport passes
 * (`NatsTransport.connection`), and the child is a JSON-lines echo loop.
 *
 * The child is launched as the sandbox launches a JavaScript tool's child (NodeRunner.ts through
 * internal/spawn.ts's `launch`): prlimit (address space, CPU, files, processes, file size, no core)
 * → bubblewrap (read-only root, the package mounted read-only, a tmpfs working directory, the
 * seccomp filter without fork) → the same Node binary with the permission model
 * (`--permission --allow-fs-read=<package>`), the sandbox's Node flags and `--max-old-space-size`,
 * a scrubbed environment, its own process group and the sandbox's uid. Only what the child runs
 * differs: echo.mjs instead of the jitbox child runtime and the tool.
 *
 * Prints `ready` once a first round trip through the child worked; on SIGTERM kills the child's
 * group, drains the connection and exits.
 */
import { NatsTransport } from "@jitbox/nats"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as path from "node:path"
import { launch, type Mount, type WorkDir } from "../packages/sandbox/src/internal/spawn.js"
import { Isolation, SandboxConfig } from "../packages/sandbox/src/index.js"

const config = SandboxConfig.make({})
const iso = Isolation.detect(config)

const rawDir = fs.mkdtempSync(path.join(config.tmpDir, "jitbox-bench-remote-raw-"))
fs.chmodSync(rawDir, 0o755)
const rawWork = fs.mkdtempSync(path.join(config.tmpDir, "jitbox-bench-remote-work-"))
if (iso.runAs !== undefined) fs.chownSync(rawWork, iso.runAs.uid, iso.runAs.gid)
fs.writeFileSync(
  path.join(rawDir, "echo.mjs"),
  `let b = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (c) => {
  b += c
  let i
  while ((i = b.indexOf("\\n")) !== -1) {
    const m = JSON.parse(b.slice(0, i))
    b = b.slice(i + 1)
    process.stdout.write(JSON.stringify({ id: m.id, value: m.args }) + "\\n")
  }
})
`
)
fs.chmodSync(path.join(rawDir, "echo.mjs"), 0o644)

const pkg: Mount = { host: rawDir, inside: iso.bwrap !== undefined ? "/mnt/pkg" : rawDir, writable: false }
const work: WorkDir = iso.bwrap !== undefined ? { inside: "/mnt/work", host: undefined } : { inside: rawWork, host: rawWork }
const memory = config.limits.memoryMiB
const flags = iso.permissionFlag !== undefined ? [iso.permissionFlag, `--allow-fs-read=${pkg.inside}`] : []
const child = launch(iso, config, {
  command: config.nodePath,
  args: [...flags, ...iso.nodeFlags, `--max-old-space-size=${memory}`, `${pkg.inside}/echo.mjs`],
  env: {},
  mounts: [pkg],
  workDir: work,
  addressSpaceMiB: memory + Isolation.NodeAddressSpaceExtraMiB,
  noFork: true,
  marker: "jitbox-bench-remote-raw",
  // the echo loop closes no inherited descriptor: "self" only spares it the host's listing
  inheritedDescriptors: "self"
})

const cleanup = () => {
  try {
    process.kill(-child.pid!, "SIGKILL")
  } catch {
    child.kill("SIGKILL")
  }
  fs.rmSync(rawDir, { recursive: true, force: true })
  fs.rmSync(rawWork, { recursive: true, force: true })
}
process.on("exit", cleanup)

/** Requests waiting for the child's answer, by id. */
const waiting = new Map<number, (line: string) => void>()
let buffer = ""
child.stdout.setEncoding("utf8")
child.stdout.on("data", (chunk: string) => {
  buffer += chunk
  let i
  while ((i = buffer.indexOf("\n")) !== -1) {
    const line = buffer.slice(0, i)
    buffer = buffer.slice(i + 1)
    const id = Number(/^\{"id":(\d+)/.exec(line)?.[1])
    const answer = waiting.get(id)
    waiting.delete(id)
    answer?.(line)
  }
})
child.stderr.resume()
let ids = 0
const roundTrip = (args: string, answer: (line: string) => void) => {
  const id = ++ids
  waiting.set(id, answer)
  child.stdin.write(`{"id":${id},"args":${args}}\n`)
}

const main = Effect.gen(function*() {
  const scope = yield* Scope.make()
  const nc = yield* NatsTransport.connection({ servers: process.env.BENCH_SERVER!, name: "bench-raw-responder" }).pipe(Scope.extend(scope))
  yield* Effect.promise(() => new Promise<void>((resolve) => roundTrip("{}", () => resolve())))
  const decoder = new TextDecoder()
  nc.subscribe(process.env.BENCH_RAW_SUBJECT!, {
    callback: (error, msg) => {
      if (error !== null) return
      roundTrip(decoder.decode(msg.data), (line) => msg.respond(line))
    }
  })
  yield* Effect.promise(() => nc.flush())
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
