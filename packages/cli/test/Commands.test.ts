/**
 * The `jitbox` command's arguments, without a NATS server. As a process: `jitbox worker --help`
 * names its options and exits 0; `--help` loads none of the packages only some commands need; a bad profiles file exits 1 with a message naming the problem,
 * before anything connects. In this process (`Cli.run`, the same parser and handlers, its console
 * captured; much cheaper than a process per case on a busy machine): each subcommand's help names
 * its options and their environment variables, each kind of bad input fails with a typed error or
 * a `ValidationError` naming it, and the environment variables are read when the flags are absent.
 */
import { HelpDoc, ValidationError } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import * as Cause from "effect/Cause"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Cli, WorkerCommand, WorkerSandbox } from "../src/index.js"
import { plain, spawnCli } from "./cliProcess.js"
import { capturing } from "./inProcess.js"

const spawned = async (args: ReadonlyArray<string>) => {
  const process_ = spawnCli(args)
  const code = await process_.exited()
  return { code, stdout: plain(process_.stdout()), stderr: plain(process_.stderr()) }
}


/** Runs `jitbox <args>` in this process with `env` as the environment Config reads and its console captured. */
const inProcess = async (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const captured = capturing()
  const exit = await Effect.runPromiseExit(
    Cli.run(["node", "jitbox", ...args]).pipe(
      Effect.provide(NodeContext.layer),
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
      Effect.withConsole(captured.console),
      // a command that does start would serve forever
      Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error(`jitbox ${args.join(" ")} did not end`) })
    )
  )
  return { exit, stdout: plain(captured.out.join("\n")), stderr: plain(captured.err.join("\n")) }
}

