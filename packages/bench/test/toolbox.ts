/**
 * The snapshot the bench tests time: `add` (a JavaScript tool), `twice` (a composed one: it calls
 * `add` through `harness.callTool`) and `fails` (always throws).
 */
import type { JitHarnessSnapshot } from "@jitbox/core"
import { DOMParser } from "@xmldom/xmldom"

const addParameters = { type: "object", properties: { left: { type: "integer" }, right: { type: "integer" } }, required: ["left", "right"] }

export const toolbox: JitHarnessSnapshot.JitHarnessSnapshot = {
  format_version: 1,
  tools: [
    {
      name: "add",
      language: "javascript",
      entrypoint: "add",
      source: `export const add = tool({ description: "Add two integers.", guidelines: "Use for integer addition.",
  parameters: ${JSON.stringify(addParameters)} }, ({ left, right }) => left + right)\n`
    },
    {
      name: "twice",
      language: "javascript",
      entrypoint: "twice",
      source: `export const twice = tool({ description: "Adds both numbers doubled, with add.", guidelines: "Use in tests." },
  async ({ left, right }) => await harness.callTool("add", { left: 2 * left, right: 2 * right }))\n`
    },
    {
      name: "fails",
      language: "javascript",
      entrypoint: "fails",
      source: `export const fails = tool({ description: "Always throws.", guidelines: "Never use." }, () => { throw new RangeError("out of range on purpose") })\n`
    }
  ],
  text_tools: [],
  base_tools: [],
  unloaded_tools: []
}

/** Parses `text` as XML; throws on any error or warning of the parser. */
export const parseXml = (text: string) => {
  const problems: Array<string> = []
  const document = new DOMParser({ onError: (level, message) => void problems.push(`${level}: ${message}`) }).parseFromString(text, "image/svg+xml")
  if (problems.length > 0) throw new Error(`not well-formed XML:\n${problems.join("\n")}`)
  return document
}

/** Elements of `document` named `tag` whose class is `className`. */
export const elements = (document: ReturnType<typeof parseXml>, tag: string, className: string) =>
  Array.from(document.getElementsByTagName(tag)).filter((element) => element.getAttribute("class") === className)
