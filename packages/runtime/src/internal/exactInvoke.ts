/**
 * Checked fast paths for the two messages of every remote call: the `invoke` request a worker
 * reads and the `ok` reply its session reads. Each decodes by hand only a message whose shape is
 * exactly what the runtime sends, checking every field as its schema would, and answers
 * `undefined` for anything else, which the caller then decodes with the schema (so what a
 * malformed message is told stays the schema's precise error). ExactInvoke.test.ts proves both
 * agree with the schema path.
 */
import { Protocol } from "@jitbox/sandbox"
import { limits, version } from "../Envelope.js"
import * as Ids from "../Ids.js"
import * as WorkerProtocol from "../WorkerProtocol.js"

const languages: ReadonlySet<unknown> = new Set(WorkerProtocol.Language.literals)

/** The fields of an `invoke` besides `lease_id` and `args`, which may be absent. */
const requiredKeys = 14

const isString = (u: unknown): u is string => typeof u === "string"
const isToken = (u: unknown): u is string => typeof u === "string" && Ids.isTokenText(u)
const isNumberOrNull = (u: unknown): boolean => u === null || typeof u === "number"

/** Whether the fields of a parsed `invoke` are exactly those it has, each of its type. */
const exact = (m: Record<string, unknown>): boolean => {
  const optional = (Object.hasOwn(m, "lease_id") ? 1 : 0) + (Object.hasOwn(m, "args") ? 1 : 0)
  return Object.keys(m).length === requiredKeys + optional &&
    isToken(m.session_id) && isString(m.version_id) && isString(m.tool_name) && languages.has(m.language) &&
    isString(m.entrypoint) && isString(m.entry_file) && (m.lease_id === undefined || isToken(m.lease_id)) &&
    isString(m.capability) && WorkerProtocol.capabilityPattern.test(m.capability) && isString(m.call_id) &&
    (m.parent_call_id === null || isString(m.parent_call_id)) && typeof m.depth === "number" &&
    typeof m.within_change === "boolean" && isNumberOrNull(m.timeout_ms)
}

/**
 * A parsed message (`Envelope.parse`) as the `invoke` request
 * the schema would decode it to, when its shape is exact; else `undefined`.
 */
export const invoke = (m: Record<string, unknown>): WorkerProtocol.InvokeRequest | undefined => {
  if (m.v !== version || m.kind !== "invoke" || !exact(m)) return undefined
  const request: Record<string, unknown> = {
    v: m.v,
    kind: "invoke",
    sessionId: m.session_id,
    versionId: m.version_id,
    toolName: m.tool_name,
    language: m.language,
    entrypoint: m.entrypoint,
    entryFile: m.entry_file,
    capability: m.capability,
    callId: m.call_id,
    parentCallId: m.parent_call_id,
    depth: m.depth,
    withinChange: m.within_change,
    timeoutMs: m.timeout_ms
  }
  if (Object.hasOwn(m, "lease_id")) request.leaseId = m.lease_id
  if (Object.hasOwn(m, "args")) request.args = m.args
  return request as unknown as WorkerProtocol.InvokeRequest
}

const decoder = new TextDecoder("utf-8", { fatal: true })
const okHead = `{"v":${version},"kind":"ok","value":`
const okEmpty = `{"v":${version},"kind":"ok"}`

/** The value of an `ok` reply. */
export interface Ok {
  readonly value: unknown
}

/**
 * The value of a reply exactly as `Envelope.ok` writes it (`{"v":2,"kind":"ok","value":…}` or
 * `{"v":2,"kind":"ok"}`), bounded as `Envelope.parse` bounds it; `undefined` for any other reply
 * (an error, another spelling, invalid UTF-8 or JSON), which `Protocol.valueOf` then reads.
 */
export const ok = (data: Uint8Array): Ok | undefined => {
  let text: string
  try {
    text = decoder.decode(data)
  } catch {
    return undefined
  }
  if (text === okEmpty) return { value: undefined }
  if (!text.startsWith(okHead) || text.charCodeAt(text.length - 1) !== 125) return undefined
  const json = text.slice(okHead.length, -1)
  // the value sits one level inside the envelope, as the whole message's bound counts it
  if (Protocol.nestsDeeperThan(json, limits.valueDepth + limits.envelopeDepth - 1)) return undefined
  try {
    return { value: JSON.parse(json) }
  } catch {
    return undefined
  }
}
