/**
 * The multi-agent example: three agents, each a scripted model in a session of its own, share
 * tools through the namespace's catalog.
 *
 * 1. The writer builds `slugify` (TypeScript) with examples, uses it, and publishes it.
 * 2. An operator step approves the proposal.
 * 3. The composer finds `slugify` in the catalog, loads it pinned by its version id, and builds
 *    `post_path` on it.
 * 4. The improver reads the catalog's measurements of `slugify`, loads it, makes it drop
 *    punctuation, and publishes the improved version; the operator approves it.
 * 5. The composer keeps the version it pinned until it loads the new one.
 *
 * Embedded by default (one process, sandboxed subprocesses); `--nats` runs the same agents on a
 * nats-server (started from PATH) with the catalog in JetStream KV. Prints each step and exits
 * non-zero if a check fails.
 *
 * Run: pnpm demo:agents (or pnpm demo:agents --nats)
 */
import { HarnessError } from "@jitbox/core"
import { createAgent, InMemoryMessageAccumulator, JitHarnessExtension, type ModelProvider, ScriptedModel } from "@jitbox/agent"
import type { Sessions } from "@jitbox/runtime"
import { type AgentsNamespace, embeddedNamespace } from "./agentsNamespace.js"
import { natsNamespace } from "./agentsOverNats.js"

const slugifySource = (words: string) => `export const slugify = tool({
  description: "Turn a title into a URL slug: lower case, words joined by dashes.",
  guidelines: "Use for URL paths built from titles.",
  parameters: { type: "object", properties: { title: { type: "string" } }, required: ["title"] }
}, async ({ title }: { title: string }) => ${words}.join("-"))
`

const firstSlugify = slugifySource(`title.trim().toLowerCase().split(/\\s+/)`)
const betterSlugify = slugifySource(`title.toLowerCase().replace(/[^a-z0-9\\s]/g, "").trim().split(/\\s+/)`)

const postPathSource = `export const post_path = tool({
  description: "The URL path of a blog post from its title.",
  guidelines: "Use to link a blog post.",
  parameters: { type: "object", properties: { title: { type: "string" } }, required: ["title"] }
}, async ({ title }: { title: string }) => "/posts/" + await harness.callTool("slugify", { title }))
`

/** A tool message's content: JSON, or a plain string result. */
const parsed = (content: string): unknown => {
  try {
    return JSON.parse(content)
  } catch {
    return content
  }
}

type Step = (previous: unknown) => { readonly tool: string; readonly args: unknown } | string

/** A scripted model that takes one step per tool result, reading the previous result as a model would. */
const scripted = (steps: ReadonlyArray<Step>): ModelProvider.ModelProvider =>
  ScriptedModel.make((request) => {
    const lastUser = request.messages.map((message) => message.role).lastIndexOf("user")
    const results = request.messages.slice(lastUser + 1).filter((message): message is ModelProvider.ToolMessage => message.role === "tool")
    const last = results.at(-1)
    if (last?.isError === true) return `${last.name} failed: ${last.content}`
    const next = steps[results.length]!(last === undefined ? undefined : parsed(last.content))
    if (typeof next === "string") return next
    return { role: "assistant", content: null, toolCalls: [{ id: `call_${results.length}`, name: next.tool, arguments: next.args }] }
  })

const failures: Array<string> = []
const check = (condition: unknown, what: string): void => {
  if (!condition) failures.push(what)
}

interface Found {
  readonly tools: ReadonlyArray<{ readonly name: string; readonly version_id: string; readonly calls: number; readonly p50_ms: number | null }>
}

const run = async (sessions: Sessions.SessionsShape, sessionId: string, steps: ReadonlyArray<Step>, prompt: string): Promise<string> => {
  const agent = await createAgent(scripted(steps), {
    config: { sessionId },
    extensions: [new InMemoryMessageAccumulator(), JitHarnessExtension.fromSessions(sessions)]
  })
  return (await agent.run(prompt)).content ?? ""
}

const writer: ReadonlyArray<Step> = [
  () => ({
    tool: "create_tool",
    args: { entrypoint: "slugify", source: firstSlugify, examples: [{ input: { title: "Hello World" }, expected_output: "hello-world" }] }
  }),
  () => ({ tool: "slugify", args: { title: "Shared Tools" } }),
  () => ({ tool: "slugify", args: { title: "Many Agents" } }),
  () => ({ tool: "publish_tool", args: { name: "slugify" } }),
  (published) => `published ${(published as { version_id: string }).version_id}`
]

