/**
 * The packages work outside this repository: `pnpm pack` makes a tarball of each, a fresh
 * project in the system's temporary folder installs the tarballs with plain npm (which fetches the
 * third-party dependencies from the registry), and `node` runs a small program there that uses
 * @jitbox/core, @jitbox/sandbox, @jitbox/agent, @jitbox/runtime, @jitbox/nats, @jitbox/testing
 * (a request over the in-memory transport and over a real nats-server), @jitbox/bench, @jitbox/mcp and
 * @jitbox/otel (packed and installed: @jitbox/cli depends on them), @jitbox/cli, and @jitbox/adapters
 * (with its optional peers `ai` and `@langchain/core` installed beside it) as any consumer
 * would: no workspace links, no `@jitbox/source` condition, only what the tarballs contain; the
 * installed `jitbox` binary runs too. The workspace's TypeScript
 * type-checks the same program (strict, NodeNext, declaration files included), so broken `.d.ts`
 * fail here too.
 *
 * Builds first with `tsc -b` (the first step of `pnpm run build`; incremental, so quick when dist
 * is current); packing @jitbox/cli bundles its command (its `prepack` script), as publishing does. Needs `pnpm` and `npm` on the PATH, the npm registry, and nats-server (NATS_SERVER_BIN
 * or /usr/sbin/nats-server).
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { NatsServer } from "@jitbox/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("..", import.meta.url))

/** A snapshot `jitbox snapshot verify` activates in the sandbox: a TypeScript tool (bundled by esbuild) with declared parameters (compiled by ajv), a Python tool and a C# tool (compiled by mcs with the runtime the package ships). */
const bundleSnapshot = {
  format_version: 1,
  tools: [
    {
      name: "square", language: "typescript", entrypoint: "square",
      source: `export const square = tool({ description: "Square a number.", guidelines: "Use to square." }, async ({ value }: { value: number }) => value * value)\n`,
      parameters: { type: "object", properties: { value: { type: "number" } }, required: ["value"] }
    },
    { name: "add", language: "python", entrypoint: "add", source: `from jitbox import tool\n\n@tool(description="Add two numbers.", guidelines="Use to add.")\ndef add(a: int, b: int) -> int:\n    return a + b\n` },
    {
      name: "echo", language: "csharp", entrypoint: "Echo",
      source: `public static class Echo {\n  public const string Description = "Echo the arguments.";\n  public const string Guidelines = "Use to echo.";\n  public static string Run(string inputJson) { return Jitbox.Json.Write(Jitbox.Json.Parse(inputJson)); }\n}\n`
    }
  ]
}
const packageNames = ["core", "agent", "sandbox", "runtime", "nats", "testing", "bench", "mcp", "otel", "cli", "adapters"] as const
type PackageName = typeof packageNames[number]
const packageDir = (name: PackageName) => path.join(root, "packages", name)
const tsc = createRequire(path.join(root, "package.json")).resolve("typescript/bin/tsc")

/** The environment of a shell outside the workspace: no pnpm or npm script variables, no NODE_OPTIONS. */
const plainEnv: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(([key]) => !/^(npm_|pnpm_|NODE_OPTIONS$|INIT_CWD$)/i.test(key))
)

const run = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env?: NodeJS.ProcessEnv; readonly timeoutMs: number }
): Promise<{ readonly stdout: string; readonly stderr: string }> =>
  new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { cwd: options.cwd, env: options.env ?? plainEnv, timeout: options.timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error === null) return resolve({ stdout, stderr })
        reject(new Error(`\`${[command, ...args].join(" ")}\` in ${options.cwd} failed: ${error.message}\n${stdout}\n${stderr}`))
      }
    )
  })

const twiceSource = `export const twice = tool({
  description: "Add the same integer twice.",
  guidelines: "Use to add an integer to itself.",
  parameters: { type: "object", properties: { value: { type: "integer" } }, required: ["value"] }
}, async ({ value }) => await harness.callTool("add", { left: value, right: value }))
`

