/**
 * docs/protocol.md cannot silently fall behind the code:
 *
 * - every subject builder exported by packages/runtime/src/Subject.ts (found in its syntax tree:
 *   the exports that return a `Subject`, `Pattern` or `Prefix`) is named on the page
 *   (`Subject.<builder>(`), and the subject it builds, with the page's placeholders (`<p>`,
 *   `<sid>`, …), appears on it; every `<p>.…` subject the page names is one a builder makes;
 * - every `_tag` of the wire error union and of the coordinator's error union has a row in a table
 *   of the page that names each of its fields and each literal of its `reason`;
 * - every coordinator operation, every message `kind` and every event name appears;
 * - every example in a ```json block decodes with the runtime's own schema for it (a block that
 *   shows an invalid message on purpose is fenced ```json no-check), and every coordinator request
 *   in an example is accepted by a real coordinator's decoder.
 */
import { JitToolEvent } from "@jitbox/core"
import {
  Coordinator,
  CoordinatorProtocol,
  Protocol,
  Envelope,
  ExecutionProfile,
  Ids,
  Ledger,
  MemoryTransport,
  ServiceDiscovery,
  SessionProtocol,
  StreamProtocol,
  Subject,
  Transport,
  WireError,
  WorkerCapacity,
  WorkerProtocol
} from "@jitbox/runtime"
import * as Context from "effect/Context"
import * as AST from "effect/SchemaAST"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("..", import.meta.url))
const doc = fs.readFileSync(path.join(root, "docs", "protocol.md"), "utf8")

// ---------------------------------------------------------------------------------------------
// Subject builders

/** The page's placeholder for each parameter name of a builder; `undefined`: leave it out (its default). */
const placeholders: Record<string, string | undefined> = {
  prefix: "<p>",
  session: "<sid>",
  op: "<op>",
  principal: "<principal>",
  pool: "<pool>",
  language: "<language>",
  nodeId: "<nodeId>",
  versionId: "<versionId>",
  event: "<event>",
  namespace: "<namespace>",
  root: undefined,
  name: "<name>",
  id: "<id>"
}

interface Builder {
  readonly name: string
  readonly parameters: ReadonlyArray<string>
}

/** The exports of Subject.ts that build a subject, a pattern or the prefix, with their parameter names. */
const builders = (): Array<Builder> => {
  const file = path.join(root, "packages", "runtime", "src", "Subject.ts")
  const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  const found: Array<Builder> = []
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue
    if (!statement.modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)) continue
    for (const declaration of statement.declarationList.declarations) {
      const initializer = declaration.initializer
      if (!ts.isIdentifier(declaration.name) || initializer === undefined || !ts.isArrowFunction(initializer)) continue
      const declared = declaration.type?.getText(source)
      const returned = initializer.type?.getText(source)
      const builds = declared !== undefined
        ? /\):\s*(Subject|Pattern|Prefix)\b/.test(declared)
        : returned !== undefined && ["Subject", "Pattern", "Prefix"].includes(returned)
      if (!builds) continue
      found.push({ name: declaration.name.text, parameters: initializer.parameters.map((parameter) => parameter.name.getText(source)) })
    }
  }
  return found
}

/** The subjects a builder makes with the page's placeholders (one per `$SRV` verb for the discovery builder). */
const templates = (builder: Builder): Array<string> => {
  const build = (Subject as unknown as Record<string, (...args: Array<unknown>) => string>)[builder.name]
  expect(build, `Subject.${builder.name} is not exported at run time`).toBeTypeOf("function")
  const verbs = builder.parameters.includes("verb") ? Subject.serviceVerbs : [undefined]
  return verbs.map((verb) => {
    const args = builder.parameters.map((parameter) => {
      if (parameter === "verb") return verb
      expect(
        Object.hasOwn(placeholders, parameter),
        `Subject.${builder.name} has a parameter '${parameter}': give it a placeholder in test/ProtocolDoc.test.ts and use it in docs/protocol.md`
      ).toBe(true)
      return placeholders[parameter]
    })
    while (args.length > 0 && args[args.length - 1] === undefined) args.pop()
    return build(...args)
  })
}

