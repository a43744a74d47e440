/**
 * A real HTTP server on 127.0.0.1 (port 0) that speaks the three wire protocols the providers use:
 * `POST /v1/chat/completions`, `POST /v1/responses` and `POST /v1/messages`. It records every
 * request (method, path, headers, parsed JSON body) and answers from a per-test script: each
 * scripted reply is used once, in order, per path. A reply can be a protocol body exactly like the
 * real API returns, an error with its status and error body, or a hang (no answer at all) for
 * timeout tests. A request with no scripted reply gets a 500 that says so (and asks not to be
 * retried), so a test that sends more than it scripted fails loudly.
 *
 * The SDKs talk to it over HTTP exactly as they would to the real endpoints.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/** One request as the server received it. */
export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  /** The parsed JSON body (the raw text when it was not JSON). */
  readonly body: any
}

/** What the server answers to one request. */
export type Reply =
  | {
    readonly _tag: "Json"
    readonly status: number
    readonly body: unknown
    readonly headers?: Readonly<Record<string, string>> | undefined
  }
  | { readonly _tag: "Text"; readonly status: number; readonly body: string; readonly contentType: string }
  | { readonly _tag: "Hang" }

export interface WireServer {
  /** `http://127.0.0.1:<port>`, without a path. */
  readonly url: string
  /** Every request received so far, in arrival order. */
  readonly requests: ReadonlyArray<RecordedRequest>
  /** The recorded JSON bodies sent to one path. */
  readonly bodies: (path: string) => Array<any>
  /** Queues replies for a path; each is used once, in order. */
  readonly script: (path: string, ...replies: ReadonlyArray<Reply>) => void
  /** Completes once at least `count` requests have arrived. */
  readonly received: (count: number) => Effect.Effect<void>
  /** Completes once the clients have closed at least `count` connections the server left hanging. */
  readonly abandoned: (count: number) => Effect.Effect<void>
}

export const chatPath = "/v1/chat/completions"
export const responsesPath = "/v1/responses"
export const messagesPath = "/v1/messages"

const send = (response: http.ServerResponse, reply: Exclude<Reply, { _tag: "Hang" }>): void => {
  if (reply._tag === "Json") {
    const text = JSON.stringify(reply.body)
    response.writeHead(reply.status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
      ...reply.headers
    })
    response.end(text)
  } else {
    response.writeHead(reply.status, { "content-type": reply.contentType, "content-length": Buffer.byteLength(reply.body) })
    response.end(reply.body)
  }
}

/** Starts the server for the current scope; closing the scope closes it, hanging connections included. */
export const make: Effect.Effect<WireServer, never, Scope.Scope> = Effect.gen(function*() {
  const requests: Array<RecordedRequest> = []
  const scripts = new Map<string, Array<Reply>>()
  let hangsAbandoned = 0
  const waiters: Array<{ readonly ready: () => boolean; readonly resume: () => void }> = []
  const wake = (): void => {
    for (const waiter of waiters.filter((waiter) => waiter.ready())) {
      waiters.splice(waiters.indexOf(waiter), 1)
      waiter.resume()
    }
  }
  const until = (ready: () => boolean) =>
    Effect.async<void>((resume) => {
      if (ready()) return resume(Effect.void)
      waiters.push({ ready, resume: () => resume(Effect.void) })
    })
  const server = http.createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      let body: unknown = text
      try {
        body = text === "" ? undefined : JSON.parse(text)
      } catch {
        // keep the raw text: the assertion on it will show what arrived
      }
      const path = (request.url ?? "/").split("?")[0]!
      requests.push({ method: request.method ?? "", path, headers: request.headers, body })
      wake()
      const reply = scripts.get(path)?.shift()
      if (reply === undefined) {
        send(response, {
          _tag: "Json",
          status: 500,
          headers: { "x-should-retry": "false" },
          body: { error: { message: `WireServer: no scripted reply for ${request.method} ${path}`, type: "test_error" } }
        })
      } else if (reply._tag === "Hang") {
        response.on("close", () => {
          hangsAbandoned++
          wake()
        })
      } else {
        send(response, reply)
      }
    })
  })
  const port = yield* Effect.acquireRelease(
    Effect.async<number>((resume) => {
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
    }),
    () =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    bodies: (path) => requests.filter((request) => request.path === path).map((request) => request.body),
    script: (path, ...replies) => {
      const queue = scripts.get(path) ?? []
      queue.push(...replies)
      scripts.set(path, queue)
    },
    received: (count) => until(() => requests.length >= count),
    abandoned: (count) => until(() => hangsAbandoned >= count)
  }
})

// ---------------------------------------------------------------------------------------------
// Replies

/** Never answers: the connection stays open until the client gives up or the server closes. */
export const hang: Reply = { _tag: "Hang" }

/** A 200 (or other status) JSON reply. */
export const json = (body: unknown, status = 200, headers?: Readonly<Record<string, string>>): Reply => ({
  _tag: "Json",
  status,
  body,
  headers
})

/** Both SDKs read `retry-after-ms`, so a retried reply carries a 1 ms wait instead of the default backoff. */
export const retryFast = { "retry-after-ms": "1" } as const

let sequence = 0
const nextId = (prefix: string): string => `${prefix}${(++sequence).toString(36).padStart(24, "0")}`
const created = 1_764_000_000

export interface FunctionCall {
  readonly id: string
  readonly name: string
  /** The argument text exactly as the model wrote it. */
  readonly arguments: string
}