let pinned = ""
const composer: ReadonlyArray<Step> = [
  () => ({ tool: "search_catalog", args: { query: "slug" } }),
  (found) => {
    pinned = (found as Found).tools[0]!.version_id
    return { tool: "load_from_catalog", args: { name: "slugify", version_id: pinned } }
  },
  () => ({
    tool: "create_tool",
    args: { entrypoint: "post_path", source: postPathSource, examples: [{ input: { title: "Hi There" }, expected_output: "/posts/hi-there" }] }
  }),
  () => ({ tool: "post_path", args: { title: "Hello, Agents!" } }),
  (path) => String(path)
]

const improver: ReadonlyArray<Step> = [
  () => ({ tool: "search_catalog", args: { query: "slug" } }),
  (found) => {
    const entry = (found as Found).tools[0]!
    console.log(`improver: catalog says slugify ${entry.version_id} ran ${entry.calls} calls, p50 ${entry.p50_ms?.toFixed(2)} ms`)
    return { tool: "load_from_catalog", args: { name: "slugify", version_id: entry.version_id } }
  },
  () => ({
    tool: "update_tool",
    args: { name: "slugify", source: betterSlugify, examples: [{ input: { title: "Hello, World!" }, expected_output: "hello-world" }] }
  }),
  () => ({ tool: "publish_tool", args: { name: "slugify" } }),
  (published) => `published ${(published as { version_id: string }).version_id}`
]

const reload: ReadonlyArray<Step> = [
  () => ({ tool: "search_catalog", args: { query: "slug" } }),
  (found) => ({ tool: "load_from_catalog", args: { name: "slugify", version_id: (found as Found).tools[0]!.version_id } }),
  () => ({ tool: "post_path", args: { title: "Hello, Agents!" } }),
  (path) => String(path)
]

const approve = async (namespace: AgentsNamespace, version: string): Promise<void> => {
  await namespace.approve("slugify", version)
  const entry = await namespace.catalog.entry("slugify", version)
  console.log(`operator: approved slugify ${entry.version_id} (${entry.status})`)
}

const scenario = async (namespace: AgentsNamespace): Promise<void> => {
  const { catalog, sessions } = namespace
  const first = (await run(sessions, "writer", writer, "Build a slug tool and share it.")).replace(/^published /, "")
  console.log(`writer: published slugify ${first} (proposed)`)
  check((await catalog.entry("slugify", first)).status === "proposed", "a published tool starts proposed")
  await approve(namespace, first)

  const path = await run(sessions, "composer", composer, "Build post_path on the shared slug tool.")
  console.log(`composer: loaded slugify ${pinned}, post_path("Hello, Agents!") = ${path}`)
  check(pinned === first, "the composer pinned the approved version")
  check(path === "/posts/hello,-agents!", "post_path composes the catalog's slugify")

  const second = (await run(sessions, "improver", improver, "Improve the shared slug tool.")).replace(/^published /, "")
  const proposal = await catalog.entry("slugify", second)
  console.log(`improver: published slugify ${second}, updated from ${proposal.provenance.updated_from}`)
  check(second !== first && proposal.provenance.updated_from === first, "the improvement is a new version updated from the first")
  await approve(namespace, second)

  const unchanged = await sessions.get("composer").callTool("post_path", { title: "Hello, Agents!" })
  console.log(`composer: before reloading, post_path("Hello, Agents!") = ${String(unchanged)}`)
  check(unchanged === "/posts/hello,-agents!", "the composer keeps its pinned version after the catalog changed")
  const improved = await run(sessions, "composer", reload, "Load the newest slug tool.")
  console.log(`composer: after loading ${second}, post_path("Hello, Agents!") = ${improved}`)
  check(improved === "/posts/hello-agents", "the composer gets the improvement only when it loads it")
}

const main = async () => {
  const overNats = process.argv.includes("--nats")
  const namespace = overNats ? await natsNamespace() : await embeddedNamespace()
  console.log(`namespace '${namespace.name}' ${overNats ? "over NATS" : "embedded"}: writer, composer and improver sessions share one catalog`)
  try {
    await scenario(namespace)
  } finally {
    await namespace.close()
  }
  if (failures.length > 0) throw new Error(`checks failed:\n- ${failures.join("\n- ")}`)
  console.log("agents checks passed: published, approved, loaded pinned, composed, improved, reloaded")
}

main().catch((error: unknown) => {
  console.error(error instanceof HarnessError.ToolRejected ? `${error._tag}: ${error.message}` : error)
  process.exitCode = 1
})
