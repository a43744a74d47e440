/**
 * Token benchmark of the management tier (EXP-09, EXP-10, D-12): cl100k_base tokens of the
 * control-tool definitions as sent on the wire plus the instruction block, per exposure mode and
 * protocol. Writes `results/tokens.json` and `results/tokens.md`. Run with `pnpm bench:tokens`.
 *
 * @since 0.1.0
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import {
  countTokens,
  modes,
  payload,
  protocols,
  referenceTable,
  responsesTargets,
  type TokenTable,
  tokenTable
} from "./tokenCount.js"

const results = fileURLToPath(new URL("./results/", import.meta.url))

const label = { always: "Always", deferred: "Deferred (default)", hidden: "Hidden" } as const
const format = (n: number) => n.toLocaleString("en-US")

const markdown = (table: TokenTable): string => {
  const rows = modes.map((mode) =>
    `| ${label[mode]} | ${format(referenceTable.responses[mode])} | ${format(table.responses[mode])} | ` +
    `≤ ${format(responsesTargets[mode])} | ${format(referenceTable.chat_completions[mode])} | ` +
    `${format(table.chat_completions[mode])} |`
  )
  const deferredWire = payload("deferred", "responses")
  const fullWire = countTokens(JSON.stringify(deferredWire.tools)) + countTokens(deferredWire.instructions)
  return [
    "# Management tier tokens per request",
    "",
    "cl100k_base (js-tiktoken 1.0.21), counted as `tokens(JSON.stringify(tools in context)) + tokens(instructions)`: the",
    "management definitions in the provider's wire shape plus the harness instruction block, before tool",
    "guidance and the application's own tools (EXP-10). The reference figures are the ceiling to beat (D-12).",
    "",
    "| Mode | Responses, reference | Responses, jitbox | Responses, target | Chat Completions, reference | Chat Completions, jitbox |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
    ...rows,
    "",
    "Wire shapes: Chat Completions `{\"type\":\"function\",\"function\":{name,description,parameters}}`; Responses",
    "`{\"type\":\"function\",name,description,parameters,\"strict\":false}`, with `\"defer_loading\":true` on deferred",
    "definitions and the hosted `{\"type\":\"tool_search\"}` entry whenever something is deferred.",
    "",
    "Deferred definitions travel in a Responses request but stay out of the model's context until a tool search",
    "loads one, so the Deferred figure counts the `tool_search` entry instead of them. Counting the deferred",
    `definitions too, a Deferred Responses request carries ${format(fullWire)} tokens.`,
    "",
    "Chat Completions and Anthropic Messages ignore deferral and receive every definition, so Deferred costs",
    "there what Always costs; the instruction block mentions a tool search only where one can happen.",
    ""
  ].join("\n")
}

const table = tokenTable()
mkdirSync(results, { recursive: true })
writeFileSync(`${results}tokens.json`, `${JSON.stringify(table, null, 2)}\n`)
writeFileSync(`${results}tokens.md`, markdown(table))
for (const protocol of protocols) {
  console.log(protocol.padEnd(17), modes.map((mode) => `${mode} ${table[protocol][mode]}`).join("  "))
}