/** The consumer's program: plain ESM JavaScript for `node`, type-checked through JSDoc (`checkJs`). */
const program = `// A program outside the jitbox repository that uses the packages as a consumer would.
import { JitHarness, tool } from "@jitbox/core"
import { createAgent, InMemoryMessageAccumulator, JitHarnessExtension, ScriptedModel } from "@jitbox/agent"
import { SandboxRunner } from "@jitbox/sandbox"
import { Ids, MemoryTransport, Subject, Transport } from "@jitbox/runtime"
import { connect, NatsConnection, NatsTransport } from "@jitbox/nats"
import { NatsServer } from "@jitbox/testing"
import { Cli } from "@jitbox/cli"
import { sessionTools } from "@jitbox/adapters/ai"
import { sessionToolkit } from "@jitbox/adapters/langchain"
import { generateText, stepCountIs } from "ai"
import { MockLanguageModelV3 } from "ai/test"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * The harness options that run code tools in @jitbox/sandbox child processes instead of in this
 * process: the one place to change if the harness's option is renamed.
 *
 * @param {import("@jitbox/sandbox").SandboxRunner.SandboxRunner} runner
 * @returns {import("@jitbox/core").JitHarnessOptions}
 */
const sandboxedHarnessOptions = (runner) => ({ codeExecution: "sandboxed", runners: [runner] })

const add = tool({
  name: "add",
  description: "Add two integers.",
  guidelines: "Use for integer addition.",
  parameters: {
    type: "object",
    properties: { left: { type: "integer" }, right: { type: "integer" } },
    required: ["left", "right"]
  }
}, /** @param {{ left: number, right: number }} args */ ({ left, right }) => left + right)

const twiceSource = ${JSON.stringify(twiceSource)}

/** @param {string} label @param {unknown} value */
const print = (label, value) => console.log(label + ": " + JSON.stringify(value))

// 1. In process: a code tool made through the create_tool management tool composes the base tool.
const trusted = new JitHarness({ sessionId: "trusted", tools: [add] })
print("create_tool", await trusted.callTool("create_tool", { entrypoint: "twice", source: twiceSource }))
print("trusted twice(21)", await trusted.callTool("twice", { value: 21 }))
print("trusted add callers", trusted.profile("add").calls.map((call) => call.caller_tool_name))
await trusted.release()

// 2. Sandboxed: the same code tool in a child process of @jitbox/sandbox.
const runner = SandboxRunner.make({ shortTimeoutSeconds: 60, maximumRuntimeEnvironments: 2 })
try {
  const sandboxed = new JitHarness({ sessionId: "sandboxed", tools: [add], ...sandboxedHarnessOptions(runner) })
  await sandboxed.callTool("create_tool", { entrypoint: "twice", source: twiceSource })
  print("sandboxed twice(21)", await sandboxed.callTool("twice", { value: 21 }))
  print("sandboxed children", runner.poolSize())
  print("sandboxed add callers", sandboxed.profile("add").calls.map((call) => call.caller_tool_name))
  await sandboxed.release()
} finally {
  await runner.close()
}

// 3. One agent turn: a scripted model creates twice through create_tool, calls it and answers.
const model = ScriptedModel.make((request) => {
  const last = request.messages[request.messages.length - 1]
  if (last?.role !== "tool") {
    return {
      role: "assistant",
      content: null,
      toolCalls: [{ id: "call_create", name: "create_tool", arguments: { entrypoint: "twice", source: twiceSource } }]
    }
  }
  if (last.isError) return last.name + " failed: " + last.content
  if (last.name === "create_tool") {
    return { role: "assistant", content: null, toolCalls: [{ id: "call_twice", name: "twice", arguments: { value: 21 } }] }
  }
  return "twice(21) = " + last.content
})
const jit = new JitHarnessExtension()
const agent = await createAgent(model, {
  config: { sessionId: "agent" },
  tools: [add],
  extensions: [new InMemoryMessageAccumulator(), jit]
})
const result = await agent.run("Build twice and use it on 21.")
print("agent answer", result.content)
print("agent turns", result.turns)
print("agent tool calls", result.messages.flatMap((message) => message.role === "tool" ? [message.name] : []))
await jit.forgetSession("agent")

// 4. The runtime: one request/reply over the in-memory transport, then over a real nats-server.
const subject = Subject.sessionCall(Subject.prefix(Ids.namespace("packaging")), Ids.sessionId("s1"))
/**
 * @param {import("effect/Layer").Layer<import("@jitbox/runtime").Transport.Transport, import("@jitbox/runtime").TransportError.TransportError>} layer
 */
const echoOver = (layer) => Effect.runPromise(Effect.gen(function* () {
  yield* Transport.serve(subject, { concurrency: 1 }, (request) => "echo:" + Transport.text(request))
  return Transport.text(yield* Transport.request(subject, "hi", { timeoutMs: 5000 }))
}).pipe(Effect.provide(layer), Effect.scoped))
print("memory transport", await echoOver(MemoryTransport.layer()))
const server = await NatsServer.start()
try {
  print("nats transport", await echoOver(NatsTransport.layer.pipe(Layer.provide(NatsConnection.layer({ servers: server.url })))))
  // the Promise client: no session host runs, so the request finds no responders, as a tagged error
  const jitbox = await connect({ servers: server.url, namespace: "packaging" })
  print("nats connect", await jitbox.session("s1").listTools().then(() => "served", (error) => [error._tag, error.reason]))
  await jitbox.close()
} finally {
  await server.close()
}

// 5. The jitbox command's module: its version, as \`jitbox --version\` prints it.
print("cli version", Cli.version)

// 6. The orchestrator adapters: the session's tools as AI SDK tools, driven by the SDK's mock
// model through create_tool and the new tool, and as LangChain tools.
const orchestrated = new JitHarness({ sessionId: "orchestrated", tools: [add] })
const toolset = await sessionTools(orchestrated, { management: true })
const usage = { inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 0, text: 0, reasoning: 0 } }
const mock = new MockLanguageModelV3({
  doGenerate: [
    {
      content: [{ type: "tool-call", toolCallId: "call_create", toolName: "create_tool", input: JSON.stringify({ entrypoint: "twice", source: twiceSource }) }],
      finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: []
    },
    {
      content: [{ type: "tool-call", toolCallId: "call_twice", toolName: "twice", input: JSON.stringify({ value: 21 }) }],
      finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: []
    },
    { content: [{ type: "text", text: "twice(21) = 42" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] }
  ]
})
const generated = await generateText({ model: mock, tools: toolset.tools, prepareStep: toolset.prepareStep, prompt: "Build twice and use it on 21.", stopWhen: stepCountIs(5) })
print("ai sdk answer", generated.text)
print("ai sdk tool results", generated.steps.flatMap((step) => step.toolResults.map((result) => result.output)))
const toolkit = await sessionToolkit(orchestrated)
print("langchain tools", toolkit.getTools().map((tool) => tool.name).sort())
print("langchain twice(4)", await toolkit.tools.find((tool) => tool.name === "twice")?.invoke({ value: 4 }))
await orchestrated.release()
`

