/**
 * A real agent (JitHarnessExtension + InMemoryMessageAccumulator) against the recording wire
 * server, on each protocol and in each inspection exposure mode (D-18, EXP-03..08, GDN-11): the
 * server first asks for create_tool, then calls the created tool twice (once with bad arguments),
 * then answers. The assertions read the JSON the provider actually sent.
 */
import {
  AnthropicMessages,
  createAgent,
  InMemoryMessageAccumulator,
  JitHarnessExtension,
  type ModelProvider,
  OpenAIChatCompletions,
  OpenAIResponses
} from "@jitbox/agent"
import { Exposure, InspectionToolExposure, ManagementTools } from "@jitbox/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { add, twiceSource } from "./agentFixtures.js"
import * as WireServer from "./WireServer.js"

interface ToolResult {
  readonly id: string
  readonly content: string
  readonly isError?: boolean
}

interface Protocol {
  readonly name: "responses" | "chat_completions" | "anthropic_messages"
  readonly path: string
  readonly provider: (server: WireServer.WireServer) => ModelProvider.ModelProvider
  readonly toolCalls: (...calls: ReadonlyArray<{ id: string; name: string; args: unknown }>) => WireServer.Reply
  readonly text: (text: string) => WireServer.Reply
  /** The names in the request's tools array (hosted tools by their type). */
  readonly toolNames: (body: any) => Array<string>
  /** The function definitions of the request, by name. */
  readonly definitions: (body: any) => Map<string, any>
  readonly instructions: (body: any) => string
  readonly toolResults: (body: any) => Array<ToolResult>
}

const protocols: ReadonlyArray<Protocol> = [
  {
    name: "responses",
    path: WireServer.responsesPath,
    provider: (server) => OpenAIResponses.make({ model: "gpt-5.4", apiKey: "sk-test", baseURL: `${server.url}/v1`, maxRetries: 0 }),
    toolCalls: (...calls) =>
      WireServer.responses.functionCalls(...calls.map((c) => ({ id: c.id, name: c.name, arguments: JSON.stringify(c.args) }))),
    text: WireServer.responses.text,
    toolNames: (body) => body.tools.map((t: any) => t.name ?? t.type),
    definitions: (body) => new Map(body.tools.filter((t: any) => t.type === "function").map((t: any) => [t.name, t])),
    instructions: (body) => body.instructions,
    toolResults: (body) =>
      body.input.filter((item: any) => item.type === "function_call_output").map((item: any) => ({ id: item.call_id, content: item.output }))
  },
  {
    name: "chat_completions",
    path: WireServer.chatPath,
    provider: (server) => OpenAIChatCompletions.make({ model: "gpt-4.1", apiKey: "sk-test", baseURL: `${server.url}/v1`, maxRetries: 0 }),
    toolCalls: (...calls) => WireServer.chat.toolCalls(...calls.map((c) => ({ id: c.id, name: c.name, arguments: JSON.stringify(c.args) }))),
    text: WireServer.chat.text,
    toolNames: (body) => body.tools.map((t: any) => t.function.name),
    definitions: (body) => new Map(body.tools.map((t: any) => [t.function.name, t])),
    instructions: (body) => {
      const [system] = body.messages
      assert.strictEqual(system.role, "system")
      return system.content
    },
    toolResults: (body) =>
      body.messages.filter((m: any) => m.role === "tool").map((m: any) => ({ id: m.tool_call_id, content: m.content }))
  },
  {
    name: "anthropic_messages",
    path: WireServer.messagesPath,
    provider: (server) => AnthropicMessages.make({ model: "claude-sonnet-5-5", apiKey: "sk-ant-test", baseURL: server.url, maxRetries: 0 }),
    toolCalls: (...calls) => WireServer.anthropic.message(calls.map((c) => WireServer.anthropic.toolUseBlock(c.id, c.name, c.args))),
    text: WireServer.anthropic.text,
    toolNames: (body) => body.tools.map((t: any) => t.name),
    definitions: (body) => new Map(body.tools.map((t: any) => [t.name, t])),
    instructions: (body) => body.system,
    toolResults: (body) =>
      body.messages.flatMap((m: any) =>
        m.role === "user" && Array.isArray(m.content)
          ? m.content.filter((b: any) => b.type === "tool_result").map((b: any) => ({ id: b.tool_use_id, content: b.content, isError: b.is_error }))
          : []
      )
  }
]

const allManagement = ManagementTools.managementTools.map((t) => t.name)
const inspection = [...ManagementTools.inspectionToolNames]
const control = allManagement.filter((name) => !ManagementTools.inspectionToolNames.has(name))
const modes = [InspectionToolExposure.Always, InspectionToolExposure.Deferred, InspectionToolExposure.Hidden]

