/**
 * The eleven model-facing management tools (MGMT-01..29): the state-changing four answer only
 * `{name, status}`; every query answers within the 8,000-code-point budget with exact paging.
 * They read the same read model and make the same changes as the application API, so there is
 * one code path for each.
 */
import * as CodePoints from "../CodePoints.js"
import { InvalidToolRequest } from "../HarnessError.js"
import type { ProfileRecord } from "../JitHarnessProfile.js"
import { type ManagementToolName, managementTools } from "../ManagementTools.js"
import * as Paging from "../Paging.js"
import * as ResponseBudget from "../ResponseBudget.js"
import type { ToolErrorRecord } from "../ToolErrorReport.js"
import * as ToolRequest from "../ToolRequest.js"
import * as Validator from "../Validator.js"
import type { LiveCall } from "./liveCall.js"
import type { ReadModel } from "./readModel.js"
import type { ManagementEntry, Registry } from "./registry.js"
import type { ToolChanges } from "./toolChanges.js"

/** Catalog description previews (BUD-06). */
export const catalogPreviewChars = 200

/** Definition description previews (BUD-07). */
export const definitionPreviewChars = 500

interface NameArgs {
  readonly name: string
}

interface PageArgs {
  readonly offset?: number
  readonly limit?: number
  readonly max_chars?: number
}

const previewOf = (text: string, limit: number) => CodePoints.preview(text, limit).text

const compactCall = (record: ProfileRecord): Record<string, unknown> => {
  const call: Record<string, unknown> = {
    call_id: record.call_id,
    status: record.status,
    duration_ms: Math.round(record.duration_ms * 1000) / 1000
  }
  if (record.input_chars !== null) call.input_chars = record.input_chars
  if (record.output_chars !== null) call.output_chars = record.output_chars
  if (record.caller_tool_name !== null) call.caller_tool_name = record.caller_tool_name
  if (record.error_type !== null) call.error_type = record.error_type
  return call
}

/** Any tool this harness knows, management tools included: their calls are profiled too (MGMT-19). */
const knownTool = (registry: Registry, name: string) => {
  if (registry.get(name) === undefined) throw registry.notFound(name)
}

/**
 * Shortens the guidelines, then the description preview, until `response` fits the budget: their
 * 500 code points can take six times as much once escaped, next to a list of 32 files.
 */
const fitPreviews = (response: Record<string, unknown>): Record<string, unknown> => {
  for (const key of ["guidelines", "description"]) {
    if (ResponseBudget.fits(response)) break
    const text = response[key]
    if (typeof text !== "string") continue
    const room = ResponseBudget.maxChars - ResponseBudget.measure({ ...response, [key]: "" })
    response[key] = CodePoints.slice(text, 0, ResponseBudget.prefixFitting(text, CodePoints.count(text), Math.max(0, room)))
  }
  return response
}

type ErrorPreview = ReturnType<typeof errorEntry>

const errorEntry = (record: ToolErrorRecord, message: string | null, truncated: boolean) => ({
  tool_name: record.tool_name,
  error_type: record.error_type,
  message,
  ...(truncated ? { message_truncated: true as const } : {}),
  occurrences: record.occurrences,
  last_call_id: record.last_call_id
})

/**
 * A message preview of at most `maxChars` code points that also fits the budget when its entry is
 * alone on a page (the page always keeps one entry): escapes count, so 4,000 quotes or control
 * characters could otherwise take two to six times the budget.
 */
const errorPreview = (record: ToolErrorRecord, maxChars: number, total: number): ErrorPreview => {
  const message = record.message
  if (message === null) return errorEntry(record, null, record.message_truncated)
  // next_offset at its widest: `null`, or an offset with as many digits as the total.
  const alone = { errors: [errorEntry(record, "", true)], total_matches: total, next_offset: total >= 1_000 ? total : null }
  const kept = ResponseBudget.prefixFitting(message, maxChars, ResponseBudget.maxChars - ResponseBudget.measure(alone))
  const text = CodePoints.slice(message, 0, kept)
  return errorEntry(record, text, record.message_truncated || text.length < message.length)
}

type SourceArgs = NameArgs & PageArgs & { readonly path?: string }

const listTools = (read: ReadModel, { limit = 20, offset = 0 }: PageArgs) =>
  Paging.pageItems(read.listTools(), offset, limit, (items, nextOffset) => ({
    tools: items.map((item) => ({
      name: item.name,
      origin: item.origin,
      state: item.state,
      ...(item.description === null ? {} : { description: previewOf(item.description, catalogPreviewChars) })
    })),
    total: read.listTools().length,
    next_offset: nextOffset
  }))

