/**
 * Tool-definition contracts of reference 003 (JT-CTR-01..11, JT-LIM-01, D-20): a second way to
 * create a code tool. v1 is exactly four strings; v2 adds input and output schemas, 1–8 examples
 * that run before the tool is ready, and `replacesToolId` for an immutable replacement. Each
 * language's entry point (JS `module.exports = async function(toolInput)`, Python
 * `def run(tool_input)`, C# `public static string Run(string inputJson)` on the one public type that
 * declares it, Bash stdin → stdout) is wrapped into an ordinary jitbox package, so the
 * contract tool runs, composes and is measured like any other.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import * as Either from "effect/Either"
import * as ParseIssues from "./ParseIssues.js"
import * as Schema from "effect/Schema"
import { InvalidToolRequest, PackageError } from "./HarnessError.js"
import * as JitPolicy from "./JitPolicy.js"
import type { JsonSchema } from "./JsonSchema.js"
import type { CodeLanguage } from "./ToolOrigin.js"
import type { CreateToolRequest, ToolAck, UpdateToolRequest } from "./ToolRequest.js"
import * as Validator from "./Validator.js"

/** Source limit of a contract (JT-LIM-01): 128 KiB of UTF-8. @since 0.1.0 @category constants */
export const maxSourceBytes = 131_072

/** Size limit of each contract schema (AMB-31, our bound): 64 KiB of compact JSON. @since 0.1.0 @category constants */
export const maxSchemaBytes = 65_536

const Language = Schema.Literal("Python", "PowerShell", "Bash", "C#", "JavaScript")
const Duration = Schema.Literal("short", "long")
const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** @since 0.1.0 @category schemas */
export const ContractV1 = Schema.Struct({
  toolSpecification: Schema.String.pipe(Schema.minLength(1)),
  toolCodeLanguage: Language,
  toolCode: Schema.String.pipe(Schema.minLength(1)),
  toolExpectedDuration: Duration
})

/** @since 0.1.0 @category schemas */
export const ContractV2 = Schema.Struct({
  ...ContractV1.fields,
  inputSchema: JsonObject,
  outputSchema: JsonObject,
  examples: Schema.Array(Schema.Struct({ input: JsonObject, expectedOutput: Schema.Unknown })).pipe(
    Schema.minItems(1),
    Schema.maxItems(8)
  ),
  replacesToolId: Schema.optional(Schema.String)
})

/** @since 0.1.0 @category models */
export type ContractV1 = Schema.Schema.Type<typeof ContractV1>

/** @since 0.1.0 @category models */
export type ContractV2 = Schema.Schema.Type<typeof ContractV2>

/** @since 0.1.0 @category models */
export type Contract = ContractV1 | ContractV2

/** @since 0.1.0 @category refinements */
export const isV2 = (contract: Contract): contract is ContractV2 => "inputSchema" in contract && "examples" in contract

const decoders = {
  1: Schema.decodeUnknownEither(ContractV1, { onExcessProperty: "error" }),
  2: Schema.decodeUnknownEither(ContractV2, { onExcessProperty: "error" })
} as const

const remoteReference = (schema: unknown): string | undefined => {
  if (Array.isArray(schema)) return schema.map(remoteReference).find((found) => found !== undefined)
  if (typeof schema !== "object" || schema === null) return undefined
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$ref" && typeof value === "string" && !value.startsWith("#")) return value
    const nested = remoteReference(value)
    if (nested !== undefined) return nested
  }
  return undefined
}

const checkSchema = (field: string, schema: JsonSchema, mustBeObject: boolean): void => {
  if (mustBeObject && schema.type !== "object") {
    throw new InvalidToolRequest({ reason: "FieldNotAllowed", detail: `${field} must declare "type": "object"` })
  }
  const remote = remoteReference(schema)
  if (remote !== undefined) {
    throw new InvalidToolRequest({ reason: "FieldNotAllowed", detail: `${field} uses the remote reference ${remote}; only local references are supported` })
  }
  if (Buffer.byteLength(JSON.stringify(schema), "utf8") > maxSchemaBytes) {
    throw new InvalidToolRequest({ reason: "OutOfRange", detail: `${field} is larger than ${maxSchemaBytes} bytes` })
  }
}

/**
 * Validates a contract of the given version (exact fields, JT-CTR-01/08/11, JT-LIM-01).
 *
 * @since 0.1.0
 * @category validation
 */
export const decode = (version: 1 | 2, input: unknown): Contract => {
  const result = decoders[version](input)
  if (Either.isLeft(result)) {
    throw new InvalidToolRequest({
      reason: "FieldNotAllowed",
      detail: `not a valid v${version} tool contract: ${ParseIssues.describe(result.left, { root: "(contract)", all: true, limit: Infinity })}`
    })
  }
  const contract = result.right
  if (Buffer.byteLength(contract.toolCode, "utf8") > maxSourceBytes) {
    throw new PackageError({ name: "contract", reason: "SourceTooLarge", detail: `toolCode is larger than ${maxSourceBytes} bytes of UTF-8` })
  }
  if (isV2(contract)) {
    checkSchema("inputSchema", contract.inputSchema, true)
    checkSchema("outputSchema", contract.outputSchema, false)
  }
  return contract
}