/** Runs `jitbox <args>` in this process; answers what it failed with. */
const failure = async (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<unknown> => {
  const { exit } = await inProcess(args, env)
  if (Exit.isSuccess(exit)) throw new Error(`jitbox ${args.join(" ")} succeeded`)
  const failed = Cause.failureOption(exit.cause)
  if (Option.isNone(failed)) throw new Error(`jitbox ${args.join(" ")} died: ${Cause.pretty(exit.cause)}`)
  return failed.value
}

/** The text of a parser's error. */
const validationText = (error: unknown): string => {
  expect(ValidationError.isValidationError(error), String(error)).toBe(true)
  return plain(HelpDoc.toAnsiText((error as { readonly error: HelpDoc.HelpDoc }).error))
}

let directory: string
beforeAll(() => {
  directory = fs.mkdtempSync(path.join(os.tmpdir(), "jitbox-cli-test-"))
})
afterAll(() => fs.rmSync(directory, { recursive: true, force: true }))

const write = (name: string, text: string): string => {
  const file = path.join(directory, name)
  fs.writeFileSync(file, text)
  return file
}

const common = ["--server", "--creds", "--namespace", "JITBOX_SERVER", "JITBOX_CREDS", "JITBOX_NAMESPACE"]

// One at a time: each process loads the whole stack, which takes a while on a busy machine.
describe("the jitbox process", () => {
  it("jitbox worker --help names its options and exits 0", async () => {
    const { code, stdout } = await spawned(["worker", "--help"])
    expect(code).toBe(0)
    for (const option of [...common, "--pool", "--languages", "--concurrency", "--grace-ms", "--id", "--log-invocations"]) {
      expect(stdout).toContain(option)
    }
  }, 120_000)

  it("--help (of jitbox, of status) loads no MCP server, benchmark, OpenTelemetry SDK or all of @effect/platform-node: those load with the commands that run them", async () => {
    const log = path.join(directory, "help-imports.log")
    const env = {
      NODE_OPTIONS: `--import=${fileURLToPath(new URL("./fixtures/recordImports.mjs", import.meta.url))}`,
      JITBOX_IMPORT_LOG: log,
      JITBOX_IMPORT_PATTERN: "^@jitbox/(mcp|bench|otel)$|^@modelcontextprotocol/|^@opentelemetry/|^@effect/opentelemetry|^@effect/platform-node$|^@effect/cluster"
    }
    for (const args of [["--help"], ["status", "--help"], ["snapshot", "verify", "--help"]]) {
      const child = spawnCli(args, env)
      expect(await child.exited(), child.stderr()).toBe(0)
      expect(plain(child.stdout())).toContain("USAGE")
    }
    expect(fs.existsSync(log) ? fs.readFileSync(log, "utf8") : "").toBe("")
  }, 120_000)

  it("a profile whose policy is out of range: exit code 1, the profile and the field on stderr", async () => {
    const file = write("bad-policy.json", JSON.stringify({ profiles: [{ name: "standard", policy: { maximumInvocations: -1 } }] }))
    const { code, stderr } = await spawned(["coordinator", "--profiles", file])
    expect(code).toBe(1)
    expect(stderr).toContain("jitbox: ConfigError: profiles.standard.policy: maximumInvocations: expected an integer")
  }, 120_000)
})

describe("jitbox --help (in this process)", () => {
  it.each([
    ["coordinator", [...common, "--profiles", "--coordinator-id", "JITBOX_COORDINATOR_ID", "--slot-hold", "--ledger-retention", "--max-workers"]],
    ["worker", [
      ...common, "--pool", "--languages", "--concurrency", "--grace-ms", "--id", "--log-invocations",
      "--warm-children", "JITBOX_WARM_CHILDREN", "--warm-per-language", "--children-per-tool", "--idle-per-tool",
      "--memory-mb", "--cpu-seconds", "--open-files", "--processes", "--file-size-mb", "--tmpfs-mb", "--work-dir-mb",
      "--node-path", "--python-path", "JITBOX_PYTHON_PATH", "--bash-path", "--mono-path", "JITBOX_MONO_PATH"
    ]],
    ["sessions", [...common, "--store", "--pool", "--idle-timeout", "--max-sessions", "--no-catalog", "--catalog-approve-on-publish"]],
    ["catalog", ["ls", "show", "approve", "revoke"]]
  ])("jitbox %s --help names its options", async (subcommand, options) => {
    const { exit, stdout } = await inProcess([subcommand, "--help"])
    expect(Exit.isSuccess(exit)).toBe(true)
    expect(stdout).toContain(`$ ${subcommand}`)
    for (const option of options) expect(stdout).toContain(option)
  })

  it("jitbox alone shows the help with the three subcommands", async () => {
    const { exit, stdout } = await inProcess([])
    expect(Exit.isSuccess(exit)).toBe(true)
    for (const subcommand of ["coordinator", "worker", "sessions"]) expect(stdout).toMatch(new RegExp(`- ${subcommand} `))
  })
})

describe("jitbox's arguments (in this process)", () => {
  it("a profiles file that does not exist is a ConfigError naming profilesFile and the path", async () => {
    const missing = path.join(directory, "missing.json")
    const error = await failure(["coordinator", "--profiles", missing])
    expect(error).toMatchObject({ _tag: "ConfigError", option: "profilesFile" })
    expect((error as Error).message).toContain(`${missing}: ENOENT`)
  })

  it("a profiles file that is not JSON is a ConfigError naming profilesFile", async () => {
    const file = write("not-json.json", "{ profiles: ")
    expect(await failure(["coordinator", "--profiles", file])).toMatchObject({ _tag: "ConfigError", option: "profilesFile" })
  })

  it("a profiles file without a profiles list", async () => {
    const file = write("no-list.json", JSON.stringify({ name: "standard" }))
    const error = await failure(["coordinator", "--profiles", file])
    expect(error).toMatchObject({ _tag: "ConfigError", option: "profilesFile" })
    expect((error as Error).message).toContain(`expected { "profiles": [ … ] }`)
  })

  it("a profile defined twice", async () => {
    const file = write("twice.json", JSON.stringify({ profiles: [{ name: "standard" }, { name: "standard" }] }))
    expect(await failure(["coordinator", "--profiles", file])).toMatchObject({
      _tag: "ConfigError",
      detail: "the profile 'standard' is defined twice"
    })
  })

  it("a profile with a bad name", async () => {
    const file = write("bad-name.json", JSON.stringify({ profiles: [{ name: "no spaces" }] }))
    expect(await failure(["coordinator", "--profiles", file])).toMatchObject({ _tag: "ConfigError", option: "profiles.name" })
  })

  it("--profiles is required", async () => {
    expect(validationText(await failure(["coordinator"]))).toContain("--profiles")
  })

  it("an unknown language for a worker: the parser's error, printed on stderr", async () => {
    const { exit, stderr } = await inProcess(["worker", "--languages", "python,cobol"])
    expect(Exit.isFailure(exit)).toBe(true)
    expect(validationText(await failure(["worker", "--languages", "python,cobol"]))).toContain("--languages: 'cobol' is not a language")
    expect(stderr).toContain("--languages: 'cobol' is not a language")
  })

  it("--languages names C# as csharp, the fifth language", () => {
    expect(WorkerCommand.parseLanguages("csharp,python")).toEqual(["csharp", "python"])
    expect(() => WorkerCommand.parseLanguages("powershell")).toThrow("'powershell' is not a language; the languages are javascript, typescript, python, bash, csharp")
  })

  it("a concurrency below 1", async () => {
    expect(validationText(await failure(["worker", "--concurrency", "0"]))).toContain("--concurrency: expected an integer ≥ 1, got 0")
  })

  it("a worker's sandbox flags: a count below 1, given as a flag or its JITBOX_ variable, and an interpreter path that is not absolute", async () => {
    expect(validationText(await failure(["worker", "--warm-children", "0"]))).toContain("--warm-children: expected an integer ≥ 1, got 0")
    expect(validationText(await failure(["worker"], { JITBOX_CHILDREN_PER_TOOL: "0" }))).toContain("--children-per-tool: expected an integer ≥ 1, got 0")
    expect(validationText(await failure(["worker", "--memory-mb", "-5"]))).toContain("--memory-mb: expected an integer ≥ 1, got -5")
    expect(validationText(await failure(["worker", "--node-path", "node"]))).toContain("--node-path: expected an absolute path, got 'node'")
  })

  it("a worker's sandbox flags become its sandbox options; what is not given is left to the defaults", () => {
    const none = Option.none()
    const flags = {
      warmChildren: Option.some(12),
      warmPerLanguage: none,
      childrenPerTool: Option.some(4),
      idlePerTool: none,
      memoryMb: Option.some(256),
      cpuSeconds: none,
      openFiles: none,
      processes: Option.some(512),
      fileSizeMb: none,
      tmpfsMb: none,
      workDirMb: none,
      nodePath: none,
      pythonPath: Option.some("/opt/python/bin/python3"),
      bashPath: none,
      monoPath: Option.some("/opt/mono/bin/mono")
    }
    expect(WorkerSandbox.sandboxOptions(flags)).toEqual({
      warmChildren: 12,
      childrenPerActivation: 4,
      limits: { memoryMiB: 256, processes: 512 },
      pythonPath: "/opt/python/bin/python3",
      monoPath: "/opt/mono/bin/mono"
    })
    expect(
      WorkerSandbox.sandboxOptions({ ...flags, warmChildren: none, childrenPerTool: none, memoryMb: none, processes: none, pythonPath: none, monoPath: none })
    ).toEqual({})
  })

  it("a worker id that is not a subject-safe token", async () => {
    expect(await failure(["worker", "--id", "a.b"])).toMatchObject({ _tag: "ConfigError", option: "--id" })
  })

  it("a coordinator id that is not a subject-safe token, given as a flag or as JITBOX_COORDINATOR_ID", async () => {
    const file = write("one-profile.json", JSON.stringify({ profiles: [{ name: "standard" }] }))
    expect(await failure(["coordinator", "--profiles", file, "--coordinator-id", "a.b"])).toMatchObject({ _tag: "ConfigError", option: "--coordinator-id" })
    expect(await failure(["coordinator", "--profiles", file], { JITBOX_COORDINATOR_ID: "a b" })).toMatchObject({ _tag: "ConfigError", option: "--coordinator-id" })
  })

  it("auth config: a pool that is not a subject token is a ConfigError naming --pool", async () => {
    expect(await failure(["auth", "config", "--pool", "a.b"])).toMatchObject({ _tag: "ConfigError", option: "--pool" })
  })

  it("auth config --catalog-hosts-approve lets session hosts write the catalog's reviews; without it only the operator does", async () => {
    const reviewers = async (args: ReadonlyArray<string>) => {
      const { exit, stdout } = await inProcess(["auth", "config", "--namespace", "ns1", "--json", ...args])
      expect(Exit.isSuccess(exit)).toBe(true)
      const principals = JSON.parse(stdout) as Array<{ user: string; publish: Array<string> }>
      return principals.filter((principal) => principal.publish.includes("$KV.jitbox-catalog-ns1.review.>")).map((principal) => principal.user)
    }
    expect(await reviewers([])).toEqual(["operator"])
    expect(await reviewers(["--catalog-hosts-approve"])).toEqual(["operator", "sessions"])
  })

  it("a bad slot hold for the coordinator", async () => {
    expect(validationText(await failure(["coordinator", "--profiles", "p.json", "--slot-hold", "soon"]))).toContain(
      "--slot-hold: expected a duration such as 500ms, 30s, 5m or 1h, got 'soon'"
    )
  })

  it("a bad idle timeout for sessions", async () => {
    expect(validationText(await failure(["sessions", "--idle-timeout", "soon"]))).toContain(
      "--idle-timeout: expected a duration such as 30s, 5m or 1h, got 'soon'"
    )
  })

  it("JITBOX_NAMESPACE is read when --namespace is absent", async () => {
    expect(await failure(["worker"], { JITBOX_NAMESPACE: "not a token" })).toMatchObject({ _tag: "ConfigError", option: "namespace" })
  })

  it("--namespace wins over JITBOX_NAMESPACE", async () => {
    expect(await failure(["worker", "--namespace", "bad.name"], { JITBOX_NAMESPACE: "fine" })).toMatchObject({
      _tag: "ConfigError",
      option: "namespace",
      detail: expect.stringContaining("bad.name")
    })
  })

  it("JITBOX_SERVER is read when --server is absent: nobody listening there is a Connect error naming it", async () => {
    const error = await failure(["worker"], { JITBOX_SERVER: "nats://127.0.0.1:1" })
    expect(error).toMatchObject({ _tag: "TransportError", reason: "Connect" })
    expect((error as Error).message).toContain("nats://127.0.0.1:1")
  })

  it("JITBOX_CREDS is read when --creds is absent: a missing file is a Connect error naming it", async () => {
    const missing = path.join(directory, "missing.creds")
    const error = await failure(["worker", "--server", "nats://127.0.0.1:1"], { JITBOX_CREDS: missing })
    expect(error).toMatchObject({ _tag: "TransportError", reason: "Connect" })
    expect((error as Error).message).toContain(`cannot read the credentials file ${missing}`)
  })
})
