/**
 * Where sessions keep their toolboxes between activations: one snapshot per session id. A session
 * actor loads its snapshot when it activates and stores a new one after every toolbox change,
 * before the change is acknowledged, so another process can take the session over from the store
 * with no tool lost.
 *
 * Two layers here: `layerMemory` (this process; a fresh store per build of the layer, shared by
 * every `Sessions` built in it) and `layerFile` (one JSON file per session in a directory, written
 * atomically: a temporary file in the same directory, fsync, rename). Both keep what
 * `JitHarnessSnapshot.toJson` writes and decode with the snapshot's schema when they load, so a
 * store never hands out a snapshot that `fromJson` would refuse; both bound the size of a stored
 * snapshot (`maxBytes`, default 64 MiB). A JetStream KV layer lives in `@jitbox/nats`
 * (`KvSnapshotStore`); `encode`, `decode` and `maxBytesOf` are exported so that every layer keeps
 * the same bytes and applies the same bounds.
 *
 * @since 0.1.0
 */
import { AtomicFile, JitHarnessSnapshot } from "@jitbox/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type * as Ids from "./Ids.js"

/** @since 0.1.0 @category models */
export interface SnapshotStoreShape {
  /** The session's snapshot, or none when it was never stored. */
  readonly load: (sessionId: Ids.SessionId) => Effect.Effect<Option.Option<JitHarnessSnapshot.JitHarnessSnapshot>, JitHarnessSnapshot.SnapshotError>
  /** Replaces the session's snapshot; when it succeeds, a later `load` (in any process using the store) sees it. */
  readonly save: (sessionId: Ids.SessionId, snapshot: JitHarnessSnapshot.JitHarnessSnapshot) => Effect.Effect<void, JitHarnessSnapshot.SnapshotError>
  /** Deletes the session's snapshot; nothing when there is none. */
  readonly remove: (sessionId: Ids.SessionId) => Effect.Effect<void, JitHarnessSnapshot.SnapshotError>
}

/** @since 0.1.0 @category tags */
export class SnapshotStore extends Context.Tag("@jitbox/runtime/SnapshotStore")<SnapshotStore, SnapshotStoreShape>() {}

/** @since 0.1.0 @category models */
export interface StoreOptions {
  /** The largest snapshot stored, in bytes of JSON (default 64 MiB); a larger one fails `Invalid` on save and on load. */
  readonly maxBytes?: number | undefined
}

/** @since 0.1.0 @category constants */
export const defaultMaxBytes = 64 * 1024 * 1024

const encoder = new TextEncoder()

const snapshotError = (reason: JitHarnessSnapshot.SnapshotError["reason"], detail: string, where?: string) =>
  new JitHarnessSnapshot.SnapshotError({ reason, detail, ...(where === undefined ? {} : { path: where }) })

/**
 * The snapshot as the JSON a store keeps, or the `Invalid` error that refuses it (the schema
 * refuses it, or it is over `maxBytes` bytes of UTF-8).
 *
 * @since 0.1.0
 * @category codecs
 */
export const encode = (
  sessionId: Ids.SessionId,
  snapshot: JitHarnessSnapshot.JitHarnessSnapshot,
  maxBytes: number
): Effect.Effect<string, JitHarnessSnapshot.SnapshotError> =>
  Effect.flatMap(
    Effect.try({
      try: () => JitHarnessSnapshot.toJson(snapshot),
      catch: (error) =>
        error instanceof JitHarnessSnapshot.SnapshotError ? error : snapshotError("Invalid", `the snapshot of ${sessionId} does not encode: ${String(error)}`)
    }),
    (json) => {
      const bytes = json.length > maxBytes / 3 ? encoder.encode(json).length : json.length
      return bytes > maxBytes
        ? Effect.fail(snapshotError("Invalid", `the snapshot of ${sessionId} is ${bytes} bytes; this store keeps at most ${maxBytes}`))
        : Effect.succeed(json)
    }
  )

/**
 * Stored JSON back to a snapshot, with `JitHarnessSnapshot.fromJson`'s rules; `where` names the
 * stored value in the error.
 *
 * @since 0.1.0
 * @category codecs
 */
export const decode = (json: string, where: string): Effect.Effect<JitHarnessSnapshot.JitHarnessSnapshot, JitHarnessSnapshot.SnapshotError> =>
  Effect.try({
    try: () => JitHarnessSnapshot.fromJson(json, where),
    catch: (error) => error instanceof JitHarnessSnapshot.SnapshotError ? error : snapshotError("Invalid", String(error), where)
  })

const checkMaxBytes = (maxBytes: number | undefined): number => {
  const bound = maxBytes ?? defaultMaxBytes
  if (!Number.isSafeInteger(bound) || bound < 1) throw snapshotError("Invalid", `maxBytes must be a positive integer, got ${String(maxBytes)}`)
  return bound
}