/** Runs the three-turn conversation and returns the recorded bodies and the run's answer. */
const converse = (protocol: Protocol, mode: InspectionToolExposure) =>
  Effect.gen(function*() {
    const server = yield* WireServer.make
    server.script(
      protocol.path,
      protocol.toolCalls({ id: "call_create", name: "create_tool", args: { entrypoint: "twice", source: twiceSource } }),
      protocol.toolCalls(
        { id: "call_twice", name: "twice", args: { value: 21 } },
        { id: "call_bad", name: "twice", args: { value: "twenty-one" } }
      ),
      protocol.text("42")
    )
    const jit = new JitHarnessExtension({ inspectionTools: mode })
    const agent = yield* Effect.promise(() =>
      createAgent(protocol.provider(server), {
        config: { sessionId: "wire" },
        tools: [add],
        extensions: [new InMemoryMessageAccumulator(), jit]
      })
    )
    const result = yield* Effect.promise(() => agent.run("Build twice and double 21."))
    yield* Effect.promise(() => jit.forgetSession("wire"))
    return { bodies: server.bodies(protocol.path), content: result.content }
  })

describe("providers through the agent", () => {
  for (const protocol of protocols) {
    describe(protocol.name, () => {
      for (const mode of modes) {
        it.scopedLive(`${mode}: sends the management tools of the mode, offers the created tool and feeds results back by call id`, () =>
          Effect.gen(function*() {
            const { bodies, content } = yield* converse(protocol, mode)
            assert.strictEqual(content, "42")
            assert.strictEqual(bodies.length, 3)
            const [first, second, third] = bodies

            // Which management tools are sent (EXP-03..06), with the application's add.
            const names = protocol.toolNames(first)
            const expected = mode === "hidden" ? control : allManagement
            const deferred = protocol.name === "responses" && mode === "deferred"
            assert.sameMembers(names, ["add", ...expected, ...(deferred ? ["tool_search"] : [])])
            assert.notInclude(names, "twice")

            // defer_loading and tool_search only where the provider can defer (EXP-03, EXP-04, EXP-12).
            const definitions = protocol.definitions(first)
            for (const [name, definition] of definitions) {
              if (deferred && ManagementTools.inspectionToolNames.has(name)) {
                assert.strictEqual(definition.defer_loading, true, name)
              } else {
                assert.notProperty(definition, "defer_loading", name)
              }
            }
            if (!deferred) {
              for (const body of bodies) {
                assert.notInclude(JSON.stringify(body.tools), "defer_loading")
                assert.notInclude(JSON.stringify(body.tools), "tool_search")
              }
            }

            // The instructions: a search hint only where one can happen; Hidden never names the tier (EXP-07, GDN-11).
            const instructions = protocol.instructions(first)
            assert.strictEqual(
              instructions,
              `${Exposure.exposureFor(mode, protocol.name).instructions}\n\nTool guidelines:\n- add: Use for integer addition.`
            )
            if (deferred) assert.match(instructions, /a tool search may be needed/)
            else assert.notMatch(instructions, /tool search/)
            if (mode === "hidden") {
              for (const body of bodies) {
                const text = JSON.stringify(body)
                for (const name of inspection) assert.notInclude(text, name)
              }
            } else {
              for (const name of inspection) assert.include(instructions, name)
            }

            // The created tool is offered from the next request on, with its guidelines.
            assert.include(protocol.toolNames(second), "twice")
            assert.include(protocol.instructions(second), "- twice: Use to add an integer to itself.")
            assert.sameMembers(protocol.toolNames(third), protocol.toolNames(second))

            // Results go back under the ids the model gave its calls.
            const created = protocol.toolResults(second)
            assert.deepStrictEqual(created.map((r) => [r.id, r.content]), [["call_create", "{\"name\":\"twice\",\"status\":\"loaded\"}"]])
            const results = protocol.toolResults(third)
            assert.deepStrictEqual(results.map((r) => r.id), ["call_create", "call_twice", "call_bad"])
            assert.strictEqual(results[1]!.content, "42")
            assert.match(results[2]!.content, /^ValidationError: invalid arguments for 'twice'/)
            if (protocol.name === "anthropic_messages") {
              assert.deepStrictEqual(results.map((r) => r.isError), [false, false, true])
            }
          }))
      }
    })
  }

  it.scopedLive("chat_completions: unparsable arguments are answered with an error message under the call's id", () =>
    Effect.gen(function*() {
      const server = yield* WireServer.make
      server.script(
        WireServer.chatPath,
        WireServer.chat.toolCalls({ id: "call_broken", name: "add", arguments: "{\"left\": 1," }),
        WireServer.chat.text("Sorry.")
      )
      const agent = yield* Effect.promise(() =>
        createAgent(protocols[1]!.provider(server), {
          config: { sessionId: "wire" },
          tools: [add],
          extensions: [new InMemoryMessageAccumulator(), new JitHarnessExtension()]
        })
      )
      const result = yield* Effect.promise(() => agent.run("Add."))
      assert.strictEqual(result.content, "Sorry.")
      const second = server.bodies(WireServer.chatPath)[1]
      const assistant = second.messages.find((m: any) => m.role === "assistant")
      assert.strictEqual(assistant.tool_calls[0].function.arguments, "{\"left\": 1,")
      const answer = second.messages.find((m: any) => m.role === "tool")
      assert.strictEqual(answer.tool_call_id, "call_broken")
      assert.match(answer.content, /^InvalidArguments: the arguments are not valid JSON/)
    }))
})