/** Bodies of `POST /v1/chat/completions`, as the OpenAI API returns them. */
export const chat = {
  completion: (message: {
    readonly content: string | null
    readonly toolCalls?: ReadonlyArray<FunctionCall>
  }, usage = { prompt: 82, completion: 17 }): Reply =>
    json({
      id: nextId("chatcmpl-"),
      object: "chat.completion",
      created,
      model: "gpt-4.1-2025-04-14",
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: message.content,
          ...(message.toolCalls === undefined ? {} : {
            tool_calls: message.toolCalls.map((call) => ({
              id: call.id,
              type: "function",
              function: { name: call.name, arguments: call.arguments }
            }))
          }),
          refusal: null,
          annotations: []
        },
        logprobs: null,
        finish_reason: message.toolCalls === undefined ? "stop" : "tool_calls"
      }],
      usage: {
        prompt_tokens: usage.prompt,
        completion_tokens: usage.completion,
        total_tokens: usage.prompt + usage.completion,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: {
          reasoning_tokens: 0,
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0
        }
      },
      service_tier: "default",
      system_fingerprint: "fp_3f58d112f7"
    }),
  text: (content: string): Reply => chat.completion({ content }),
  toolCalls: (...calls: ReadonlyArray<FunctionCall>): Reply => chat.completion({ content: null, toolCalls: calls })
}

/** Bodies of `POST /v1/responses`, as the OpenAI API returns them. */
export const responses = {
  response: (output: ReadonlyArray<unknown>, options: {
    readonly status?: string
    readonly error?: { readonly code: string; readonly message: string } | null
    readonly usage?: { readonly input: number; readonly output: number }
  } = {}): Reply => {
    const usage = options.usage ?? { input: 36, output: 87 }
    return json({
      id: nextId("resp_"),
      object: "response",
      created_at: created,
      status: options.status ?? "completed",
      background: false,
      error: options.error ?? null,
      incomplete_details: null,
      instructions: null,
      max_output_tokens: null,
      model: "gpt-5.4-2026-03-05",
      output,
      parallel_tool_calls: true,
      previous_response_id: null,
      reasoning: { effort: "none", summary: null },
      service_tier: "default",
      store: true,
      temperature: 1,
      text: { format: { type: "text" }, verbosity: "medium" },
      tool_choice: "auto",
      tools: [],
      top_p: 1,
      truncation: "disabled",
      usage: {
        input_tokens: usage.input,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: usage.output,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: usage.input + usage.output
      },
      user: null,
      metadata: {}
    })
  },
  message: (text: string) => ({
    id: nextId("msg_"),
    type: "message",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text, annotations: [], logprobs: [] }]
  }),
  functionCall: (call: FunctionCall) => ({
    id: nextId("fc_"),
    type: "function_call",
    status: "completed",
    call_id: call.id,
    name: call.name,
    arguments: call.arguments
  }),
  toolSearchCall: (query: string) => ({
    id: nextId("tsc_"),
    type: "tool_search_call",
    call_id: null,
    execution: "server",
    status: "completed",
    arguments: { query }
  }),
  reasoning: () => ({ id: nextId("rs_"), type: "reasoning", summary: [] }),
  text: (text: string): Reply => responses.response([responses.message(text)]),
  functionCalls: (...calls: ReadonlyArray<FunctionCall>): Reply => responses.response(calls.map(responses.functionCall))
}

/** The OpenAI error body: `{"error": {"message", "type", "param", "code"}}`. */
export const openAIError = (
  status: number,
  message: string,
  options: { readonly type?: string; readonly headers?: Readonly<Record<string, string>> } = {}
): Reply =>
  json(
    {
      error: {
        message,
        type: options.type ?? (status === 429 ? "rate_limit_exceeded" : status >= 500 ? "server_error" : "invalid_request_error"),
        param: null,
        code: null
      }
    },
    status,
    { "x-request-id": nextId("req_"), ...options.headers }
  )

/** Bodies of `POST /v1/messages`, as the Anthropic API returns them. */
export const anthropic = {
  message: (content: ReadonlyArray<unknown>, options: {
    readonly stopReason?: string
    readonly usage?: { readonly input: number; readonly output: number; readonly cacheRead?: number }
  } = {}): Reply => {
    const usage = options.usage ?? { input: 2095, output: 503 }
    return json({
      id: nextId("msg_01"),
      type: "message",
      role: "assistant",
      model: "claude-sonnet-5-5-20261020",
      content,
      stop_reason: options.stopReason ?? (content.some((block) => (block as { type: string }).type === "tool_use")
        ? "tool_use"
        : "end_turn"),
      stop_sequence: null,
      usage: {
        input_tokens: usage.input,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: usage.cacheRead ?? 0,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        output_tokens: usage.output,
        service_tier: "standard"
      }
    }, 200, { "request-id": nextId("req_01") })
  },
  textBlock: (text: string) => ({ type: "text", text }),
  toolUseBlock: (id: string, name: string, input: unknown) => ({ type: "tool_use", id, name, input }),
  text: (text: string): Reply => anthropic.message([anthropic.textBlock(text)])
}

/** The Anthropic error body: `{"type": "error", "error": {"type", "message"}, "request_id"}`. */
export const anthropicError = (
  status: number,
  message: string,
  options: { readonly type?: string; readonly headers?: Readonly<Record<string, string>> } = {}
): Reply => {
  const requestId = nextId("req_01")
  const type = options.type ??
    (status === 429
      ? "rate_limit_error"
      : status === 529
      ? "overloaded_error"
      : status >= 500
      ? "api_error"
      : status === 401
      ? "authentication_error"
      : "invalid_request_error")
  return json({ type: "error", error: { type, message }, request_id: requestId }, status, {
    "request-id": requestId,
    ...options.headers
  })
}