/**
 * The bound of `options.maxBytes` (default `defaultMaxBytes`), or `Invalid` when it is not a
 * positive integer.
 *
 * @since 0.1.0
 * @category constructors
 */
export const maxBytesOf = (options: StoreOptions): Effect.Effect<number, JitHarnessSnapshot.SnapshotError> =>
  Effect.try({ try: () => checkMaxBytes(options.maxBytes), catch: (error) => error as JitHarnessSnapshot.SnapshotError })

/**
 * A store in this process.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (options: StoreOptions = {}): SnapshotStoreShape => {
  const maxBytes = checkMaxBytes(options.maxBytes)
  const entries = new Map<string, string>()
  return {
    load: (sessionId) =>
      Effect.suspend(() => {
        const json = entries.get(sessionId)
        return json === undefined ? Effect.succeed(Option.none()) : Effect.map(decode(json, `memory:${sessionId}`), Option.some)
      }),
    save: (sessionId, snapshot) => Effect.map(encode(sessionId, snapshot, maxBytes), (json) => void entries.set(sessionId, json)),
    remove: (sessionId) => Effect.sync(() => void entries.delete(sessionId))
  }
}

/** @since 0.1.0 @category layers */
export const layerMemory = (options: StoreOptions = {}): Layer.Layer<SnapshotStore> => Layer.sync(SnapshotStore, () => makeMemory(options))

/** @since 0.1.0 @category models */
export interface FileStoreOptions extends StoreOptions {
  /** The directory of the snapshot files (`<sessionId>.json`); made, with its parents, when missing. */
  readonly directory: string
}

const ioError = (cause: unknown, where: string): JitHarnessSnapshot.SnapshotError => {
  const code = (cause as { code?: unknown }).code
  return snapshotError(code === "ENOENT" ? "NotFound" : "Io", cause instanceof Error ? cause.message : String(cause), where)
}

/**
 * A store of one file per session in `directory`. A session id is one subject token (ASCII
 * letters, digits, `_`, `-`), so it is a safe file name as it is.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeFile = (options: FileStoreOptions): Effect.Effect<SnapshotStoreShape, JitHarnessSnapshot.SnapshotError> =>
  Effect.gen(function*() {
    const maxBytes = yield* maxBytesOf(options)
    const directory = path.resolve(options.directory)
    yield* Effect.tryPromise({ try: () => fs.mkdir(directory, { recursive: true }), catch: (cause) => ioError(cause, directory) })
    const fileOf = (sessionId: Ids.SessionId) => path.join(directory, `${sessionId}.json`)

    const load = (sessionId: Ids.SessionId) => {
      const file = fileOf(sessionId)
      return Effect.tryPromise({
        try: async (): Promise<string | undefined> => {
          let handle: fs.FileHandle
          try {
            handle = await fs.open(file, "r")
          } catch (cause) {
            if ((cause as { code?: unknown }).code === "ENOENT") return undefined
            throw cause
          }
          try {
            const { size } = await handle.stat()
            if (size > maxBytes) throw snapshotError("Invalid", `the file is ${size} bytes; this store reads at most ${maxBytes}`, file)
            // Read at most one byte past the bound: a file that grew since `stat` is refused, never read whole.
            const buffer = Buffer.alloc(Math.min(size, maxBytes) + 1)
            let length = 0
            while (length < buffer.length) {
              const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length)
              if (bytesRead === 0) break
              length += bytesRead
            }
            if (length > maxBytes) throw snapshotError("Invalid", `the file is larger than the ${maxBytes} bytes this store reads`, file)
            return buffer.subarray(0, length).toString("utf8")
          } finally {
            await handle.close()
          }
        },
        catch: (cause) => cause instanceof JitHarnessSnapshot.SnapshotError ? cause : ioError(cause, file)
      }).pipe(
        Effect.flatMap((json) => json === undefined ? Effect.succeed(Option.none()) : Effect.map(decode(json, file), Option.some))
      )
    }

    const save = (sessionId: Ids.SessionId, snapshot: JitHarnessSnapshot.JitHarnessSnapshot) =>
      Effect.flatMap(encode(sessionId, snapshot, maxBytes), (json) => {
        const file = fileOf(sessionId)
        return Effect.tryPromise({ try: () => AtomicFile.write(file, () => json), catch: (cause) => ioError(cause, file) })
      })

    const remove = (sessionId: Ids.SessionId) => {
      const file = fileOf(sessionId)
      return Effect.tryPromise({ try: () => fs.rm(file, { force: true }), catch: (cause) => ioError(cause, file) })
    }

    return { load, save, remove }
  })

/** @since 0.1.0 @category layers */
export const layerFile = (options: FileStoreOptions): Layer.Layer<SnapshotStore, JitHarnessSnapshot.SnapshotError> =>
  Layer.effect(SnapshotStore, makeFile(options))