const expectedOutput = [
  `create_tool: {"name":"twice","status":"loaded"}`,
  `trusted twice(21): 42`,
  `trusted add callers: ["twice"]`,
  `sandboxed twice(21): 42`,
  `sandboxed children: 1`,
  `sandboxed add callers: ["twice"]`,
  `agent answer: "twice(21) = 42"`,
  `agent turns: 3`,
  `agent tool calls: ["create_tool","twice"]`,
  `memory transport: "echo:hi"`,
  `nats transport: "echo:hi"`,
  `nats connect: ["TransportError","NoResponders"]`,
  `cli version: "0.1.0"`,
  `ai sdk answer: "twice(21) = 42"`,
  `ai sdk tool results: [{"name":"twice","status":"loaded"},42]`,
  `langchain tools: ["add","twice"]`,
  `langchain twice(4): "8"`
]

/** What a consumer's strict TypeScript sees: declaration files are checked too (`skipLibCheck: false`). */
const consumerTsconfig = {
  compilerOptions: {
    strict: true,
    module: "NodeNext",
    moduleResolution: "NodeNext",
    target: "ES2022",
    allowJs: true,
    checkJs: true,
    noEmit: true,
    skipLibCheck: false
  },
  files: ["main.js"]
}

interface Packed {
  readonly tarball: string
  readonly entries: ReadonlyArray<string>
  readonly manifest: Record<string, any>
}

