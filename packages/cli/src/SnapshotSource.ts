/**
 * Where `jitbox snapshot` reads a snapshot from, always said explicitly: `--file PATH` (or a bare
 * path argument, which is only ever a file), or `--kv SESSION`, a session id in the namespace's
 * JetStream KV snapshot store (`KvSnapshotStore`, bucket `jitbox-snapshots-<namespace>`) on
 * `--server` (or `JITBOX_SERVER`). A path is never read as a session id: with `JITBOX_SERVER` set,
 * `--file ./x.json` still reads the file. None or more than one of them fails `ConfigError` naming
 * the flags. Either way the snapshot is decoded with the snapshot schema before anything else.
 *
 * @since 0.1.0
 */
import { HarnessError, JitHarnessSnapshot } from "@jitbox/core"
import { KvSnapshotStore, NatsConnection } from "@jitbox/nats"
import { Ids, SnapshotStore, type TransportError } from "@jitbox/runtime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs/promises"
import * as Connection from "./Connection.js"

/** A snapshot as read: where from, its JSON's size, and the decoded value. @since 0.1.0 @category models */
export interface Loaded {
  /** `file <path>` or `kv <bucket>/<sessionId>`. */
  readonly source: string
  readonly bytes: number
  readonly snapshot: JitHarnessSnapshot.JitHarnessSnapshot
}

/** A snapshot's source, as the flags named it. @since 0.1.0 @category models */
export type Source =
  | { readonly _tag: "File"; readonly path: string }
  | { readonly _tag: "Kv"; readonly sessionId: string }

/** The flags that may name one snapshot (`--<prefix>file`, `--<prefix>kv`, and a bare path). @since 0.1.0 @category models */
export interface Named {
  readonly file: Option.Option<string>
  readonly kv: Option.Option<string>
  readonly path: Option.Option<string>
}

/**
 * The one source `named` names; none, or more than one, fails `ConfigError` naming the flags
 * (`--file`, `--kv` and `argument` for the bare path, each with `prefix`: `--from-file`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const choose = (named: Named, prefix = "", argument = "FILE"): Effect.Effect<Source, HarnessError.ConfigError> => {
  const given: Array<readonly [string, Source]> = []
  if (Option.isSome(named.file)) given.push([`--${prefix}file`, { _tag: "File", path: named.file.value }])
  if (Option.isSome(named.path)) given.push([argument, { _tag: "File", path: named.path.value }])
  if (Option.isSome(named.kv)) given.push([`--${prefix}kv`, { _tag: "Kv", sessionId: named.kv.value }])
  const flags = `--${prefix}file PATH or --${prefix}kv SESSION`
  if (given.length === 1) return Effect.succeed(given[0]![1])
  return Effect.fail(
    new HarnessError.ConfigError({
      option: `--${prefix}file/--${prefix}kv`,
      detail: given.length === 0
        ? `name the snapshot: ${flags} (a session id in the namespace's KV snapshot store)`
        : `${given.map(([flag]) => flag).join(" and ")} both name a snapshot; give one: ${flags}`
    })
  )
}

/** The largest snapshot file read (the stores' default bound). */
const maxFileBytes = SnapshotStore.defaultMaxBytes

const byteLength = (text: string) => Buffer.byteLength(text, "utf8")

const fileError = (path: string, error: unknown) =>
  new JitHarnessSnapshot.SnapshotError({
    reason: (error as { code?: string }).code === "ENOENT" ? "NotFound" : "Io",
    path,
    detail: error instanceof Error ? error.message : String(error)
  })

/**
 * Reads and decodes the snapshot file `path` (at most the stores' bound).
 *
 * @since 0.1.0
 * @category constructors
 */
export const loadFile = (path: string): Effect.Effect<Loaded, JitHarnessSnapshot.SnapshotError> =>
  Effect.gen(function*() {
    const stat = yield* Effect.tryPromise({ try: () => fs.stat(path), catch: (error) => fileError(path, error) })
    if (stat.size > maxFileBytes) {
      return yield* new JitHarnessSnapshot.SnapshotError({ reason: "Invalid", path, detail: `${stat.size} bytes; a snapshot is at most ${maxFileBytes}` })
    }
    const text = yield* Effect.tryPromise({ try: () => fs.readFile(path, "utf8"), catch: (error) => fileError(path, error) })
    const snapshot = yield* SnapshotStore.decode(text, path)
    return { source: `file ${path}`, bytes: byteLength(text), snapshot }
  })

/**
 * Reads the snapshot of session `name` from the namespace's KV snapshot store on the server.
 *
 * @since 0.1.0
 * @category constructors
 */
export const loadKv = (
  name: string,
  config: Connection.ConnectionConfig
): Effect.Effect<Loaded, JitHarnessSnapshot.SnapshotError | HarnessError.ConfigError | TransportError.TransportError> =>
  Effect.scoped(Effect.gen(function*() {
    const { namespace } = yield* Connection.prefixOf(config)
    const sessionId = yield* Ids.decode(Ids.SessionId, "--kv (a session id)")(name)
    const { nc } = yield* NatsConnection.make(yield* Connection.natsOptions(config, `jitbox-snapshot-${namespace}`))
    const store = yield* KvSnapshotStore.fromConnection(nc, { namespace })
    const found = yield* store.load(sessionId)
    if (Option.isNone(found)) {
      return yield* new JitHarnessSnapshot.SnapshotError({ reason: "NotFound", path: `${store.bucket}/${sessionId}`, detail: "no snapshot stored for this session" })
    }
    return { source: `kv ${store.bucket}/${sessionId}`, bytes: byteLength(JitHarnessSnapshot.toJson(found.value)), snapshot: found.value }
  }))

/**
 * Reads the snapshot `source` names.
 *
 * @since 0.1.0
 * @category constructors
 */
export const load = (
  source: Source,
  config: Connection.ConnectionConfig
): Effect.Effect<Loaded, JitHarnessSnapshot.SnapshotError | HarnessError.ConfigError | TransportError.TransportError> =>
  source._tag === "File" ? loadFile(source.path) : loadKv(source.sessionId, config)
