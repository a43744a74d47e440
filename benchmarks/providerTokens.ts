/**
 * Per-request tokens of what each provider really sends for the management tier: a real agent
 * (JitHarnessExtension, no application tools) talks to a local HTTP server on 127.0.0.1 that
 * records each request body and answers with a final text. For every protocol and inspection
 * exposure mode it counts, with the same cl100k_base tokenizer as `tokenCount.ts`:
 *
 * - `tokens`: tokens(JSON of the tools in context) + tokens(instructions), where the tools in
 *   context are those without `defer_loading: true` (the scope of EXP-10 and of `tokens.json`);
 * - `wire_tokens`: the same with every definition sent, deferred ones included.
 *
 * The instructions are where each protocol puts them: Responses `instructions`, Chat Completions
 * the first `system` message, Anthropic Messages `system`. Writes `results/provider-tokens.json`.
 * Offline. Run with `pnpm bench:provider-tokens`.
 *
 * @since 0.1.0
 */
import { mkdirSync, writeFileSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import {
  AnthropicMessages,
  createAgent,
  JitHarnessExtension,
  type ModelProvider,
  OpenAIChatCompletions,
  OpenAIResponses
} from "@jitbox/agent"
import { countTokens, inContext, modes } from "./tokenCount.js"
import type { WireTool } from "./wireTools.js"

const results = fileURLToPath(new URL("./results/", import.meta.url))

/** A final text answer in each protocol's response shape. */
const answers: Record<string, unknown> = {
  "/v1/responses": {
    id: "resp_1",
    object: "response",
    status: "completed",
    output: [{ id: "msg_1", type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "ok", annotations: [] }] }],
    usage: { input_tokens: 0, output_tokens: 0 }
  },
  "/v1/chat/completions": {
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 0,
    model: "gpt-4.1",
    choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
  },
  "/v1/messages": {
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "claude-sonnet-5-5",
    content: [{ type: "text", text: "ok" }],
    stop_reason: "end_turn",
    usage: { input_tokens: 0, output_tokens: 0 }
  }
}

const bodies: Array<any> = []
const server = http.createServer((request, response) => {
  const chunks: Array<Buffer> = []
  request.on("data", (chunk: Buffer) => chunks.push(chunk))
  request.on("end", () => {
    bodies.push(JSON.parse(Buffer.concat(chunks).toString("utf8")))
    const answer = JSON.stringify(answers[(request.url ?? "").split("?")[0]!] ?? { error: { message: "unknown path" } })
    response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(answer) })
    response.end(answer)
  })
})
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

interface Protocol {
  readonly provider: () => ModelProvider.ModelProvider
  readonly tools: (body: any) => ReadonlyArray<WireTool>
  readonly instructions: (body: any) => string
}

const protocols = {
  responses: {
    provider: () => OpenAIResponses.make({ model: "gpt-5.4", apiKey: "offline", baseURL: `${url}/v1`, maxRetries: 0 }),
    tools: (body) => body.tools ?? [],
    instructions: (body) => body.instructions ?? ""
  },
  chat_completions: {
    provider: () => OpenAIChatCompletions.make({ model: "gpt-4.1", apiKey: "offline", baseURL: `${url}/v1`, maxRetries: 0 }),
    tools: (body) => body.tools ?? [],
    instructions: (body) => body.messages.find((m: { role: string }) => m.role === "system")?.content ?? ""
  },
  anthropic_messages: {
    provider: () => AnthropicMessages.make({ model: "claude-sonnet-5-5", apiKey: "offline", baseURL: url, maxRetries: 0 }),
    tools: (body) => body.tools ?? [],
    instructions: (body) => body.system ?? ""
  }
} satisfies Record<string, Protocol>

type Table = Record<keyof typeof protocols, Record<typeof modes[number], number>>
const tokens = {} as Table
const wireTokens = {} as Table

try {
  for (const [name, protocol] of Object.entries(protocols) as Array<[keyof typeof protocols, Protocol]>) {
    tokens[name] = {} as Table[typeof name]
    wireTokens[name] = {} as Table[typeof name]
    for (const mode of modes) {
      const jit = new JitHarnessExtension({ inspectionTools: mode })
      const agent = await createAgent(protocol.provider(), { config: { sessionId: "bench" }, extensions: [jit] })
      const before = bodies.length
      await agent.run("Hello.")
      await jit.forgetSession("bench")
      if (bodies.length !== before + 1) throw new Error(`${name} ${mode}: expected one request, got ${bodies.length - before}`)
      const body = bodies[bodies.length - 1]
      const instructions = countTokens(protocol.instructions(body))
      tokens[name][mode] = countTokens(JSON.stringify(inContext(protocol.tools(body)))) + instructions
      wireTokens[name][mode] = countTokens(JSON.stringify(protocol.tools(body))) + instructions
    }
  }
} finally {
  server.close()
}

const report = {
  tokenizer: "cl100k_base (js-tiktoken 1.0.21)",
  counted:
    "tokens(JSON.stringify(tools in context)) + tokens(instructions) of the first request a JitHarnessExtension agent " +
    "without application tools sends; wire_tokens also counts definitions sent with defer_loading: true",
  tokens,
  wire_tokens: wireTokens
}
mkdirSync(results, { recursive: true })
writeFileSync(`${results}provider-tokens.json`, `${JSON.stringify(report, null, 2)}\n`)
for (const name of Object.keys(protocols) as Array<keyof typeof protocols>) {
  console.log(name.padEnd(19), modes.map((mode) => `${mode} ${tokens[name][mode]} (wire ${wireTokens[name][mode]})`).join("  "))
}