/** The jitbox language a contract language runs as; PowerShell has no runner here (D-02). @since 0.1.0 @category getters */
export const languageOf = (contract: Contract): CodeLanguage => {
  const language = JitPolicy.codeLanguagesOf[contract.toolCodeLanguage][0]
  if (language === undefined) {
    throw new PackageError({ name: "contract", reason: "NoRunner", detail: `no runner for ${contract.toolCodeLanguage} on this host` })
  }
  return language
}

/** A stable tool name for a contract that came without one. @since 0.1.0 @category constructors */
export const defaultName = (contract: Contract): string =>
  `jit_${createHash("sha256").update(JSON.stringify([contract.toolCodeLanguage, contract.toolCode, contract.toolSpecification])).digest("hex").slice(0, 10)}`

const entrypoint = "jitbox_contract"

/**
 * The ordinary create request that runs `contract` under `name`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toCreateRequest = (contract: Contract, name: string): CreateToolRequest => {
  const language = languageOf(contract)
  const parameters: JsonSchema = isV2(contract) ? contract.inputSchema : { type: "object" }
  const examples = isV2(contract)
    ? contract.examples.map((example) => ({ input: example.input, expected_output: example.expectedOutput }))
    : undefined
  const description = contract.toolSpecification
  const common = {
    name,
    language,
    entrypoint,
    duration: contract.toolExpectedDuration,
    ...(examples === undefined ? {} : { examples })
  }
  switch (language) {
    case "javascript":
      return {
        ...common,
        source: [
          "const module = { exports: {} }",
          "const exports = module.exports",
          contract.toolCode,
          `export const ${entrypoint} = tool(${JSON.stringify({ description, guidelines: description, parameters })}, async (toolInput) => {`,
          `  if (typeof module.exports !== "function") throw new TypeError("toolCode must set module.exports to a function")`,
          "  return await module.exports(toolInput)",
          "})",
          ""
        ].join("\n")
      }
    case "python":
      return {
        ...common,
        source: [
          contract.toolCode,
          "",
          `@tool(description=${JSON.stringify(description)}, guidelines=${JSON.stringify(description)}, parameters=__import__("json").loads(${JSON.stringify(JSON.stringify(parameters))}))`,
          `def ${entrypoint}(**tool_input):`,
          "    return run(tool_input)",
          ""
        ].join("\n")
      }
    case "csharp":
      // the runtime's Contract.Run finds the one public type of toolCode with a static Run(string)
      return {
        ...common,
        source: [
          contract.toolCode,
          "",
          `public static class ${entrypoint} { public static string Run(string inputJson) { return Jitbox.Contract.Run(inputJson); } }`,
          ""
        ].join("\n"),
        description,
        guidelines: description,
        parameters
      }
    default:
      return { ...common, source: contract.toolCode, description, guidelines: description, parameters }
  }
}

/** What contract creation needs of a harness: its changes and the current version ids. @since 0.1.0 @category models */
export interface ContractTarget {
  readonly create: (request: CreateToolRequest) => Promise<ToolAck>
  readonly update: (request: UpdateToolRequest) => Promise<ToolAck>
  /** The code tool whose current version has `versionId`. */
  readonly toolWithVersion: (versionId: string) => { readonly name: string; readonly language: CodeLanguage } | undefined
  readonly currentVersionId: (name: string) => string
}

/**
 * Creates a code tool from a contract (v1 or v2), or, with v2 `replacesToolId`, replaces the tool
 * whose current version has that id (a repair). Answers the tool's name and its new version id,
 * the `tool_id` (D-03). Run it as one toolbox change.
 *
 * @since 0.1.0
 * @category constructors
 */
export const create = async (
  target: ContractTarget,
  input: unknown,
  options: { readonly contractVersion?: 1 | 2 | undefined; readonly name?: string | undefined }
): Promise<ToolAck & { readonly tool_id: string }> => {
  const contract = decode(options.contractVersion ?? 1, input)
  const language = languageOf(contract)
  if (isV2(contract)) {
    const validate = Validator.compile(contract.outputSchema, "draft-07")
    contract.examples.forEach((example, index) => {
      const problems = validate(example.expectedOutput)
      if (problems !== undefined) {
        throw new InvalidToolRequest({ reason: "FieldNotAllowed", detail: `examples.${index}.expectedOutput does not match outputSchema: ${problems}` })
      }
    })
  }
  const replaces = isV2(contract) ? contract.replacesToolId : undefined
  let ack: ToolAck
  if (replaces === undefined) {
    ack = await target.create(toCreateRequest(contract, options.name ?? defaultName(contract)))
  } else {
    const replaced = target.toolWithVersion(replaces)
    if (replaced === undefined) {
      throw new InvalidToolRequest({ reason: "UnknownPath", detail: `no current tool version has the id ${replaces}` })
    }
    if (replaced.language !== language) {
      throw new InvalidToolRequest({ name: replaced.name, reason: "FieldNotAllowed", detail: "a replacement keeps the language of the tool it replaces" })
    }
    const request = toCreateRequest(contract, replaced.name)
    ack = await target.update({
      name: replaced.name,
      source: request.source,
      entrypoint: request.entrypoint,
      ...(request.description === undefined ? {} : { description: request.description, guidelines: request.guidelines, parameters: request.parameters }),
      ...(request.examples === undefined ? {} : { examples: request.examples }),
      ...(request.duration === undefined ? {} : { duration: request.duration })
    })
  }
  return { ...ack, tool_id: target.currentVersionId(ack.name) }
}
