/**
 * The eleven model-facing management tools as data: name, tier, description and the JSON Schema
 * of their arguments. The schemas are written by hand and kept compact (no `title`, no `anyOf`
 * for optionals, no `$schema`): an optional argument is simply absent from `required`. They are
 * what the model sees and what the harness validates the model's arguments against, so every
 * token counts on every request. Each rule the model must know lives in exactly one place:
 * here when it concerns one tool, in `Guidance` when it concerns several.
 *
 * Descriptions of control tools never name an inspection tool, because Hidden exposure sends the
 * control tools alone and must not name the inspection tier anywhere.
 *
 * @since 0.1.0
 */
import type { JsonSchema } from "./JsonSchema.js"

/**
 * The control loop builds, changes and lists tools; the inspection tier reads retained details.
 *
 * @since 0.1.0
 * @category models
 */
export type ManagementToolTier = "control" | "inspection"

/**
 * The reserved names, in the order the tools are presented.
 *
 * @since 0.1.0
 * @category models
 */
export type ManagementToolName =
  | "create_tool"
  | "update_tool"
  | "unload_tool"
  | "load_tool"
  | "list_tools"
  | "inspect_tool"
  | "read_tool_source"
  | "read_tool_schema"
  | "inspect_tool_stats"
  | "inspect_tool_calls"
  | "inspect_tool_errors"

/**
 * One management tool as the model sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ManagementTool {
  readonly name: ManagementToolName
  readonly tier: ManagementToolTier
  readonly description: string
  readonly parameters: JsonSchema
}

const deepFreeze = <A>(value: A): A => {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const child of Object.values(value)) deepFreeze(child)
  }
  return value
}

const string = (description?: string): JsonSchema =>
  description === undefined ? { type: "string" } : { type: "string", description }

const integer = (minimum: number, maximum?: number, defaultValue?: number): JsonSchema => ({
  type: "integer",
  minimum,
  ...(maximum === undefined ? {} : { maximum }),
  ...(defaultValue === undefined ? {} : { default: defaultValue })
})

const object = (properties: Record<string, JsonSchema>, required: ReadonlyArray<string> = []): JsonSchema =>
  required.length === 0 ? { type: "object", properties } : { type: "object", properties, required }

const name = string()
const offset = integer(0)
const limit = (defaultValue: number) => integer(1, 100, defaultValue)
const maxChars = (defaultValue: number) => integer(1, 4000, defaultValue)

const fileMap: JsonSchema = { type: "object", additionalProperties: { type: "string" } }

const exampleList: JsonSchema = {
  type: "array",
  minItems: 1,
  maxItems: 8,
  items: object({ input: { type: "object" }, expected_output: {} }, ["input", "expected_output"])
}

const describe = (schema: JsonSchema, description: string): JsonSchema => ({ ...schema, description })

/**
 * The management tools in presentation order: the six control-loop tools, then the five
 * inspection tools (MGMT-01, MGMT-16).
 *
 * @since 0.1.0
 * @category constants
 */
