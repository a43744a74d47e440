/**
 * Package transfer, both ends of `session.<sid>.package`:
 *
 * - the session's end (`Packages`): the bytes of each package version its activations hold (the
 *   UTF-8 JSON of `{"files":{path: text}}`), kept while an activation holds them, answered one
 *   chunk at a time, each chunk sized so that its reply fits the transport's `max_payload`;
 * - the worker's end (`fetcher`): asks chunk 0, learns how many there are, asks the rest in order,
 *   joins them and decodes the files.
 *
 * A package is never sent per call: a worker fetches a version once and keeps its activation.
 */
import * as Either from "effect/Either"
import * as Envelope from "../Envelope.js"
import type * as Ids from "../Ids.js"
import * as Protocol from "../Protocol.js"
import * as Subject from "../Subject.js"
import type * as Transport from "../Transport.js"
import { ProtocolError } from "../ProtocolError.js"
import { TransportError } from "../TransportError.js"
import * as WorkerProtocol from "../WorkerProtocol.js"

/** Chunk `chunk` of `bytes`, sized for `maxPayload`, or why there is no such chunk. */
export const chunkOf = (
  bytes: Uint8Array,
  chunk: number,
  maxPayload: number,
  subject: string
): Either.Either<typeof WorkerProtocol.PackageChunk.Type, TransportError> => {
  const size = WorkerProtocol.chunkBytes(maxPayload)
  const chunks = Math.max(1, Math.ceil(bytes.length / size))
  if (!(Number.isInteger(chunk) && chunk >= 0 && chunk < chunks)) {
    return Either.left(new TransportError({ reason: "InvalidArgument", subject, detail: `chunk ${chunk} of ${chunks}` }))
  }
  return Either.right({ chunks, data: Buffer.from(bytes.subarray(chunk * size, (chunk + 1) * size)).toString("base64") })
}

/** The session's end: package bytes by version id, with how many activations hold each. */
export class Packages {
  private readonly held = new Map<string, { readonly bytes: Uint8Array; holders: number }>()

  /** Holds the version's files for one more activation. */
  hold(versionId: string, files: Readonly<Record<string, string>>): void {
    const found = this.held.get(versionId)
    if (found !== undefined) found.holders++
    else this.held.set(versionId, { bytes: Buffer.from(JSON.stringify({ files })), holders: 1 })
  }

  /** One activation less holds the version; the last one frees its bytes. */
  drop(versionId: string): void {
    const found = this.held.get(versionId)
    if (found !== undefined && --found.holders === 0) this.held.delete(versionId)
  }

  /** The `package` handler: chunk `chunk` of version `versionId`. */
  chunk(versionId: string, chunk: number, maxPayload: number, subject: string): typeof WorkerProtocol.PackageChunk.Type {
    const found = this.held.get(versionId)
    if (found === undefined) throw new TransportError({ reason: "InvalidArgument", subject, detail: `no package version ${versionId} here` })
    const answer = chunkOf(found.bytes, chunk, maxPayload, subject)
    if (Either.isLeft(answer)) throw answer.left
    return answer.right
  }
}

/** The files of joined chunks, or why they are not a package. */
export const join = (parts: ReadonlyArray<Uint8Array>, versionId: string, subject: string): Either.Either<Record<string, string>, ProtocolError> => {
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.concat(parts).toString("utf8"))
  } catch {
    return Either.left(new ProtocolError({ reason: "Decode", subject, detail: `package ${versionId}: its chunks are not JSON` }))
  }
  return Either.map(Envelope.decodeParsed(WorkerProtocol.PackageFiles, parsed, subject), (decoded) => decoded.files)
}

/** The worker's end: fetches a package version from its session, each chunk within `timeoutMs`. */
export const fetcher = (transport: Transport.TransportShape, prefix: Subject.Prefix, timeoutMs: number) =>
async (sessionId: Ids.SessionId, versionId: string, capability: WorkerProtocol.Capability): Promise<Record<string, string>> => {
  const subject = Subject.sessionPackage(prefix, sessionId)
  const session = Protocol.client(WorkerProtocol.session, () => subject, (_kind, payload) => transport.request(subject, payload, { timeoutMs }))
  const parts: Array<Uint8Array> = []
  for (let chunk = 0, chunks = 1; chunk < chunks; chunk++) {
    const part = await session("package", { versionId, chunk, capability })
    chunks = part.chunks
    parts.push(Buffer.from(part.data, "base64"))
  }
  const files = join(parts, versionId, subject)
  if (Either.isLeft(files)) throw files.left
  return files.right
}