/** Whether `named` (a subject written on the page) is one `template` makes: placeholders stand for any one token. */
const instanceOf = (named: string, template: string): boolean => {
  const have = named.split(".")
  const want = template.split(".")
  return have.length === want.length && want.every((token, i) => token === have[i] || (token.startsWith("<") && token.endsWith(">") && token !== "<p>"))
}

describe("docs/protocol.md names every subject", () => {
  const all = builders()

  it("finds the builders in Subject.ts", () => {
    expect(all.length).toBeGreaterThanOrEqual(20)
    expect(all.map((builder) => builder.name)).toEqual(expect.arrayContaining(["sessionCall", "workerInvoke", "coordinator", "serviceDiscovery", "prefix"]))
  })

  it.each(all.map((builder) => [builder.name, builder] as const))("Subject.%s is on the page with the subject it builds", (name, builder) => {
    expect(doc.includes(`Subject.${name}(`), `docs/protocol.md does not name Subject.${name}(`).toBe(true)
    for (const template of templates(builder)) {
      expect(doc.includes(template), `docs/protocol.md does not show ${template} (built by Subject.${name})`).toBe(true)
    }
  })

  it("names no <p>.… subject that no builder makes", () => {
    const made = all.flatMap(templates)
    const named = [...new Set([...doc.matchAll(/`(<p>\.[^`\s]+)`/g)].map((match) => match[1]!))]
    expect(named.length).toBeGreaterThan(10)
    expect(named.filter((subject) => !made.some((template) => instanceOf(subject, template)))).toEqual([])
  })
})

// ---------------------------------------------------------------------------------------------
// Errors, operations, kinds, events

interface ErrorClass {
  readonly _tag: string
  readonly fields: Record<string, unknown>
}

/** Fields an error has in the code but never sends as a field: `_tag` is the row itself, and `ToolFailure` leaves its `cause` where it was thrown. */
const unsent = new Set(["_tag", "cause"])

const literalsOf = (schema: unknown): Array<string> => {
  const literals = (schema as { literals?: ReadonlyArray<unknown> } | undefined)?.literals
  return literals === undefined ? [] : literals.map(String)
}

/** The rows of the page's tables that start with this `_tag`. */
const rowsOf = (tag: string): Array<string> => doc.split("\n").filter((line) => line.startsWith(`| \`${tag}\` |`))

const checkErrorRow = (member: ErrorClass) => {
  const fields = Object.keys(member.fields).filter((field) => !unsent.has(field))
  const reasons = literalsOf(member.fields.reason)
  const rows = rowsOf(member._tag)
  expect(rows.length, `docs/protocol.md has no table row starting with | \`${member._tag}\` |`).toBeGreaterThan(0)
  const complete = rows.some((row) =>
    fields.every((field) => row.includes(`\`${field}\``)) && reasons.every((reason) => row.includes(`\`${reason}\``))
  )
  const missing = [...fields, ...reasons].filter((word) => !rows.some((row) => row.includes(`\`${word}\``)))
  expect(complete, `no row of ${member._tag} names all of its fields and reasons; missing: ${missing.join(", ")}`).toBe(true)
}

const wireErrors = WireError.WireError.members as unknown as ReadonlyArray<ErrorClass>
const coordinatorErrors = CoordinatorProtocol.CoordinatorError.members as unknown as ReadonlyArray<ErrorClass>

const kindOf = (schema: { readonly fields: { readonly kind: unknown } }): string => literalsOf(schema.fields.kind)[0]!

/** Every message kind the protocol modules define. */
const kinds = (): Array<string> => [
  ...Object.keys(SessionProtocol.callMessages),
  ...Object.keys(SessionProtocol.manageRequests),
  kindOf(SessionProtocol.ActivateRequest),
  kindOf(SessionProtocol.OkReply),
  kindOf(SessionProtocol.ErrorReply),
  ...Object.keys(WorkerProtocol.workerMessages),
  kindOf(WorkerProtocol.PackageRequest),
  kindOf(WorkerProtocol.NestedRequest),
  kindOf(WorkerProtocol.CancelMessage),
  kindOf(WorkerProtocol.Heartbeat),
  kindOf(WorkerCapacity.CapacityReport),
  ...CoordinatorProtocol.kinds,
  kindOf(StreamProtocol.EventBatch),
  kindOf(StreamProtocol.RecordBatch)
]

/** Every operation of every protocol table, with the wire names of its request's fields (renames applied). */
const tableOperations = (): Array<[string, string, ReadonlyArray<string>]> => {
  const tables: ReadonlyArray<readonly [string, Protocol.Table]> = [
    ["SessionProtocol.call", SessionProtocol.call],
    ["SessionProtocol.manage", SessionProtocol.manage],
    ["CoordinatorProtocol.operations", CoordinatorProtocol.operations],
    ["WorkerProtocol.worker", WorkerProtocol.worker],
    ["WorkerProtocol.session", WorkerProtocol.session]
  ]
  return tables.flatMap(([name, table]) =>
    Object.entries(Protocol.requests(table)).map(([kind, request]): [string, string, ReadonlyArray<string>] => {
      const ast = Schema.encodedSchema(request as unknown as Schema.Schema<unknown, unknown>).ast
      const fields = AST.isTypeLiteral(ast) ? ast.propertySignatures.map((signature) => String(signature.name)) : []
      return [name, kind, fields.filter((field) => field !== "v" && field !== "kind")]
    })
  )
}

describe("docs/protocol.md names every error, operation, kind and event", () => {
  it.each(wireErrors.map((member) => [member._tag, member] as const))("wire error %s: its fields and reasons", (_tag, member) => {
    checkErrorRow(member)
  })

  it.each(coordinatorErrors.map((member) => [member._tag, member] as const))("coordinator error %s: its fields and reasons", (_tag, member) => {
    checkErrorRow(member)
  })

  it.each(CoordinatorProtocol.kinds.map((op) => [op]))("coordinator operation %s has its subject and an example", (op) => {
    expect(doc.includes(`\`<p>.coordinator.<principal>.${op}\``), `docs/protocol.md does not name <p>.coordinator.<principal>.${op}`).toBe(true)
    expect(doc.includes(`{"v":2,"kind":"${op}"`), `docs/protocol.md has no example of ${op}`).toBe(true)
  })

  it.each(tableOperations())("%s: the operation %s and every field of its request (as the wire spells it) are on the page", (_table, kind, fields) => {
    expect(doc.includes(`{"v":2,"kind":"${kind}"`), `docs/protocol.md has no example of ${kind}`).toBe(true)
    const missing = fields.filter((field) => !doc.includes(`"${field}"`) && !doc.includes(`\`${field}\``))
    expect(missing, `docs/protocol.md never names these fields of ${kind}`).toEqual([])
  })

  it.each([...new Set(kinds())].map((kind) => [kind]))("message kind %s has an example", (kind) => {
    expect(doc.includes(`{"v":2,"kind":"${kind}"`), `docs/protocol.md has no example of kind ${kind}`).toBe(true)
  })

  it.each(JitToolEvent.JitToolEvent.members.map((member) => [literalsOf(member.fields.name)[0]!]))("event %s is described", (name) => {
    expect(doc.includes(`\`${name}\``), `docs/protocol.md does not describe ${name}`).toBe(true)
    expect(doc.includes(`"name":"${name}"`), `docs/protocol.md has no example of ${name}`).toBe(true)
  })
})

// ---------------------------------------------------------------------------------------------
// Examples

interface Example {
  readonly line: number
  readonly value: Record<string, unknown>
}

/** The JSON values of the page's ```json blocks (one document, or one per line), except ```json no-check. */
const examples = (): Array<Example> => {
  const lines = doc.split("\n")
  const found: Array<Example> = []
  let open: { readonly start: number; readonly checked: boolean } | undefined
  let body: Array<{ readonly text: string; readonly line: number }> = []
  lines.forEach((text, index) => {
    if (open === undefined) {
      const fence = /^```json(.*)$/.exec(text)
      if (fence !== null) {
        open = { start: index + 1, checked: !fence[1]!.includes("no-check") }
        body = []
      }
      return
    }
    if (text !== "```") {
      body.push({ text, line: index + 1 })
      return
    }
    if (open.checked) {
      const whole = body.map((entry) => entry.text).join("\n")
      let values: Array<Example>
      try {
        values = [{ line: open.start, value: JSON.parse(whole) as Record<string, unknown> }]
      } catch {
        values = body.filter((entry) => entry.text.trim() !== "").map((entry) => {
          try {
            return { line: entry.line, value: JSON.parse(entry.text) as Record<string, unknown> }
          } catch (error) {
            throw new Error(`docs/protocol.md:${entry.line}: not JSON (${String(error)})`)
          }
        })
      }
      found.push(...values)
    }
    open = undefined
  })
  expect(open, "docs/protocol.md has a ```json block that is never closed").toBeUndefined()
  return found
}

const decodes = (schema: Schema.Schema.Any, value: unknown): string | undefined => {
  const result = Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown>)(value)
  return Either.isLeft(result) ? result.left.message : undefined
}

const discoveryResponses: Record<string, Schema.Schema.Any> = {
  [ServiceDiscovery.responseTypes.PING]: ServiceDiscovery.PingResponse,
  [ServiceDiscovery.responseTypes.INFO]: ServiceDiscovery.InfoResponse,
  [ServiceDiscovery.responseTypes.STATS]: ServiceDiscovery.StatsResponse
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** What is wrong with an `ok` value the page shows, when its shape says what it is. */
const checkValue = (value: unknown): string | undefined => {
  if (isRecord(value) && "capability" in value) {
    return decodes(CoordinatorProtocol.CapabilityDescriptor, value.capability) ?? decodes(CoordinatorProtocol.Lease, value.lease)
  }
  if (isRecord(value) && "leaseId" in value) return decodes(CoordinatorProtocol.LeaseFacts, value)
  if (isRecord(value) && "profiles" in value && "sessions" in value) return decodes(CoordinatorProtocol.Leases, value)
  if (isRecord(value) && "slots" in value && "expiresAt" in value) return decodes(CoordinatorProtocol.Lease, value)
  if (Array.isArray(value) && isRecord(value[0]) && "workerId" in value[0]) return decodes(Schema.Array(WorkerCapacity.WorkerCapacity), value)
  if (isRecord(value) && "call_capacity" in value) return decodes(SessionProtocol.manageResult.profile, value)
  if (isRecord(value) && "retained_errors" in value) return decodes(SessionProtocol.manageResult.tool_errors, value)
  if (isRecord(value) && "format_version" in value) return decodes(SessionProtocol.manageResult.snapshot, value)
  if (isRecord(value) && "instructions" in value) return decodes(SessionProtocol.manageResult.definitions, value)
  if (isRecord(value) && "chunks" in value) return decodes(WorkerProtocol.PackageChunk, value)
  return undefined
}

/** The schema problem of one example, or undefined when it decodes. */
const check = (value: Record<string, unknown>): string | undefined => {
  if (typeof value.type === "string" && value.type.startsWith("io.nats.micro.v1.")) {
    const schema = discoveryResponses[value.type]
    return schema === undefined ? `unknown discovery answer ${value.type}` : decodes(schema, value)
  }
  if (value.v !== 2 || typeof value.kind !== "string") return "not an envelope {\"v\":2,\"kind\":…}"
  const kind = value.kind
  switch (kind) {
    case "ok":
      return decodes(SessionProtocol.OkReply, value) ?? checkValue(value.value)
    case "error": {
      const asWire = decodes(WireError.WireError, value.error)
      const asCoordinator = decodes(CoordinatorProtocol.CoordinatorError, value.error)
      return asWire !== undefined && asCoordinator !== undefined ? `an error of neither union: ${asWire}` : undefined
    }
    case "call":
    case "running":
      return decodes(SessionProtocol.CallMessage, value)
    case "cancel":
      return decodes("session_id" in value ? WorkerProtocol.CancelMessage : SessionProtocol.CallMessage, value)
    case "activate":
      return decodes("version_id" in value ? WorkerProtocol.ActivateRequest : SessionProtocol.ActivateRequest, value)
    case "invoke":
      return decodes(WorkerProtocol.InvokeRequest, value)
    case "package":
      return decodes(WorkerProtocol.PackageRequest, value)
    case "nested":
      return decodes(WorkerProtocol.NestedRequest, value)
    case "heartbeat":
      return decodes(WorkerProtocol.Heartbeat, value)
    case "capacity":
      return decodes(WorkerCapacity.CapacityReport, value)
    case "events":
      return decodes(StreamProtocol.EventBatch, value)
    case "records":
      return decodes(StreamProtocol.RecordBatch, value)
    default:
      if (Object.hasOwn(SessionProtocol.manageRequests, kind)) return decodes(SessionProtocol.ManageRequest, value)
      if ((CoordinatorProtocol.kinds as ReadonlyArray<string>).includes(kind)) return undefined // sent to a coordinator below
      return `unknown kind '${kind}'`
  }
}

describe("docs/protocol.md examples are real messages", () => {
  const all = examples()

  it("finds the examples", () => {
    expect(all.length).toBeGreaterThan(60)
  })

  it("every example decodes with the runtime's schema for it", () => {
    const problems = all.flatMap((example) => {
      const problem = check(example.value)
      return problem === undefined ? [] : [`docs/protocol.md:${example.line}: ${problem.slice(0, 300)}`]
    })
    expect(problems).toEqual([])
  })

  it("a coordinator accepts every coordinator request of the page (its decoder; what it then answers does not matter)", async () => {
    const requests = all.filter((example) =>
      example.value.v === 2 && (CoordinatorProtocol.kinds as ReadonlyArray<unknown>).includes(example.value.kind)
    )
    expect(new Set(requests.map((example) => example.value.kind))).toEqual(new Set(CoordinatorProtocol.kinds))
    const namespace = Ids.namespace("demo")
    const prefix = Subject.prefix(namespace)
    const answers = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(Layer.merge(MemoryTransport.layer(), Ledger.layerMemory))
      yield* Coordinator.make({
        namespace,
        profiles: ExecutionProfile.all([
          { name: "standard", policy: { allowedLanguages: ["JavaScript"], allowAsyncOperations: true, maximumInvocations: 100 } },
          { name: "gpu", location: "gpu", policy: { allowedLanguages: ["Python"] } },
          { name: "batch", policy: { allowedLanguages: ["JavaScript"], maximumInvocations: 100 } }
        ])
      }).pipe(Effect.provide(context))
      const transport = Context.get(context, Transport.Transport)
      return yield* Effect.forEach(requests, (example) =>
        Effect.promise(async () => {
          const op = Ids.token(example.value.kind as string)
          const reply = await transport.request(Subject.coordinator(prefix, Ids.defaultPrincipal, op), JSON.stringify(example.value), { timeoutMs: 10_000 })
          return { line: example.line, reply: Either.getOrThrowWith(Envelope.parse(reply.data, "reply"), (error) => error) }
        }))
    })))
    const refused = answers.filter(({ reply }) => {
      const error = isRecord(reply) && isRecord(reply.error) ? reply.error : undefined
      return error?._tag === "ProtocolError" && error.reason === "Decode"
    })
    expect(refused.map(({ line, reply }) => `docs/protocol.md:${line}: ${JSON.stringify(reply)}`)).toEqual([])
  })
})