const inspectTool = (read: ReadModel, { name }: NameArgs) => {
  const definition = read.definition(name)
  const response: Record<string, unknown> = {
    name,
    origin: definition.origin,
    state: definition.state
  }
  if (definition.description !== null) response.description = previewOf(definition.description, definitionPreviewChars)
  if (definition.guidelines !== null) response.guidelines = previewOf(definition.guidelines, definitionPreviewChars)
  if (definition.language !== undefined) response.language = definition.language
  if (definition.entrypoint !== undefined) response.entrypoint = definition.entrypoint
  if (definition.state !== "unbound") response.execution_mode = definition.execution_mode
  if (definition.files !== undefined) response.files = definition.files
  if (definition.parameters === null) return fitPreviews(response)
  const withParameters = { ...response, parameters: definition.parameters }
  if (ResponseBudget.fits(withParameters)) return withParameters
  return fitPreviews({
    ...response,
    parameters_omitted: true,
    parameters_chars: ResponseBudget.measure(definition.parameters)
  })
}

const readToolSource = (read: ReadModel, { max_chars = 2_000, name, offset = 0, path }: SourceArgs) => {
  const source = read.source(name)
  if (source.kind === "text") {
    if (path !== undefined) {
      throw new InvalidToolRequest({ name, reason: "UnknownPath", detail: `'${name}' is a text tool; it has no files` })
    }
    return Paging.page(Paging.pageable(source.markdown), offset, max_chars, (page) => ({ name, ...page }), name)
  }
  const file = path ?? source.entry_file
  const text = source.files[file]
  if (text === undefined) {
    throw new InvalidToolRequest({
      name,
      reason: "UnknownPath",
      detail: `'${name}' has no file ${file}; its files are ${Object.keys(source.files).join(", ")}`
    })
  }
  return Paging.page(Paging.pageable(text), offset, max_chars, (page) => ({ name, path: file, ...page }), name)
}

const readToolSchema = (read: ReadModel, { max_chars = 2_000, name, offset = 0 }: NameArgs & PageArgs) => {
  const parameters = read.definition(name).parameters
  if (parameters === null) {
    throw new InvalidToolRequest({ name, reason: "NoSource", detail: `base tool '${name}' is unbound; its schema is unknown` })
  }
  return Paging.page(Paging.pageable(JSON.stringify(parameters)), offset, max_chars, (page) => ({ name, ...page }), name)
}

const inspectToolCalls = (registry: Registry, read: ReadModel, { limit = 5, name, offset = 0 }: NameArgs & PageArgs) => {
  knownTool(registry, name)
  const records = read.profiler.records(name)
  return Paging.pageItems(records, offset, limit, (items, nextOffset) => ({
    calls: items.map(compactCall),
    total_calls: records.length,
    next_offset: nextOffset
  }), name)
}

const inspectToolErrors = (read: ReadModel, { limit = 3, max_chars = 512, name, offset = 0 }: Partial<NameArgs> & PageArgs) => {
  const records = read.errors.records(name)
  const previews = new Map<ToolErrorRecord, ErrorPreview>()
  const previewOf = (record: ToolErrorRecord) => {
    let preview = previews.get(record)
    if (preview === undefined) previews.set(record, preview = errorPreview(record, max_chars, records.length))
    return preview
  }
  return Paging.pageItems(records, offset, limit, (items, nextOffset) => ({
    errors: items.map(previewOf),
    total_matches: records.length,
    next_offset: nextOffset
  }), name)
}

export const make = (registry: Registry, read: ReadModel, changes: ToolChanges): Array<ManagementEntry> => {
  const handlers: Record<ManagementToolName, (args: never, call: LiveCall) => unknown> = {
    create_tool: (args: unknown, call: LiveCall) =>
      changes.serially(() => changes.create(ToolRequest.decodeCreate(args)), call.withinChange),
    update_tool: (args: unknown, call: LiveCall) =>
      changes.serially(() => changes.update(ToolRequest.decodeUpdate(args)), call.withinChange),
    unload_tool: ({ name }: NameArgs, call: LiveCall) => changes.serially(() => changes.setLoaded(name, false), call.withinChange),
    load_tool: ({ name }: NameArgs, call: LiveCall) => changes.serially(() => changes.setLoaded(name, true), call.withinChange),

    list_tools: (args: PageArgs) => listTools(read, args),
    inspect_tool: (args: NameArgs) => inspectTool(read, args),
    read_tool_source: (args: SourceArgs) => readToolSource(read, args),
    read_tool_schema: (args: NameArgs & PageArgs) => readToolSchema(read, args),
    inspect_tool_stats: ({ name }: NameArgs) => {
      knownTool(registry, name)
      return read.profileStats(name)
    },
    inspect_tool_calls: (args: NameArgs & PageArgs) => inspectToolCalls(registry, read, args),
    inspect_tool_errors: (args: Partial<NameArgs> & PageArgs) => inspectToolErrors(read, args)
  }

  return managementTools.map((definition) => ({
    origin: "management" as const,
    name: definition.name,
    validate: Validator.compile(definition.parameters, "draft-07"),
    handler: handlers[definition.name as ManagementToolName] as ManagementEntry["handler"]
  }))
}