let work: string | undefined
const packed = new Map<PackageName, Packed>()

const versionOf = (name: PackageName): string =>
  JSON.parse(fs.readFileSync(path.join(packageDir(name), "package.json"), "utf8")).version

/** Every path a manifest points to through `exports`, `main` and `types`. */
const targets = (manifest: Record<string, any>): Array<string> => {
  const out: Array<string> = []
  const walk = (value: unknown): void => {
    if (typeof value === "string") out.push(value)
    else if (value !== null && typeof value === "object") for (const inner of Object.values(value)) walk(inner)
  }
  walk(manifest.exports)
  walk(manifest.main)
  walk(manifest.types)
  return out
}

describe("the packed packages in a project outside the repository", () => {
  beforeAll(async () => {
    try {
      await run(process.execPath, [tsc, "-b"], { cwd: root, env: process.env, timeoutMs: 200_000 })
    } catch (error) {
      throw new Error(`the build (\`tsc -b\`, the first step of \`pnpm run build\`) failed, so the packages cannot be packed:\n${String(error)}`)
    }
    for (const name of packageNames) {
      for (const file of ["dist/index.js", "dist/index.d.ts"]) {
        if (!fs.existsSync(path.join(packageDir(name), file))) {
          throw new Error(`packages/${name}/${file} is missing after the build: run \`pnpm run build\``)
        }
      }
    }

    work = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), "jitbox-packaging-"))
    expect(path.relative(root, work).startsWith("..")).toBe(true)
    const tarballs = path.join(work, "tarballs")
    fs.mkdirSync(tarballs)
    for (const name of packageNames) {
      await run("pnpm", ["pack", "--pack-destination", tarballs], { cwd: packageDir(name), env: process.env, timeoutMs: 60_000 })
      const tarball = path.join(tarballs, `jitbox-${name}-${versionOf(name)}.tgz`)
      if (!fs.existsSync(tarball)) throw new Error(`pnpm pack made no ${path.basename(tarball)}: ${fs.readdirSync(tarballs).join(", ")}`)
      const entries = (await run("tar", ["-tzf", tarball], { cwd: work, timeoutMs: 30_000 })).stdout.split("\n").filter((line) => line !== "")
      const manifest = JSON.parse((await run("tar", ["-xzOf", tarball, "package/package.json"], { cwd: work, timeoutMs: 30_000 })).stdout)
      packed.set(name, { tarball, entries, manifest })
    }

    const project = path.join(work!, "project")
    fs.mkdirSync(project)
    fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "jitbox-consumer", version: "1.0.0", private: true, type: "module" }, null, 2))
    fs.writeFileSync(path.join(project, "main.js"), program)
    fs.writeFileSync(path.join(project, "tsconfig.json"), JSON.stringify(consumerTsconfig, null, 2))
    const nodeTypes = JSON.parse(fs.readFileSync(path.join(root, "node_modules/@types/node/package.json"), "utf8")).version as string
    // A consumer of the runtime writes Effect programs, so it depends on effect itself (the version the packages use).
    const effectVersion = JSON.parse(fs.readFileSync(path.join(packageDir("runtime"), "package.json"), "utf8")).dependencies.effect as string
    // The adapters' libraries are optional peers: a consumer installs the one it uses (the versions the adapters are tested with).
    const adapterLibraries = JSON.parse(fs.readFileSync(path.join(packageDir("adapters"), "package.json"), "utf8")).devDependencies as Record<string, string>
    await run("npm", [
      "install",
      "--no-audit",
      "--no-fund",
      ...packageNames.map((name) => packed.get(name)!.tarball),
      `@types/node@${nodeTypes}`,
      `effect@${effectVersion}`,
      `ai@${adapterLibraries["ai"]}`,
      `@langchain/core@${adapterLibraries["@langchain/core"]}`,
      // the AI SDK's declarations import the types of `json-schema`, which it does not bring (seen with skipLibCheck off)
      "@types/json-schema@7.0.15"
    ], { cwd: project, timeoutMs: 200_000 })
  }, 300_000)

  // The installed project is over 100 MB: removing it can take a while on a slow disk.
  afterAll(async () => {
    if (work !== undefined) await fs.promises.rm(work, { recursive: true, force: true })
  }, 120_000)

  it.each(packageNames)("@jitbox/%s: the tarball holds the build and the sources, no tests, no tsconfig", (name) => {
    const { entries } = packed.get(name)!
    const files = entries.map((entry) => entry.replace(/^package\//, ""))
    expect(files.filter((file) => /(^|\/)(test|tests|__tests__)\//.test(file) || /\.(test|spec)\.[cm]?[jt]sx?$/.test(file))).toEqual([])
    expect(files.filter((file) => /(^|\/)tsconfig[^/]*\.json$/.test(file) || file.endsWith(".tsbuildinfo"))).toEqual([])
    expect(files).toContain("package.json")
    expect(files).toContain("dist/index.js")
    expect(files).toContain("dist/index.d.ts")
    // Nothing stale: every emitted module comes from a source file of the tarball.
    const stale = files.filter((file) => file.startsWith("dist/") && file.endsWith(".js"))
      .filter((file) => !files.includes(file.replace(/^dist\//, "src/").replace(/\.js$/, ".ts")))
    expect(stale, "dist has outputs of deleted sources: run `pnpm run clean && pnpm run build`").toEqual([])
    if (name === "sandbox") {
      for (const script of fs.readdirSync(path.join(packageDir("sandbox"), "runtime"))) expect(files).toContain(`runtime/${script}`)
    }
  })

  it.each(packageNames)("@jitbox/%s: the packed manifest is publishable and points only into the tarball", (name) => {
    const { entries, manifest } = packed.get(name)!
    expect(manifest.name).toBe(`@jitbox/${name}`)
    expect(manifest.private).toBeUndefined()
    expect(manifest.type).toBe("module")
    expect(manifest.license).toBe("MIT")
    expect(manifest.engines?.node).toMatch(/^>=20/)
    expect(typeof manifest.description).toBe("string")
    expect(JSON.stringify(manifest)).not.toContain("workspace:")
    expect(JSON.stringify(manifest.exports)).not.toContain("@jitbox/source")
    expect(manifest.exports["./package.json"]).toBe("./package.json")
    for (const target of targets(manifest)) expect(entries).toContain(`package/${target.replace(/^\.\//, "")}`)
    const jitboxDependencies: Record<PackageName, ReadonlyArray<PackageName>> = {
      core: [],
      agent: ["core"],
      sandbox: ["core"],
      runtime: ["core"],
      nats: ["runtime"],
      testing: [],
      bench: ["core", "sandbox", "runtime", "nats"],
      mcp: ["core"],
      otel: ["core", "runtime"],
      cli: ["core", "runtime", "nats", "bench", "mcp", "otel"],
      adapters: ["core"]
    }
    for (const dependency of jitboxDependencies[name]) {
      expect(manifest.dependencies[`@jitbox/${dependency}`]).toBe(versionOf(dependency))
    }
  })

  it("npm installed one copy of each package, from the tarballs", () => {
    const project = path.join(work!, "project")
    for (const name of packageNames) {
      const installed = JSON.parse(fs.readFileSync(path.join(project, "node_modules/@jitbox", name, "package.json"), "utf8"))
      expect(installed.version).toBe(versionOf(name))
    }
    for (const name of packageNames) {
      expect(fs.existsSync(path.join(project, `node_modules/@jitbox/${name}/node_modules/@jitbox`))).toBe(false)
    }
  })

  it("@jitbox/cli: the packed manifest's bin is bin/jitbox.js, a node script in the tarball that runs the bundle (made when packing) or dist/bin.js", () => {
    const { entries, manifest } = packed.get("cli")!
    expect(manifest.bin).toEqual({ jitbox: "./bin/jitbox.js" })
    expect(entries).toEqual(expect.arrayContaining(["package/bin/jitbox.js", "package/dist/bin.js", "package/dist/bundle/jitbox.mjs"]))
    expect(entries.filter((entry) => entry.startsWith("package/scripts/"))).toEqual([])
    const shim = fs.readFileSync(path.join(packageDir("cli"), "bin/jitbox.js"), "utf8")
    expect(shim.split("\n")[0]).toBe("#!/usr/bin/env node")
    expect(shim).toContain(`new URL("../dist/bundle/jitbox.mjs", import.meta.url)`)
    expect(shim).toContain(`new URL("../dist/bin.js", import.meta.url)`)
  })

  it("the installed jitbox binary runs from its bundle alone: its version, the help of jitbox worker, and a snapshot verified in the sandbox (TypeScript through esbuild, parameters through ajv, Python, C#)", async () => {
    const project = path.join(work!, "project")
    const jitbox = path.join(project, "node_modules/.bin/jitbox")
    const unbundled = path.join(project, "node_modules/@jitbox/cli/dist/bin.js")
    fs.renameSync(unbundled, `${unbundled}.aside`)
    try {
      expect((await run(jitbox, ["--version"], { cwd: project, timeoutMs: 60_000 })).stdout.trim()).toBe(versionOf("cli"))
      const help = (await run(jitbox, ["worker", "--help"], { cwd: project, timeoutMs: 60_000 })).stdout
      for (const option of ["--server", "--creds", "--namespace", "--pool", "--log-invocations"]) expect(help).toContain(option)
      fs.writeFileSync(path.join(project, "snapshot.json"), JSON.stringify(bundleSnapshot))
      const verified = await run(jitbox, ["snapshot", "verify", "--file", "snapshot.json"], { cwd: project, timeoutMs: 90_000 })
      expect(verified.stdout).toMatch(/^ok file snapshot\.json: activates \(3 code tools, 0 text tools\)/)
    } finally {
      fs.renameSync(`${unbundled}.aside`, unbundled)
    }
  }, 240_000)

  it("node runs a program that uses core, sandbox, agent, runtime, nats, testing, cli and adapters", async () => {
    const { stdout } = await run(process.execPath, ["main.js"], { cwd: path.join(work!, "project"), timeoutMs: 120_000 })
    expect(stdout.trimEnd().split("\n")).toEqual(expectedOutput)
  }, 150_000)

  it("the program type-checks against the installed declaration files (strict, NodeNext)", async () => {
    await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: path.join(work!, "project"), timeoutMs: 200_000 })
  }, 240_000)

  it("a project on another major version of effect installs @jitbox/nats and uses connect() (jitbox brings its own effect 3)", async () => {
    const project = path.join(work!, "effect4")
    fs.mkdirSync(project)
    fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "effect4-consumer", version: "1.0.0", private: true, type: "module" }, null, 2))
    fs.writeFileSync(path.join(project, "main.js"), effect4Program)
    await run("npm", [
      "install",
      "--no-audit",
      "--no-fund",
      ...(["core", "sandbox", "runtime", "nats"] as const).map((name) => packed.get(name)!.tarball),
      "effect@4.1.5"
    ], { cwd: project, timeoutMs: 200_000 })
    const server = await NatsServer.start()
    try {
      const { stdout } = await run(process.execPath, ["main.js"], { cwd: project, env: { ...plainEnv, NATS_URL: server.url }, timeoutMs: 60_000 })
      expect(JSON.parse(stdout.trim())).toEqual({ effect: "4.1.5", tag: "TransportError", reason: "NoResponders" })
    } finally {
      await server.close()
    }
  }, 300_000)
})

/** A consumer that has effect 4 itself and talks to jitbox with Promises only. */
const effect4Program = `import { connect } from "@jitbox/nats"
import * as fs from "node:fs"

const effect = JSON.parse(fs.readFileSync("node_modules/effect/package.json", "utf8")).version
const jitbox = await connect({ servers: process.env.NATS_URL, namespace: "outside" })
const error = await jitbox.session("s1").listTools().then(() => undefined, (rejection) => rejection)
console.log(JSON.stringify({ effect, tag: error?._tag, reason: error?.reason }))
await jitbox.close()
`