export const managementTools: ReadonlyArray<ManagementTool> = deepFreeze([
  {
    name: "create_tool",
    tier: "control",
    description:
      "Create a code tool or a text tool (a Markdown procedure, read by calling it).\n" +
      "Code: source is the entry module (index.ts, index.js; __init__.py in Python) with tool, ToolExecutionMode and harness in scope. Export the entry point by name:\n" +
      "export const twice = tool({ description, guidelines, parameters }, async ({ value }) => harness.callTool(\"add\", { left: value, right: value }))\n" +
      "guidelines is non-empty; parameters is a JSON Schema. harness.callTool returns another tool's value to your code only. Return JSON-friendly values. " +
      "Python: @tool(guidelines=...) on a typed function with a docstring; compose with await harness.call_tool(name, **args). " +
      "Bash: JSON arguments on stdin, one JSON value on stdout; no composition. " +
      "C#: static string Run(string inputJson).\n" +
      "Module code runs now, so load errors surface here; success means loaded, not working.",
    parameters: object({
      source: string("Entry module, or the Markdown of a text tool."),
      kind: { type: "string", enum: ["code", "text"], default: "code" },
      name: string("Required for text; code defaults to entrypoint."),
      entrypoint: string("Exported name of the tool(...) value; required for code."),
      description: string("Short selection hint; required for text."),
      language: { type: "string", enum: ["typescript", "javascript", "python", "bash", "csharp"], default: "typescript" },
      files: describe(
        fileMap,
        "Other modules: relative path → source, imported relatively at top level. At most 32 files of 200,000 characters, entry included; path segments are identifiers."
      ),
      guidelines: string("Bash and C#: when to use the tool."),
      parameters: { type: "object", description: "Bash and C#: JSON Schema of the arguments." },
      examples: describe(exampleList, "Run before the tool is ready; each output must deep-equal expected_output.")
    }, ["source"])
  },
  {
    name: "update_tool",
    tier: "control",
    description:
      "Change a code or text tool; fields as in create_tool. Everything sent becomes one new version, and on failure the old one stays. Files not sent are kept. Kind and name never change; an unloaded tool stays unloaded.",
    parameters: object({
      name,
      source: string(),
      markdown: string("Text tools; source also works."),
      files: fileMap,
      remove: { type: "array", items: { type: "string" }, description: "Paths to delete." },
      entrypoint: string(),
      description: string("Omit to keep it."),
      guidelines: string(),
      parameters: { type: "object" },
      examples: exampleList
    }, ["name"])
  },
  {
    name: "unload_tool",
    tier: "control",
    description: "Hide a tool from calls, keeping its source and name.",
    parameters: object({ name }, ["name"])
  },
  {
    name: "load_tool",
    tier: "control",
    description: "Restore an unloaded tool.",
    parameters: object({ name }, ["name"])
  },
  {
    name: "list_tools",
    tier: "control",
    description: "List tools: names, origins, states and description previews (200 characters).",
    parameters: object({ offset, limit: limit(20) })
  },
  {
    name: "inspect_tool",
    tier: "control",
    description:
      "Read a definition: description preview (500 characters), parameters and package file sizes. Oversized parameters are replaced by parameters_omitted and parameters_chars.",
    parameters: object({ name }, ["name"])
  },
  {
    name: "read_tool_source",
    tier: "inspection",
    description: "Read an exact page of one file of a code tool, or of a text tool's body. Base tools have no source.",
    parameters: object({
      name,
      path: string("Defaults to the entry module."),
      offset,
      max_chars: maxChars(2000)
    }, ["name"])
  },
  {
    name: "read_tool_schema",
    tier: "inspection",
    description: "Read exact pages of a tool's parameters JSON Schema, for definitions with parameters_omitted.",
    parameters: object({ name, offset, max_chars: maxChars(2000) }, ["name"])
  },
  {
    name: "inspect_tool_stats",
    tier: "inspection",
    description: "Read one tool's lifetime aggregate measurements.",
    parameters: object({ name }, ["name"])
  },
  {
    name: "inspect_tool_calls",
    tier: "inspection",
    description: "Read one tool's recent calls: status, duration, sizes, and caller or error type when they apply.",
    parameters: object({ name, offset, limit: limit(5) }, ["name"])
  },
  {
    name: "inspect_tool_errors",
    tier: "inspection",
    description:
      "Read recent error message previews with occurrence counts, optionally for one tool. Read-only. Raise max_chars only when a preview is not enough; lower limit for longer messages.",
    parameters: object({ name, offset, limit: limit(3), max_chars: maxChars(512) })
  }
])

/**
 * Every reserved management name, in every exposure mode (MGMT-13).
 *
 * @since 0.1.0
 * @category constants
 */
export const managementToolNames: ReadonlySet<string> = new Set(managementTools.map((tool) => tool.name))

/**
 * The names of the inspection tier (MGMT-16).
 *
 * @since 0.1.0
 * @category constants
 */
export const inspectionToolNames: ReadonlySet<string> = new Set(
  managementTools.filter((tool) => tool.tier === "inspection").map((tool) => tool.name)
)

/**
 * The management tools whose success changes the toolbox (and so the tool list): a session host
 * stores the toolbox before it answers them, an MCP server announces `list_changed` after them.
 *
 * @since 0.1.0
 * @category constants
 */
export const changingToolNames: ReadonlySet<string> = new Set(["create_tool", "update_tool", "unload_tool", "load_tool", "load_from_catalog"])

/** Whether a call of the management tool `name` changes the toolbox when it succeeds. @since 0.1.0 @category predicates */
export const changesToolbox = (name: string): boolean => changingToolNames.has(name)

/**
 * @since 0.1.0
 * @category refinements
 */
export const isManagementToolName = (name: string): name is ManagementToolName => managementToolNames.has(name)
